"""Knative Eventing's own programs as local processes against the local control plane.

So far the ApiServerSource receive adapter: the released ``knative.dev/eventing`` adapter package (the release
``gomod/knative-eventing`` pins, as ``gomod/knative`` does for the CRDs) behind a main of ours that leaves out its
health-probe server (upstream binds :8080 on all interfaces, hard-coded; see the main's comment). Built like the
other binaries, into the shared cache, the first time a test asks for it (about 5 minutes cold).

A Knative controller would run the adapter as a Deployment whose environment it derives from the ApiServerSource
object; no kubelet runs here, so :func:`start_apiserver_adapter` derives the same environment from the same object
(``knative/apiserversource.yaml``) and runs the adapter as a process: ``K_SOURCE_CONFIG`` (the resources as
group/version/resource with their label selectors in string form, the namespaces, the mode), ``K_SINK``, ``NAME``
and ``NAMESPACE`` of the source, and the system settings its framework reads. Logs go to the cluster's log
directory; the process is stopped by PID like every other component.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from devcluster import processes
from devcluster.build import build_module, go_version
from devcluster.components import KNATIVE_EVENTING
from devcluster.state import ClusterState
from jobflow_core.api import api_type_of

REPO = Path(__file__).resolve().parents[1]
APISERVERSOURCE = REPO / "knative" / "apiserversource.yaml"


def adapter_binary(*, log=print) -> Path:
    return build_module(KNATIVE_EVENTING, go_version(), log=log).path("apiserver-receive-adapter")


def the_apiserversource(path: Path = APISERVERSOURCE) -> dict:
    """The ApiServerSource object of a manifest file."""
    [source] = [doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc["kind"] == "ApiServerSource"]
    return source


def label_selector(selector: dict | None) -> str:
    """A ``metav1.LabelSelector`` in its string form, as the controller passes it to the adapter."""
    if not selector:
        return ""
    parts = [f"{key}={value}" for key, value in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        parts.append({"Exists": key, "DoesNotExist": f"!{key}",
                      "In": f"{key} in ({','.join(values)})",
                      "NotIn": f"{key} notin ({','.join(values)})"}[operator])
    return ",".join(parts)


def source_config(source: dict, *, namespaces: list[str]) -> str:
    """``K_SOURCE_CONFIG`` for ``source``, watching ``namespaces`` (what its namespaceSelector matches)."""
    resources = []
    for resource in source["spec"]["resources"]:
        api_type = api_type_of(resource["apiVersion"], resource["kind"])
        if api_type is None:
            raise ValueError(f"the ApiServerSource watches {resource['kind']} ({resource['apiVersion']}), which "
                             "is none of the JobFlow engine's types")
        entry: dict = {"gvr": {"Group": api_type.group, "Version": api_type.version, "Resource": api_type.plural}}
        selector = label_selector(resource.get("selector"))
        if selector:
            entry["selector"] = selector
        resources.append(entry)
    return json.dumps({"namespaces": namespaces, "allNamespaces": False, "resources": resources,
                       "mode": source["spec"].get("mode", "Reference")})


def start_apiserver_adapter(state: ClusterState, *, sink: str, namespaces: list[str],
                            source: dict | None = None) -> processes.Component:
    """The real adapter for ``source`` (default: ``knative/apiserversource.yaml``'s), sending to ``sink``."""
    source = source or the_apiserversource()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "KUBECONFIG": str(state.kubeconfig),
        "K_SINK": sink,
        "K_SOURCE_CONFIG": source_config(source, namespaces=namespaces),
        "NAME": source["metadata"]["name"],
        "NAMESPACE": source["metadata"].get("namespace", "default"),
        "SYSTEM_NAMESPACE": "knative-eventing",
        "METRICS_DOMAIN": "knative.dev/eventing",
        "PROFILING_PORT": str(processes.free_port()),
        "K_LOGGING_CONFIG": "{}",
        "K_OBSERVABILITY_CONFIG": "{}",
    }
    return processes.start("apiserver-receive-adapter", adapter_binary(), [], log_dir=state.log_dir, env=env)
