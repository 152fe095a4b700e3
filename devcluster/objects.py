"""The objects a fresh control plane needs before tests can run: CRDs, fake nodes, Volcano's webhook registrations.

All of it goes through the real API server with the Python client. Each ``install_*`` is idempotent (an object that
already exists is left alone), and each ``wait_*`` polls with a deadline and says what it waited for when it gives up.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from jobflow_core.vocabulary.api import VCJOB

FAKE_NODE_COUNT = 2


def kube_client(kubeconfig: str | Path) -> client.ApiClient:
    """The ``kubernetes`` package's client for a kubeconfig: the local cluster's own setup and the tests' reads use
    its typed APIs; the engine's programs never load it (they connect with :func:`apiclient.kubeconfig.connect`)."""
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)


class NotReady(RuntimeError):
    """Something did not become ready in time; the message says what."""


def poll(what: str, check: Callable[[], bool], *, timeout: float, interval: float = 0.2,
         on_tick: Callable[[], None] | None = None) -> None:
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if on_tick:
            on_tick()
        try:
            if check():
                return
        except (ApiException, OSError) as error:
            last_error = error
        time.sleep(interval)
    detail = f" (last error: {str(last_error).strip()[:300]})" if last_error else ""
    raise NotReady(f"{what} did not happen within {timeout:.0f} s{detail}")


def _create(call: Callable[..., object], body: dict, **kwargs) -> None:
    try:
        call(body=body, **kwargs)
    except ApiException as error:
        if error.status != 409:
            raise


def crd_documents(paths: Iterable[Path]) -> list[dict]:
    docs = []
    for path in sorted(paths):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                docs.append(doc)
    return docs


def create_crds(api: client.ApiClient, docs: list[dict]) -> list[str]:
    """Create CRDs (create, not client-side apply: two of Volcano's are above apply's 256 KiB annotation limit)."""
    ext = client.ApiextensionsV1Api(api)
    for doc in docs:
        _create(ext.create_custom_resource_definition, doc)
    return [doc["metadata"]["name"] for doc in docs]


def replace_crds(api: client.ApiClient, docs: list[dict]) -> list[str]:
    """Create or update CRDs, so a reused cluster serves the schemas in the working tree."""
    ext = client.ApiextensionsV1Api(api)
    for doc in docs:
        try:
            current = ext.read_custom_resource_definition(doc["metadata"]["name"])
        except ApiException as error:
            if error.status != 404:
                raise
            ext.create_custom_resource_definition(body=doc)
            continue
        body = {**doc, "metadata": {**doc["metadata"], "resourceVersion": current.metadata.resource_version}}
        ext.replace_custom_resource_definition(doc["metadata"]["name"], body)
    return [doc["metadata"]["name"] for doc in docs]


def crds_established(api: client.ApiClient, names: list[str]) -> bool:
    ext = client.ApiextensionsV1Api(api)
    for name in names:
        crd = ext.read_custom_resource_definition(name)
        conditions = {c.type: c.status for c in (crd.status.conditions or [])}
        if conditions.get("Established") != "True":
            return False
    return True


def install_priority_classes(api: client.ApiClient, path: Path) -> list[str]:
    """Create the PriorityClasses of ``path`` (``manifests/priorityclasses.yaml``) that are missing.

    docs/scheduling.md tells an operator to install them; a cluster without them makes every started JobFlow warn
    that they are not (``status.queue.message``, a ``PriorityClassMissing`` event), which is not what the demo or the
    tests should show. An existing one is left as it is (a test may have changed it on purpose)."""
    scheduling = client.SchedulingV1Api(api)
    names = []
    for doc in yaml.safe_load_all(path.read_text()):
        if doc and doc.get("kind") == "PriorityClass":
            _create(scheduling.create_priority_class, doc)
            names.append(doc["metadata"]["name"])
    return names


def install_fake_nodes(api: client.ApiClient, *, count: int = FAKE_NODE_COUNT) -> list[str]:
    core = client.CoreV1Api(api)
    names = []
    for index in range(count):
        name = f"kwok-node-{index}"
        names.append(name)
        _create(core.create_node, {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                           "kubernetes.io/arch": "amd64"},
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            },
            "status": {
                "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"},
                "capacity": {"cpu": "64", "memory": "256Gi", "pods": "250"},
            },
        })
    return names


def nodes_ready(api: client.ApiClient, names: list[str]) -> bool:
    core = client.CoreV1Api(api)
    for name in names:
        node = core.read_node_status(name)
        ready = [c for c in (node.status.conditions or []) if c.type == "Ready"]
        if not ready or ready[0].status != "True":
            return False
    return True


def queue_state(api: client.ApiClient, name: str) -> str | None:
    """``status.state`` of a Volcano queue ("" before the queue controller set it), None when there is no queue."""
    try:
        queue = client.CustomObjectsApi(api).get_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return (queue.get("status") or {}).get("state") or ""


VOLCANO_WEBHOOKS = {
    # name the webhook manager looks up -> (kind, webhook name, path, operations)
    "volcano-admission-service-jobs-mutate": ("Mutating", "mutatejob.volcano.sh", "/jobs/mutate", ["CREATE"]),
    "volcano-admission-service-jobs-validate": (
        "Validating", "validatejob.volcano.sh", "/jobs/validate", ["CREATE", "UPDATE"]),
}


def install_volcano_webhooks(api: client.ApiClient, *, port: int, ca_bundle: bytes) -> None:
    """Register Volcano's vcjob webhooks at a loopback URL (a real install points them at a Service)."""
    admission = client.AdmissionregistrationV1Api(api)
    for config_name, (kind, hook_name, path, operations) in VOLCANO_WEBHOOKS.items():
        webhook = {
            "name": hook_name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": f"https://127.0.0.1:{port}{path}",
                             "caBundle": base64.b64encode(ca_bundle).decode()},
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system"]}]},
            "rules": [{"apiGroups": ["batch.volcano.sh"], "apiVersions": ["v1alpha1"], "operations": operations,
                       "resources": ["jobs"], "scope": "*"}],
            "sideEffects": "NoneOnDryRun",
            "timeoutSeconds": 10,
        }
        body = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": f"{kind}WebhookConfiguration",
                "metadata": {"name": config_name}, "webhooks": [webhook]}
        if kind == "Mutating":
            webhook["reinvocationPolicy"] = "Never"
            _create(admission.create_mutating_webhook_configuration, body)
        else:
            _create(admission.create_validating_webhook_configuration, body)


def probe_vcjob() -> dict:
    """A minimal vcjob that only Volcano's mutating webhook can make valid (no queue, no minAvailable)."""
    return {
        "apiVersion": VCJOB.api_version,
        "kind": VCJOB.kind,
        "metadata": {"name": "devcluster-webhook-probe", "namespace": "default"},
        "spec": {"tasks": [{"replicas": 1, "template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}]},
    }


def volcano_webhook_answers(api: client.ApiClient) -> bool:
    """True when a server-side dry-run create of a vcjob comes back mutated by Volcano's webhook."""
    created = client.CustomObjectsApi(api).create_namespaced_custom_object(
        VCJOB.group, VCJOB.version, "default", VCJOB.plural, probe_vcjob(), dry_run="All")
    spec = created.get("spec", {})
    return spec.get("queue") == "default" and spec.get("schedulerName") == "volcano"
