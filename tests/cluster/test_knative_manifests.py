"""Our manifests on the real API server, with Knative's own CRDs installed (``devcluster/knative.py``).

- Every document of every install passes a server-side dry run with strict field validation: the Knative wirings
  (``knative/``, ``knative/eventsource/``) against the CRD schemas of Knative Serving v0.50.0 and Eventing v0.49.2,
  and the plain ones (``manifests/``, ``manifests/webhook/``) next to them. (``manifests/webhook/cert-manager/`` needs
  cert-manager's CRDs, which this cluster does not have.)
- The dry run has teeth where Knative's schemas are typed: a misspelt field of a Knative Service is refused.
  Where they are open (ApiServerSource and Trigger specs, ...), tests/unit/test_knative_schema.py checks instead.
- The pods Knative makes of our objects (the handler's and the dead-letter display's revisions, the
  ContainerSource's Deployment) are admitted where the "restricted" Pod Security Standard is enforced, and strict
  field validation of them checks the core types inside the parts of Knative's CRDs that are open (a pod template).

The install namespace is not created by a dry run, so what would live in it is tried in the test's namespace.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from devcluster import knative
from devcluster.testing import LocalCluster
from pod_security import enforce_restricted

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
INSTALL_NAMESPACE = "volcano-jobflow"
INSTALLS = ["knative", "knative/eventsource", "manifests", "manifests/webhook"]
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
# What a Knative revision's pod spec has that a Pod does not (serving RevisionSpec).
REVISION_ONLY = ("containerConcurrency", "timeoutSeconds", "responseStartTimeoutSeconds", "idleTimeoutSeconds")


@pytest.fixture(scope="module")
def knative_crds(cluster: LocalCluster) -> list[str]:
    return knative.install(cluster.api)


def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def rendered(cluster: LocalCluster, directory: str, namespace: str) -> list[dict]:
    result = kubectl(cluster, "kustomize", str(REPO / directory))
    assert result.returncode == 0, result.stderr
    docs = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    for doc in docs:
        if doc["metadata"].get("namespace") == INSTALL_NAMESPACE:
            doc["metadata"]["namespace"] = namespace
    return docs


def dry_run_apply(cluster: LocalCluster, docs: list[dict]) -> subprocess.CompletedProcess:
    # --force-conflicts: the JobFlow CRDs exist already (the cluster installed them from manifests/crds).
    return kubectl(cluster, "apply", "--server-side", "--dry-run=server", "--force-conflicts", "--validate=strict",
                   "--field-manager=jobflow-knative-test", "-f", "-", stdin=yaml.safe_dump_all(docs))


@pytest.mark.parametrize("directory", INSTALLS)
def test_every_document_of_every_install_passes_a_strict_server_side_dry_run(
        cluster: LocalCluster, namespace: str, knative_crds: list[str], directory: str) -> None:
    docs = rendered(cluster, directory, namespace)

    result = dry_run_apply(cluster, docs)

    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr
    applied = [line for line in result.stdout.splitlines() if line.endswith("serverside-applied (server dry run)")]
    assert len(applied) == len(docs), result.stdout


def test_the_knative_crds_come_from_the_pinned_modules(cluster: LocalCluster, knative_crds: list[str]) -> None:
    ext = yaml.safe_load(kubectl(cluster, "get", "crd", "services.serving.knative.dev", "triggers.eventing.knative.dev",
                                 "-o", "yaml").stdout)["items"]

    assert [crd["metadata"]["annotations"][knative.SOURCE_ANNOTATION] for crd in ext] == [
        "knative.dev/serving@v0.50.0", "knative.dev/eventing@v0.49.2"]


def test_a_misspelt_field_of_a_knative_service_is_refused(cluster: LocalCluster, namespace: str,
                                                          knative_crds: list[str]) -> None:
    [service] = [d for d in rendered(cluster, "knative", namespace)
                 if d["kind"] == "Service" and d["metadata"]["name"] == "jobflow-handler"]
    spec = service["spec"]["template"]["spec"]
    spec["containerConcurency"] = spec.pop("containerConcurrency")

    result = dry_run_apply(cluster, [service])

    assert result.returncode != 0
    assert ".spec.template.spec.containerConcurency: field not declared in schema" in result.stderr


def pods_knative_makes(docs: list[dict]) -> dict[str, dict]:
    """The pod of each Knative workload among ``docs``, as Knative's controllers make it (user container only)."""
    pods = {}
    for doc in docs:
        name = f"{doc['kind'].lower()}-{doc['metadata']['name']}"
        if doc["kind"] == "Service" and doc["apiVersion"] == "serving.knative.dev/v1":
            spec = {k: v for k, v in doc["spec"]["template"]["spec"].items() if k not in REVISION_ONLY}
            for container in spec["containers"]:
                port = (container.get("ports") or [{"containerPort": 8080}])[0]["containerPort"]
                container["ports"] = [{"name": "user-port", "containerPort": port}]
                container["env"] = [*container.get("env", []), {"name": "PORT", "value": str(port)}]
                for probe in ("readinessProbe", "livenessProbe"):
                    if "httpGet" in container.get(probe, {}):
                        container[probe]["httpGet"].setdefault("port", port)
            pods[name] = {"metadata": {"name": name}, "spec": spec}
        elif doc["kind"] == "ContainerSource":
            template = doc["spec"]["template"]
            pods[name] = {"metadata": {"name": name, **template.get("metadata", {})}, "spec": template["spec"]}
    return pods


def test_the_pods_knative_makes_are_admitted_under_the_restricted_pod_security_standard(
        cluster: LocalCluster, namespace: str) -> None:
    enforce_restricted(cluster, namespace)
    pods = pods_knative_makes(rendered(cluster, "knative", namespace) +
                              rendered(cluster, "knative/eventsource", namespace))
    assert sorted(pods) == ["containersource-jobflow-eventsource", "service-jobflow-dead-letters",
                            "service-jobflow-failures", "service-jobflow-handler"]
    for pod in pods.values():
        result = kubectl(cluster, "create", "--dry-run=server", "--validate=strict", "-n", namespace, "-f", "-",
                         stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", **pod}))
        assert result.returncode == 0, f"{pod['metadata']['name']}: {result.stderr}"
        assert "Warning" not in result.stderr, result.stderr
