"""The real ApiServerSource adapter as a pod on the pod node, sending to a Knative Service's address.

On a cluster with Knative Eventing, the eventing controller turns an ApiServerSource into a Deployment running the
release's receive adapter (``MakeReceiveAdapter`` in ``pkg/reconciler/apiserversource/resources``): the source's
ServiceAccount, ``K_SINK`` resolved from its sink (for a Knative Service, the ksvc's ``status.address.url``),
``K_SOURCE_CONFIG`` from its resources and namespace selector, the logging and observability settings as JSON. The
Serving tier runs no eventing controller, so :func:`deployment` writes that Deployment from
``knative/apiserversource.yaml``'s source with the sink replaced by the ksvc, and the pod node's kubelet runs it like
any other: the adapter dials the ksvc's cluster name through the cluster's DNS and kube-proxy, as in a real cluster.

What differs from the controller's Deployment: the program is the Eventing build's adapter
(``gomod/knative-eventing/apiserver-adapter``: the released adapter package, with its health-probe server off), so
the Deployment has no probes; and it is created once, not reconciled. The ServiceAccount and its ClusterRole are the
ones ``knative/apiserversource.yaml`` ships, so the adapter has exactly the rights the user's would.

The adapter's metrics (``K_OBSERVABILITY_CONFIG``: Prometheus on its pod's port 9092) count the events it sent by
the answer it got, which is how the tests count on the sender's side.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from kubernetes import client

from devcluster import knative_eventing
from devcluster.knative_serving import ko_image

REPO = Path(__file__).resolve().parent.parent
APISERVERSOURCE = REPO / "knative" / "apiserversource.yaml"
IMAGE = "localhost/knative-eventing/apiserver-receive-adapter"
METRICS_PORT = 9092


def image(*, log=print) -> str:
    """The adapter's image in podman's storage (built and packed when missing)."""
    binary = knative_eventing.adapter_binary(log=log)
    return ko_image(binary, program="apiserver-receive-adapter", name=f"{IMAGE}:{binary.parent.name}", log=log)


def rbac_documents(path: Path = APISERVERSOURCE) -> list[dict]:
    """The source's ServiceAccount, ClusterRole and binding, as ``knative/apiserversource.yaml`` ships them."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc["kind"] != "ApiServerSource"]


def deployment(*, sink: str, image_name: str, source: dict | None = None) -> dict:
    """The adapter's Deployment for ``source`` (default: ``knative/apiserversource.yaml``'s), sending to ``sink``."""
    source = source or knative_eventing.the_apiserversource()
    config = json.loads(knative_eventing.source_config(source, namespaces=[]))
    config["allNamespaces"] = source["spec"].get("namespaceSelector") == {}
    name = f"apiserversource-{source['metadata']['name']}"
    labels = {"eventing.knative.dev/source": "apiserver-source-controller",
              "eventing.knative.dev/sourceName": source["metadata"]["name"]}
    observability = {"metrics": {"protocol": "prometheus"}}
    env = [{"name": "K_SINK", "value": sink}, {"name": "K_SOURCE_CONFIG", "value": json.dumps(config)},
           {"name": "SYSTEM_NAMESPACE", "value": "knative-eventing"},
           {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
           {"name": "NAME", "value": source["metadata"]["name"]},
           {"name": "METRICS_DOMAIN", "value": "knative.dev/eventing"},
           {"name": "METRICS_PROMETHEUS_PORT", "value": str(METRICS_PORT)},
           {"name": "K_LOGGING_CONFIG", "value": "{}"},
           {"name": "K_OBSERVABILITY_CONFIG", "value": json.dumps(observability)}]
    security = {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "runAsNonRoot": True,
                "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": source["metadata"]["namespace"], "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"serviceAccountName": source["spec"]["serviceAccountName"], "enableServiceLinks": False,
                     "containers": [{"name": "receive-adapter", "image": image_name, "env": env,
                                     "ports": [{"name": "metrics", "containerPort": METRICS_PORT}],
                                     "securityContext": security}]}}},
    }


def ksvc_address(api: client.ApiClient, namespace: str, name: str) -> str | None:
    """A Knative Service's ``status.address.url`` (what the eventing controller resolves a sink ref to)."""
    ksvc = client.CustomObjectsApi(api).get_namespaced_custom_object("serving.knative.dev", "v1", namespace,
                                                                     "services", name)
    return ((ksvc.get("status") or {}).get("address") or {}).get("url")
