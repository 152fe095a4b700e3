"""The Helm chart installed for real, on the install tier's cluster whose node runs the image built from this tree.

``helm install`` (Helm v3.22, built from its Go module) with the default values but for the pull policy: the pods
run the image, the webhook answers with the certificate the chart made, and the seed diamond reaches Succeed run by
the installed pods alone. ``helm upgrade`` keeps that certificate (the Secret and every ``caBundle`` unchanged) and
the webhook answering. ``helm uninstall`` takes every object of the release away but the CRDs (and so the JobFlows),
and leaves nothing that holds a namespace: one deleted after it goes.

The install tier's other tests install ``manifests/`` into the same namespace, so the fixture first takes that
install away, and hands the CRDs that devcluster applied to the release the documented way (docs/helm.md, "From
the manifests to the chart").
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml
from kubernetes import client

from devcluster.helm import CHART
from devcluster.testing import LocalCluster
from installation import (CLUSTER_OBJECTS, CRDS, DEPLOYMENTS, NAMESPACE, RELEASE, REPO, chart_helm, install_release,
                          kubectl, run_the_seed_diamond, wait_rolled_out, webhook_refuses)
from objects import flow_phase, jobflow

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def released(pods_cluster: LocalCluster) -> Iterator[LocalCluster]:
    install_release(pods_cluster)
    yield pods_cluster
    chart_helm(pods_cluster, "uninstall", RELEASE, "--ignore-not-found", "--wait")


def tls(cluster: LocalCluster) -> tuple[dict[str, str], set[str]]:
    secret = cluster.core.read_namespaced_secret("jobflow-admission-tls", NAMESPACE)
    registration = client.AdmissionregistrationV1Api(cluster.api).read_validating_webhook_configuration(
        "jobflow-admission")
    return secret.data, {hook.client_config.ca_bundle for hook in registration.webhooks}  # base64, as the Secret


def test_the_release_runs_every_deployment_of_the_chart(released: LocalCluster) -> None:
    status = yaml.safe_load(chart_helm(released, "status", RELEASE, "--output", "yaml"))

    assert status["info"]["status"] == "deployed"
    apps = client.AppsV1Api(released.api)
    for name in DEPLOYMENTS:
        found = apps.read_namespaced_deployment(name, NAMESPACE)
        assert found.metadata.labels["app.kubernetes.io/managed-by"] == "Helm"
        assert found.status.ready_replicas == found.spec.replicas


def test_the_seed_diamond_reaches_succeed_run_by_the_released_pods(released: LocalCluster,
                                                                     pods_namespace: str) -> None:
    run_the_seed_diamond(released, pods_namespace)


def test_an_upgrade_keeps_the_webhook_certificate_and_the_webhook_answering(released: LocalCluster) -> None:
    before = tls(released)
    assert before[1] == {before[0]["ca.crt"]}

    chart_helm(released, "upgrade", RELEASE, str(CHART), "--reuse-values", "--set", "handler.replicas=1", "--wait",
               "--timeout", "5m")
    wait_rolled_out(released)

    assert tls(released) == before
    assert client.AppsV1Api(released.api).read_namespaced_deployment("jobflow-handler", NAMESPACE).spec.replicas == 1
    assert webhook_refuses(released)


def test_uninstall_keeps_the_crds_and_the_jobflows_and_holds_no_namespace(released: LocalCluster) -> None:
    namespace = released.create_namespace()
    kubectl(released, "apply", "-n", namespace, "-f", str(REPO / "examples" / "diamond"))
    released.wait_until("the diamond to start", lambda: flow_phase(released, namespace, "test") in {
        "Running", "Succeed"}, timeout=60)

    chart_helm(released, "uninstall", RELEASE, "--wait")

    assert not client.AppsV1Api(released.api).list_namespaced_deployment(NAMESPACE).items
    for kind, name in CLUSTER_OBJECTS[:3] + CLUSTER_OBJECTS[-1:]:
        assert kubectl(released, "get", kind, name, "--ignore-not-found", "-o", "name") == "", (kind, name)
    assert kubectl(released, "get", "validatingwebhookconfiguration", "jobflow-admission", "--ignore-not-found") == ""
    for crd in CRDS:
        assert kubectl(released, "get", "crd", crd, "-o", "name").strip().endswith(f"/{crd}")
    assert jobflow(released, namespace, "test") is not None

    released.delete_namespace(namespace)
    released.wait_until(f"namespace {namespace} to go", lambda: namespace not in {
        ns.metadata.name for ns in released.core.list_namespace().items}, timeout=90, interval=1)
