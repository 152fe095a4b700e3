"""Knative Eventing's own programs as local processes against the local control plane.

The programs are the released ``knative.dev/eventing`` packages (the release ``gomod/knative-eventing`` pins, as
``gomod/knative`` does for the CRDs), built like the other binaries into the shared cache the first time a test
asks for them (about 6 minutes cold); see ``devcluster/components.py`` for how their hard-coded :8080 is avoided.

Two ways to run them:

- :func:`start_apiserver_adapter`: the ApiServerSource adapter alone, configured from ``knative/apiserversource.yaml``
  (below), for the direct path adapter -> handler.
- :func:`start_eventing`: Knative Eventing as a user installs it: the release's ConfigMaps, Deployments and Services
  of the eventing controller, the mt-broker controller and its ingress and filter, the in-memory channel controller
  and dispatcher, and the PingSource adapter, applied from the module; a local kubelet plays every Deployment whose
  image it has built (``devcluster/knative_standins.py``), and the controllers create the rest (the ApiServerSource's
  adapter Deployment, the channel, its subscriptions) from the objects of ``knative/``, applied unchanged.

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
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from devcluster import knative, objects, processes
from devcluster.build import build_module, go_version
from devcluster.cluster import api_client
from devcluster.components import KNATIVE_EVENTING
from devcluster.knative_standins import (ClusterDNS, LocalKubelet, Receiver, broker_defaults, serve_ksvc, wait,
                                         with_webhook_defaults)
from devcluster.state import ClusterState
from jobflow_core.vocabulary.api import api_type_of

REPO = Path(__file__).resolve().parents[1]
APISERVERSOURCE = REPO / "knative" / "apiserversource.yaml"


SYSTEM_NAMESPACE = "knative-eventing"
# What of the release's config/ is applied, relative to the eventing module: ConfigMaps, then the Deployments (and
# their Services) of every program that runs here. The webhooks and their certificates are left out (see below).
RELEASE_FILES = (
    "config/core/configmaps/*.yaml",
    "config/channels/in-memory-channel/configmaps/*.yaml",
    "config/core/deployments/controller.yaml",
    "config/core/deployments/pingsource-mt-adapter.yaml",
    "config/brokers/mt-channel-broker/deployments/controller.yaml",
    "config/brokers/mt-channel-broker/deployments/broker-ingress.yaml",
    "config/brokers/mt-channel-broker/deployments/broker-filter.yaml",
    "config/channels/in-memory-channel/deployments/controller.yaml",
    "config/channels/in-memory-channel/deployments/dispatcher.yaml",
    "config/channels/in-memory-channel/deployments/dispatcher-service.yaml",
)
IMC_CRD = "config/channels/in-memory-channel/resources/in-memory-channel.yaml"
# The release's image -> the binary that plays it, and the variables that carry each binary's listening ports (the
# first one is published in the Endpoints of the named Service).
IMAGES = {
    "ko://knative.dev/eventing/cmd/controller": "eventing-controller",
    "ko://knative.dev/eventing/cmd/mtchannel_broker": "mt-broker-controller",
    "ko://knative.dev/eventing/cmd/in_memory/channel_controller": "imc-controller",
    "ko://knative.dev/eventing/cmd/in_memory/channel_dispatcher": "imc-dispatcher",
    "ko://knative.dev/eventing/cmd/broker/ingress": "broker-ingress",
    "ko://knative.dev/eventing/cmd/broker/filter": "broker-filter",
    "ko://knative.dev/eventing/cmd/mtping": "ping-adapter",
    "ko://knative.dev/eventing/cmd/apiserver_receive_adapter": "apiserver-receive-adapter",
}
LISTEN = {
    "imc-dispatcher": ("IMC_DISPATCHER_PORT", "IMC_DISPATCHER_PORT_HTTPS", "METRICS_PORT"),
    "broker-ingress": ("INGRESS_PORT", "INGRESS_PORT_HTTPS", "METRICS_PORT"),
    "broker-filter": ("FILTER_PORT", "FILTER_PORT_HTTPS", "METRICS_PORT"),
    "imc-controller": ("WEBHOOK_PORT", "METRICS_PORT"),
}
PUBLISH = {"imc-dispatcher": "imc-dispatcher", "broker-ingress": "broker-ingress", "broker-filter": "broker-filter"}


def binaries(*, log=print) -> Path:
    """The directory of the built Knative programs."""
    return build_module(KNATIVE_EVENTING, go_version(), log=log).bin_dir


def adapter_binary(*, log=print) -> Path:
    return binaries(log=log) / "apiserver-receive-adapter"


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


def release_documents(module_dir: Path) -> list[dict]:
    docs = []
    for pattern in RELEASE_FILES:
        for path in sorted(module_dir.glob(pattern)):
            docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc and doc.get("kind") in (
                "ConfigMap", "Deployment", "Service")]
    return docs


def install_release(api: client.ApiClient) -> None:
    """Knative's CRDs (with the in-memory channel's), the system namespace, and the release objects above."""
    knative.install(api)
    module_dir = knative.download()["knative.dev/eventing"][1]
    crds = [doc for doc in yaml.safe_load_all((module_dir / IMC_CRD).read_text()) if doc]
    objects.create_crds(api, crds)
    core = client.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": SYSTEM_NAMESPACE}})
    except ApiException as error:
        if error.status != 409:
            raise
    dynamic = DynamicClient(api)
    for doc in release_documents(module_dir):
        create_or_keep(dynamic, doc)


def create_or_keep(dynamic: DynamicClient, doc: dict) -> None:
    """Create ``doc`` unless it exists (a second start keeps what the controllers changed since)."""
    resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
    try:
        resource.create(body=doc, namespace=doc["metadata"].get("namespace"))
    except ApiException as error:
        if error.status != 409:
            raise


def apply(dynamic: DynamicClient, doc: dict) -> None:
    """Server-side apply of ``doc`` (create or update), as ``kubectl apply --server-side`` does."""
    resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
    resource.server_side_apply(body=doc, namespace=doc["metadata"].get("namespace"), field_manager="devcluster",
                               force_conflicts=True)


@dataclass
class Eventing:
    """Knative Eventing running locally: the cluster DNS stand-in and the local kubelet playing the release."""

    api: client.ApiClient
    dns: ClusterDNS
    kubelet: LocalKubelet

    def apply(self, docs: list[dict]) -> None:
        """Apply ``docs`` as the API server would admit them with Knative's defaulting webhook in place."""
        defaults, dynamic = broker_defaults(self.api), DynamicClient(self.api)
        for doc in docs:
            apply(dynamic, with_webhook_defaults(doc, defaults))

    def serve(self, namespace: str, ksvc: str, port: int) -> str:
        """ksvc ``namespace/ksvc`` is the local process on ``port`` (Knative Serving's stand-in)."""
        return serve_ksvc(self.api, namespace, ksvc, port)

    def ready(self, kind: str, namespace: str, name: str, *, timeout: float = 120) -> dict:
        """The Knative object once its Ready condition is True; a TimeoutError quoting its conditions if not."""
        group, plural = READY_KINDS[kind]
        custom = client.CustomObjectsApi(self.api)
        last: list = []

        def probe():
            nonlocal last
            obj = custom.get_namespaced_custom_object(group, "v1", namespace, plural, name)
            last = (obj.get("status") or {}).get("conditions") or []
            return obj if any(c["type"] == "Ready" and c["status"] == "True" for c in last) else None

        try:
            return wait(f"{kind} {namespace}/{name} Ready", probe, timeout=timeout)
        except TimeoutError as error:
            raise TimeoutError(f"{error}; its conditions: {last}") from None

    def stop(self) -> None:
        self.kubelet.stop()
        self.dns.stop()


