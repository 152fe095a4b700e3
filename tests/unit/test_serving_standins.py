"""The parts of the Serving tier that need no cluster: how the KIngress stand-in routes and what status it writes,
the DNS stand-in's ExternalName answers, the adapter's Deployment, and which documents of knative/ are applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from devcluster import apiserversource_pod, knative_serving, serving_engine
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

    path, split = choose(table["jobflow-handler.volcano-jobflow.svc.cluster.local"], "/resync", roll=42.0)

    assert split["serviceName"] == "jobflow-handler-00001"
    assert split["appendHeaders"]["Knative-Serving-Revision"] == "jobflow-handler-00001"
    assert "unknown.default.svc.cluster.local" not in table


def test_the_longest_path_prefix_wins_and_the_roll_picks_the_split_by_percentage() -> None:
    old, new = {**SPLIT, "serviceName": "old", "percent": 90}, {**SPLIT, "serviceName": "new", "percent": 10}
    ingress = {**INGRESS, "spec": {"rules": [{"hosts": ["h"], "http": {"paths": [
        {"splits": [SPLIT]}, {"path": "/resync", "splits": [old, new]}]}}]}}
    paths = routes([ingress])["h"]

    assert choose(paths, "/resync", roll=89.9)[1]["serviceName"] == "old"
    assert choose(paths, "/resync", roll=90.0)[1]["serviceName"] == "new"
    assert choose(paths, "/", roll=99.0)[1]["serviceName"] == "jobflow-handler-00001"


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
    assert [r.get("selector") for r in config["resources"]] == [None, None, "volcano.sh/createdByJobFlow", None]
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


def fake_release(tmp_path: Path, *, programs: tuple[str, ...]) -> dict[str, Path]:
    """Module directories laid out as the release's, with one Deployment per program and two ConfigMaps."""
    serving = tmp_path / "serving"
    (serving / "config/core/deployments").mkdir(parents=True)
    (serving / "config/core/configmaps").mkdir(parents=True)
    for program in programs:
        (serving / f"config/core/deployments/{program}.yaml").write_text(
            f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {program}}}\n"
            f"spec: {{template: {{spec: {{containers: [{{image: 'ko://knative.dev/serving/cmd/{program}'}}]}}}}}}\n")
    (serving / "config/core/configmaps/deployment.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-deployment}\n"
        "data: {queue-sidecar-image: 'ko://knative.dev/serving/cmd/queue', _example: keep}\n")
    (serving / "config/core/configmaps/autoscaler.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: config-autoscaler}\ndata: {_example: keep}\n")
    dirs = {"knative.dev/serving": serving}
    for module, names in knative_serving.LINKED_FILES.items():
        dirs[module] = tmp_path / module.split("/")[1]
        for name in names:
            (dirs[module] / name).parent.mkdir(parents=True, exist_ok=True)
            (dirs[module] / name).write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {Path(name).stem}}}\n")
    return dirs


def test_the_release_gets_the_local_images_where_ko_would_write_its_own_and_only_the_named_settings(
        tmp_path: Path) -> None:
    images = {program: f"localhost/{program}:1" for program in ("controller", "activator", "queue")}
    docs = knative_serving.release_documents(fake_release(tmp_path, programs=("controller", "activator")), images)
    by_name = {doc["metadata"]["name"]: doc for doc in docs}

    assert by_name["activator"]["spec"]["template"]["spec"]["containers"][0]["image"] == "localhost/activator:1"
    assert by_name["config-deployment"]["data"]["queue-sidecar-image"] == "localhost/queue:1"
    assert by_name["config-autoscaler"]["data"] == {"_example": "keep", **knative_serving.SETTINGS["config-autoscaler"]}
    assert "config-network" in by_name  # linked in from knative.dev/networking


def test_a_program_the_build_does_not_make_fails_the_install_loudly(tmp_path: Path) -> None:
    dirs = fake_release(tmp_path, programs=("controller", "new-program"))

    with pytest.raises(knative_serving.ServingError, match="new-program"):
        knative_serving.release_documents(dirs, {"controller": "localhost/controller:1", "queue": "q"})
