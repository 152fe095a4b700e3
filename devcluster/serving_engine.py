"""The engine on Knative Serving, as ``knative/`` deploys it: the handler a Knative Service, fed by the real
ApiServerSource adapter, on a cluster with the pod node.

:func:`deploy` does what a user with Knative Serving does, minus Eventing (which this tier does not run; see
``devcluster/apiserversource_pod.py`` for the adapter's Deployment):

1. the image ``make image`` built from this tree onto the node (there is no registry to pull it from);
2. ``kubectl kustomize knative/base``, applied unchanged but for the objects of Knative Eventing's types (Broker,
   Triggers, SinkBinding) and the dead-letter ksvc, whose image is Knative's ``event_display`` from a registry
   this machine cannot reach: the plain install's namespace, CRDs and ClusterRoles, and ``knative/base/handler.yaml``
   (ksvc ``jobflow-handler`` with its ServiceAccount and binding);
3. the ksvc Ready (the real controller, webhook, autoscaler and activator made it so; its first pod came and went);
4. the ApiServerSource adapter as a pod, its sink the ksvc's ``status.address.url``.

:func:`at_zero` is what "scaled to zero" means here: the revision's PodAutoscaler wants and has 0 pods, and no pod of
the ksvc exists any more, not even one still draining.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from devcluster import apiserversource_pod, objects
from devcluster.knative_eventing import apply

REPO = Path(__file__).resolve().parent.parent
NAMESPACE = "volcano-jobflow"
KSVC = "jobflow-handler"
KUBECTL = Path(sys.executable).parent / "kubectl"
SERVING = ("serving.knative.dev", "v1")


def handler_documents() -> list[dict]:
    """``knative/base`` rendered, without Eventing's objects and the dead-letter ksvc (module docstring)."""
    rendered = subprocess.run([str(KUBECTL), "kustomize", str(REPO / "knative" / "base")], capture_output=True,
                              text=True, check=True).stdout
    docs = [doc for doc in yaml.safe_load_all(rendered) if doc]
    return [doc for doc in docs if not doc["apiVersion"].startswith(("eventing.knative.dev/", "sources.knative.dev/"))
            and not (doc["kind"] == "Service" and doc["apiVersion"].startswith("serving.knative.dev/")
                     and doc["metadata"]["name"] != KSVC)]


def ksvc(api: client.ApiClient) -> dict | None:
    try:
        return client.CustomObjectsApi(api).get_namespaced_custom_object(*SERVING, NAMESPACE, "services", KSVC)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def ksvc_ready(api: client.ApiClient) -> bool:
    found = ksvc(api) or {}
    status = found.get("status") or {}
    return status.get("observedGeneration") == found.get("metadata", {}).get("generation") and any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])


def handler_pods(api: client.ApiClient) -> list[client.V1Pod]:
    """Every pod of the ksvc, of any revision, draining ones included."""
    return client.CoreV1Api(api).list_namespaced_pod(
        NAMESPACE, label_selector=f"serving.knative.dev/service={KSVC}").items


def autoscalers(api: client.ApiClient) -> list[dict]:
    return client.CustomObjectsApi(api).list_namespaced_custom_object(
        "autoscaling.internal.knative.dev", "v1alpha1", NAMESPACE, "podautoscalers",
        label_selector=f"serving.knative.dev/service={KSVC}")["items"]


def at_zero(api: client.ApiClient) -> bool:
    """Scaled to zero (module docstring)."""
    scales = [((pa.get("status") or {}).get("desiredScale"), (pa.get("status") or {}).get("actualScale"))
              for pa in autoscalers(api)]
    return bool(scales) and all(scale == (0, 0) for scale in scales) and not handler_pods(api)


def deploy(api: client.ApiClient, *, load_image, log=print, timeout: float = 120) -> None:
    """Steps 2-4 of the module docstring (the caller did the first); ``load_image(name)`` puts an image of podman's
    storage on the node."""
    adapter_image = apiserversource_pod.image(log=log)
    load_image(adapter_image)
    dynamic = DynamicClient(api)
    for doc in handler_documents():
        apply(dynamic, doc)
    objects.poll(f"ksvc {KSVC} Ready", lambda: ksvc_ready(api), timeout=timeout)
    sink = apiserversource_pod.ksvc_address(api, NAMESPACE, KSVC)  # Ready means it has one
    for doc in apiserversource_pod.rbac_documents():
        apply(dynamic, doc)
    apply(dynamic, apiserversource_pod.deployment(sink=sink, image_name=adapter_image))
    objects.poll("the ApiServerSource adapter's pod running", lambda: adapter_pod(api) is not None, timeout=60)
    log(f"serving: ksvc {KSVC} Ready at {sink}, the ApiServerSource adapter sending to it")


def adapter_pod(api: client.ApiClient) -> client.V1Pod | None:
    """The adapter's running, ready pod."""
    for pod in client.CoreV1Api(api).list_namespaced_pod(
            NAMESPACE, label_selector="eventing.knative.dev/sourceName=jobflow-objects").items:
        if pod.metadata.deletion_timestamp is None and any(
                c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []):
            return pod
    return None