# What ``knative/`` a user applies for the Broker path, and what must be Ready before events flow.
MANIFESTS = ("base/broker.yaml", "base/dead-letters.yaml", "base/handler.yaml", "apiserversource.yaml",
             "pingsource.yaml")
HANDLER_NAMESPACE = "volcano-jobflow"
WIRING = (("Broker", "jobflow"), ("Trigger", "jobflow-jobflows"), ("Trigger", "jobflow-jobtemplates"),
          ("Trigger", "jobflow-jobflowtemplates"), ("Trigger", "jobflow-run-triggers"),
          ("Trigger", "jobflow-vcjobs"), ("Trigger", "jobflow-resync"), ("ApiServerSource", "jobflow-objects"),
          ("PingSource", "jobflow-resync"))


def knative_documents() -> list[dict]:
    docs = []
    for name in MANIFESTS:
        docs += [doc for doc in yaml.safe_load_all((REPO / "knative" / name).read_text()) if doc]
    return docs


def wire(eventing: Eventing, *, handler_port: int, dead_letters_port: int, timeout: float = 120) -> None:
    """Apply ``knative/`` unchanged, put the handler and the dead-letter sink behind their ksvcs, and wait until
    the controllers report the Broker, the Triggers and both sources Ready."""
    try:
        client.CoreV1Api(eventing.api).create_namespace({"metadata": {"name": HANDLER_NAMESPACE}})
    except ApiException as error:
        if error.status != 409:
            raise
    eventing.apply(knative_documents())
    eventing.serve(HANDLER_NAMESPACE, "jobflow-handler", handler_port)
    eventing.serve(HANDLER_NAMESPACE, "jobflow-dead-letters", dead_letters_port)
    for kind, name in WIRING:
        eventing.ready(kind, HANDLER_NAMESPACE, name, timeout=timeout)


