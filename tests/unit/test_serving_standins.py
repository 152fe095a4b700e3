"""The parts of the Serving tier that need no cluster: how the KIngress stand-in routes and what status it writes,
the DNS stand-in's ExternalName answers, the adapter's Deployment, and which documents of knative/ are applied."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from devcluster import apiserversource_pod, serving_engine
from devcluster.node.dns import service_addresses
from devcluster.node.kingress import DOMAIN_INTERNAL, choose, is_ready, ready_status, routes

REPO = Path(__file__).resolve().parents[2]
SPLIT = {"serviceName": "jobflow-handler-00001", "serviceNamespace": "volcano-jobflow", "servicePort": 80,
         "percent": 100, "appendHeaders": {"Knative-Serving-Revision": "jobflow-handler-00001",
                                           "Knative-Serving-Namespace": "volcano-jobflow"}}
INGRESS = {"metadata": {"name": "jobflow-handler", "namespace": "volcano-jobflow", "generation": 2},
           "spec": {"rules": [{"hosts": ["jobflow-handler.volcano-jobflow",
                                         "Jobflow-Handler.volcano-jobflow.svc.cluster.local"],
                               "visibility": "ClusterLocal", "http": {"paths": [{"splits": [SPLIT]}]}}]}}


def test_a_request_for_a_host_of_the_rule_goes_to_its_split_with_the_headers_the_activator_reads() -> None:
    table = routes([INGRESS])

    path, split = choose(table["jobflow-handler.volcano-jobflow.svc.cluster.local"], "/resync", 42.0)

    assert split["serviceName"] == "jobflow-handler-00001"
    assert split["appendHeaders"]["Knative-Serving-Revision"] == "jobflow-handler-00001"
    assert "unknown.default.svc.cluster.local" not in table


def test_the_longest_path_prefix_wins_and_the_roll_picks_the_split_by_percentage() -> None:
    old, new = {**SPLIT, "serviceName": "old", "percent": 90}, {**SPLIT, "serviceName": "new", "percent": 10}
    ingress = {**INGRESS, "spec": {"rules": [{"hosts": ["h"], "http": {"paths": [
        {"splits": [SPLIT]}, {"path": "/resync", "splits": [old, new]}]}}]}}
    paths = routes([ingress])["h"]

    assert choose(paths, "/resync", 89.9)[1]["serviceName"] == "old"
    assert choose(paths, "/resync", 90.0)[1]["serviceName"] == "new"
    assert choose(paths, "/", 99.0)[1]["serviceName"] == "jobflow-handler-00001"


def test_the_status_says_ready_for_this_generation_with_the_stand_ins_service_as_load_balancer() -> None:
    status = ready_status(INGRESS, now="2026-11-25T00:00:00Z")

    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "LoadBalancerReady": "True", "NetworkConfigured": "True", "Ready": "True"}
    assert status["privateLoadBalancer"] == {"ingress": [{"domainInternal": DOMAIN_INTERNAL}]}
    assert is_ready({**INGRESS, "status": status})
    assert not is_ready({**INGRESS, "metadata": {**INGRESS["metadata"], "generation": 3}, "status": status})


def test_dns_answers_an_external_name_of_a_cluster_service_with_that_services_cluster_ip() -> None:
    services = [
        {"metadata": {"name": "kingress-standin", "namespace": "knative-serving"},
         "spec": {"type": "ClusterIP", "clusterIP": "10.96.1.129"}},
        {"metadata": {"name": "jobflow-handler", "namespace": "volcano-jobflow"},
         "spec": {"type": "ExternalName", "externalName": DOMAIN_INTERNAL}},
        {"metadata": {"name": "outside", "namespace": "default"},
         "spec": {"type": "ExternalName", "externalName": "example.com"}},
        {"metadata": {"name": "headless", "namespace": "default"}, "spec": {"clusterIP": "None"}},
    ]

    assert service_addresses(services) == {
        "kingress-standin.knative-serving.svc.cluster.local": "10.96.1.129",
        "jobflow-handler.volcano-jobflow.svc.cluster.local": "10.96.1.129"}


def test_the_adapters_deployment_is_the_controllers_for_the_source_of_knative_with_the_ksvc_as_sink() -> None:
    deployment = apiserversource_pod.deployment(sink="http://jobflow-handler.volcano-jobflow.svc.cluster.local",
                                                image_name="localhost/adapter:1")
    pod = deployment["spec"]["template"]["spec"]
    env = {item["name"]: item.get("value") for item in pod["containers"][0]["env"]}
    config = json.loads(env["K_SOURCE_CONFIG"])

    assert pod["serviceAccountName"] == "jobflow-apiserversource"
    assert env["K_SINK"] == "http://jobflow-handler.volcano-jobflow.svc.cluster.local"
    assert env["NAME"] == "jobflow-objects" and config["allNamespaces"] is True and config["mode"] == "Reference"
    assert [r.get("selector") for r in config["resources"]] == [None, None, "volcano.sh/createdByJobFlow"]
    assert pod["containers"][0]["securityContext"]["runAsNonRoot"] is True
    assert [doc["kind"] for doc in apiserversource_pod.rbac_documents()] == [
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding"]


def test_the_handlers_ksvc_is_applied_exactly_as_knative_base_ships_it_and_nothing_of_eventing() -> None:
    docs = serving_engine.handler_documents()
    [ksvc] = [doc for doc in docs if doc["apiVersion"] == "serving.knative.dev/v1"]
    [shipped] = [doc for doc in yaml.safe_load_all((REPO / "knative/base/handler.yaml").read_text())
                 if doc["kind"] == "Service"]

    assert ksvc["spec"] == shipped["spec"]
    assert ksvc["metadata"]["name"] == "jobflow-handler"
    assert not [doc for doc in docs if doc["apiVersion"].split("/")[0] in (
        "eventing.knative.dev", "sources.knative.dev")]