READY_KINDS = {"Broker": ("eventing.knative.dev", "brokers"), "Trigger": ("eventing.knative.dev", "triggers"),
               "ApiServerSource": ("sources.knative.dev", "apiserversources"),
               "PingSource": ("sources.knative.dev", "pingsources")}


def start_eventing(state: ClusterState, api: client.ApiClient, *, log=print) -> Eventing:
    """Install the release and play it (see the module docstring); ``Eventing.stop`` stops every process."""
    bin_dir = binaries(log=log)
    install_release(api)
    dns = ClusterDNS(client.CoreV1Api(api)).start()
    kubelet = LocalKubelet(
        api, images={image: bin_dir / name for image, name in IMAGES.items()}, log_dir=state.log_dir,
        base_env={"PATH": os.environ.get("PATH", ""), "KUBECONFIG": str(state.kubeconfig), "HTTP_PROXY": dns.url},
        listen=LISTEN, publish=PUBLISH).start()
    return Eventing(api, dns, kubelet)


def run_until_stopped(root: Path, *, handler_port: int, log=lambda line: print(line, flush=True)) -> int:
    """``python -m devcluster knative-run``: Knative Eventing wired to the handler on ``handler_port`` until
    SIGTERM (``make cluster-down``), which stops every process it started. Dead letters are printed to its log."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    state = ClusterState.load(root)
    if state is None:
        log("devcluster: no cluster recorded; start one with `make cluster`")
        return 1
    api = api_client(state)
    eventing = start_eventing(state, api, log=log)
    letters = Receiver(name="dead letter")
    try:
        wire(eventing, handler_port=handler_port, dead_letters_port=letters.port)
        log(f"{READY_LINE}: ApiServerSource and PingSource -> Broker jobflow -> Triggers -> "
            f"http://127.0.0.1:{handler_port}/")
        while True:
            time.sleep(3600)
    finally:
        eventing.stop()
        letters.stop()


READY_LINE = "knative eventing: wired"


def start_in_background(state: ClusterState, *, handler_port: int, log=print) -> processes.Component:
    """``make knative``: :func:`run_until_stopped` as a recorded process, once its wiring is Ready."""
    component = processes.start("knative-eventing", Path(sys.executable),
                                ["-m", "devcluster", "knative-run", f"--handler-port={handler_port}"],
                                log_dir=state.log_dir, cwd=REPO)
    state.components.append(component)
    state.save()
    started = time.monotonic()
    log("devcluster: starting Knative Eventing (the first run builds its programs: about 6 minutes)...")
    while READY_LINE not in Path(component.log).read_text(errors="replace"):
        if not component.alive():
            raise RuntimeError(f"Knative Eventing did not start; its log ({component.log}) ends:\n"
                               f"{component.log_tail()}")
        time.sleep(1)
    log(f"devcluster: Knative Eventing wired in {time.monotonic() - started:.0f} s; the handler on port "
        f"{handler_port} gets its events. Logs: {state.log_dir}; `make cluster-down` stops it.")
    return component
