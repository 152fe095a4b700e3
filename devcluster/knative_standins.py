"""The smallest stand-ins for what Knative Eventing needs from a real cluster and this testbed does not run.

Knative's own programs (controllers, adapters, broker ingress and filter, channel dispatcher) run here unchanged as
local processes (``devcluster/knative_eventing.py``). What they take for granted is not here: no kubelet runs pods,
no cluster DNS or kube-proxy turns a Service name into an address, no Knative Serving runs the ksvcs, and Knative's
defaulting webhook is not installed. Each of those is replaced by the least that lets the real programs meet:

- :class:`LocalKubelet` plays the Deployments that Knative's controllers create or scale (the ApiServerSource
  adapter, the PingSource adapter, the channel dispatcher): it starts the built binary with the Deployment's own
  environment, reports the Deployment Available, and publishes its port in the Endpoints of the same name. Every
  "pod" gets its own port instead of its own IP, so the environment variables that name a listening port are the
  one thing it overrides.
- :class:`ClusterDNS` is an HTTP forward proxy that Knative's senders reach through ``HTTP_PROXY`` (they clone Go's
  default transport, which honours it): ``http://<service>.<namespace>.svc.cluster.local/...`` goes to the port in
  that Service's Endpoints on 127.0.0.1, following ExternalName Services as DNS would.
- :func:`serve_ksvc` is Knative Serving for one ksvc: its status says Ready at the address Serving would give it,
  and its Endpoints point at a local process (the handler, or the dead-letter receiver).
- :func:`with_webhook_defaults` writes into a Broker, Trigger or source what Knative's defaulting webhook would on
  admission (the broker class and config from ``config-br-defaults``, a Trigger's broker label, a reference's
  namespace), before the object is created.

Every Endpoints object written here carries the label ``jobflow.dev/local-endpoints`` and the address 10.0.0.1
(the API server refuses loopback addresses there); nothing ever dials that address.
"""

from __future__ import annotations

import copy
import hashlib
import http.client
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster import processes

LOG = logging.getLogger(__name__)
POD_IP = "10.0.0.1"
ENDPOINTS_LABEL = "jobflow.dev/local-endpoints"
CLUSTER_DOMAIN = "svc.cluster.local"
BROKER_CLASS = "eventing.knative.dev/broker.class"
BROKER_LABEL = "eventing.knative.dev/broker"


def publish_endpoints(core: client.CoreV1Api, namespace: str, name: str, port: int) -> None:
    """The Endpoints of Service ``name``: what the endpoints controller would write for a ready pod on ``port``."""
    body = {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": name, "namespace": namespace, "labels": {ENDPOINTS_LABEL: "true"}},
            "subsets": [{"addresses": [{"ip": POD_IP}], "ports": [{"name": "http", "port": port}]}]}
    try:
        core.create_namespaced_endpoints(namespace, body)
    except ApiException as error:
        if error.status != 409:
            raise
        core.replace_namespaced_endpoints(name, namespace, body)


def local_port(core: client.CoreV1Api, host: str) -> int | None:
    """The local port behind ``<service>.<namespace>.svc.cluster.local`` (None when no such Service is served)."""
    for _ in range(5):  # ExternalName hops
        name, _, rest = host.partition(".")
        namespace, _, domain = rest.partition(".")
        if domain not in (CLUSTER_DOMAIN, "svc") or not name or not namespace:
            return None
        try:
            endpoints = core.read_namespaced_endpoints(name, namespace)
            return endpoints.subsets[0].ports[0].port
        except (ApiException, IndexError, TypeError):
            pass
        try:
            service = core.read_namespaced_service(name, namespace)
        except ApiException:
            return None
        if service.spec.type != "ExternalName":
            return None
        host = service.spec.external_name
    return None


class _QuietServer(ThreadingHTTPServer):
    """A sender that hangs up (its own timeout, or a process stopping) is its business, not a traceback here."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ClusterDNS:
    """The HTTP forward proxy that stands in for cluster DNS and kube-proxy (see the module docstring)."""

    HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer",
                  "transfer-encoding", "upgrade"}

    def __init__(self, core: client.CoreV1Api, *, cache_seconds: float = 2.0) -> None:
        self.core = core
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, int | None]] = {}
        self.server = _QuietServer(("127.0.0.1", processes.free_port()), self._handler_class())
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="cluster-dns", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ClusterDNS:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def resolve(self, host: str) -> int | None:
        now = time.monotonic()
        cached = self._cache.get(host)
        if cached and now - cached[0] < self.cache_seconds:
            return cached[1]
        port = local_port(self.core, host)
        self._cache[host] = (now, port)
        return port

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        dns = self

        class Forward(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as Knative's senders expect

            def log_message(self, *args) -> None:
                pass

            def _forward(self) -> None:
                target = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                port = dns.resolve(target.hostname or "")
                if port is None:
                    self._reply(502, {}, f"cluster DNS stand-in: no local endpoints for {target.hostname}\n".encode())
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in dns.HOP_BY_HOP}
                path = target.path or "/"
                if target.query:
                    path += "?" + target.query
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                try:
                    connection.request(self.command, path, body=body, headers=headers)
                    reply = connection.getresponse()
                    payload = reply.read()
                    self._reply(reply.status, dict(reply.getheaders()), payload)
                except OSError as error:
                    self._reply(502, {}, f"cluster DNS stand-in: {target.hostname} -> :{port}: {error}\n".encode())
                finally:
                    connection.close()

            def _reply(self, status: int, headers: dict[str, str], payload: bytes) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    if key.lower() not in dns.HOP_BY_HOP and key.lower() != "content-length":
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                try:
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the sender gave up (its timeout); its retry policy decides what happens next
                    self.close_connection = True

            do_POST = do_PUT = do_GET = do_DELETE = do_PATCH = do_OPTIONS = _forward

        return Forward


@dataclass
class Played:
    """A Deployment the local kubelet runs: the process and the environment it was started with."""

    process: processes.Component
    signature: str
    port: int | None  # the published listening port, which must accept connections before the pod counts ready
    service: str | None  # whose Endpoints name that port once it is ready
    published: bool = False

    def ready(self) -> bool:
        if not self.process.alive():
            return False
        if self.port is None:
            return True
        with socket.socket() as probe:
            probe.settimeout(0.5)
            return probe.connect_ex(("127.0.0.1", self.port)) == 0


@dataclass
class LocalKubelet:
    """Runs the Deployments whose image it knows as local processes (see the module docstring).

    ``images`` maps a container image to the binary that plays it; ``listen`` maps a binary name to the environment
    variables that carry its listening ports (the first one is published in the Endpoints named by ``publish``).
    """

    api: client.ApiClient
    images: dict[str, Path]
    log_dir: Path
    base_env: dict[str, str]
    listen: dict[str, tuple[str, ...]] = field(default_factory=dict)
    publish: dict[str, str] = field(default_factory=dict)
    interval: float = 0.5
    played: dict[tuple[str, str], Played] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.apps = client.AppsV1Api(self.api)
        self.core = client.CoreV1Api(self.api)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="local-kubelet", daemon=True)

    def start(self) -> LocalKubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for played in self.played.values():
            played.process.stop()
        self.played.clear()

    def process(self, namespace: str, name: str) -> processes.Component | None:
        played = self.played.get((namespace, name))
        return played.process if played else None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sync()
            except Exception as error:  # the API server may be restarting: try again on the next tick, like a kubelet
                LOG.warning("local kubelet: sync failed, retrying: %s", str(error).splitlines()[0][:200])

    def sync(self) -> None:
        seen = set()
        for deployment in self.apps.list_deployment_for_all_namespaces().items:
            containers = deployment.spec.template.spec.containers
            binary = self.images.get(containers[0].image)
            if binary is None or not (deployment.spec.replicas or 0):
                continue
            key = (deployment.metadata.namespace, deployment.metadata.name)
            seen.add(key)
            env = self._environment(deployment, containers[0])
            signature = hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()
            played = self.played.get(key)
            if played is None or played.signature != signature or not played.process.alive():
                if played:
                    played.process.stop()
                self.played[key] = played = self._start(key, binary, env, signature)
            if played.ready():  # a readiness probe: Endpoints and Available only once it serves
                if played.service and not played.published:
                    publish_endpoints(self.core, key[0], played.service, played.port)
                    played.published = True
                self._report_available(deployment)
        for key in set(self.played) - seen:
            self.played.pop(key).process.stop()

    def _start(self, key: tuple[str, str], binary: Path, env: dict[str, str], signature: str) -> Played:
        ports = {name: str(processes.free_port()) for name in ("PROFILING_PORT", *self.listen.get(binary.name, ()))}
        process = processes.start(f"{key[0]}.{key[1]}", binary, [], log_dir=self.log_dir,
                                  env={**env, **self.base_env, **ports})
        service = self.publish.get(binary.name)
        port = int(ports[self.listen[binary.name][0]]) if service else None
        return Played(process, signature, port, service)

    def _environment(self, deployment, container) -> dict[str, str]:
        """The container's environment as a kubelet would resolve it for the one pod."""
        pod = {"metadata.namespace": deployment.metadata.namespace,
               "metadata.name": f"{deployment.metadata.name}-local",
               "spec.serviceAccountName": deployment.spec.template.spec.service_account_name or "default"}
        env = {}
        for variable in container.env or ():
            source = variable.value_from
            if source is None:
                env[variable.name] = variable.value or ""
            elif source.field_ref is not None:
                env[variable.name] = pod.get(source.field_ref.field_path, "")
            elif source.config_map_key_ref is not None:
                # Some of the release's ConfigMaps (image lists) are generated when it is published and are not in
                # the module; a variable that names one is left unset. The programs run here never read those.
                ref = source.config_map_key_ref
                try:
                    data = self.core.read_namespaced_config_map(ref.name, deployment.metadata.namespace).data or {}
                except ApiException as error:
                    if error.status != 404:
                        raise
                    data = {}
                if ref.key in data:
                    env[variable.name] = data[ref.key]
            elif source.resource_field_ref is not None:
                env[variable.name] = "0"
        return env

    def _report_available(self, deployment) -> None:
        status = deployment.status
        if (status and status.observed_generation == deployment.metadata.generation and status.available_replicas
                and any(c.type == "Available" and c.status == "True" for c in status.conditions or ())):
            return
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        replicas = deployment.spec.replicas
        self.apps.patch_namespaced_deployment_status(deployment.metadata.name, deployment.metadata.namespace, {
            "status": {"observedGeneration": deployment.metadata.generation, "replicas": replicas,
                       "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
                       "conditions": [{"type": "Available", "status": "True", "reason": "PlayedLocally",
                                       "message": "a local process plays the pod (devcluster local kubelet)",
                                       "lastTransitionTime": now, "lastUpdateTime": now}]}})


def serve_ksvc(api: client.ApiClient, namespace: str, name: str, port: int) -> str:
    """Knative Serving's part for ksvc ``name``: Ready at its cluster address, which reaches ``port`` locally."""
    custom = client.CustomObjectsApi(api)
    url = f"http://{name}.{namespace}.{CLUSTER_DOMAIN}"
    service = custom.get_namespaced_custom_object("serving.knative.dev", "v1", namespace, "services", name)
    custom.patch_namespaced_custom_object_status("serving.knative.dev", "v1", namespace, "services", name, {
        "status": {"observedGeneration": service["metadata"].get("generation", 1), "url": url,
                   "address": {"url": url},
                   "conditions": [{"type": t, "status": "True"} for t in
                                  ("Ready", "ConfigurationsReady", "RoutesReady")]}})
    publish_endpoints(client.CoreV1Api(api), namespace, name, port)
    return url


class Receiver:
    """A ksvc that only receives (the dead-letter sink here): records each request (lower-cased headers, body),
    prints one line about it, answers 202."""

    def __init__(self, *, name: str) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                receiver.received.append((headers, body))
                print(f"{name}: {headers.get('ce-type')} id={headers.get('ce-id')} subject={headers.get('ce-subject')}"
                      f" error={headers.get('ce-knativeerrorcode')} from={headers.get('ce-knativeerrordest')}",
                      flush=True)
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", processes.free_port()), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, name=name, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def broker_defaults(api: client.ApiClient) -> dict:
    """``clusterDefault`` of ``config-br-defaults``, which Knative's webhook fills a Broker from."""
    config = client.CoreV1Api(api).read_namespaced_config_map("config-br-defaults", "knative-eventing")
    return yaml.safe_load(config.data["default-br-config"])["clusterDefault"]


def with_webhook_defaults(doc: dict, defaults: dict) -> dict:
    """``doc`` as Knative's defaulting webhook would admit it (only the defaults its controllers depend on)."""
    kind, namespace = doc.get("kind"), doc["metadata"].get("namespace", "default")
    if kind not in ("Broker", "Trigger", "ApiServerSource", "PingSource"):
        return doc
    doc = copy.deepcopy(doc)
    spec = doc.setdefault("spec", {})

    def own_namespace(destination: dict | None) -> None:
        if destination and destination.get("ref"):
            destination["ref"].setdefault("namespace", namespace)

    if kind == "Broker":
        annotations = doc["metadata"].setdefault("annotations", {})
        annotations.setdefault(BROKER_CLASS, defaults["brokerClass"])
        spec.setdefault("config", {k: defaults[k] for k in ("apiVersion", "kind", "name", "namespace")})
        if "delivery" not in spec and defaults.get("delivery"):
            spec["delivery"] = dict(defaults["delivery"])
    elif kind == "Trigger":
        doc["metadata"].setdefault("labels", {})[BROKER_LABEL] = spec["broker"]
        spec.setdefault("filter", {})
        own_namespace(spec.get("subscriber"))
        own_namespace((spec.get("delivery") or {}).get("deadLetterSink"))
    elif kind == "ApiServerSource":
        spec.setdefault("mode", "Reference")
        spec.setdefault("serviceAccountName", "default")
        own_namespace(spec.get("sink"))
    elif kind == "PingSource":
        own_namespace(spec.get("sink"))
    return doc


def wait(what: str, probe: Callable[[], object], *, timeout: float, interval: float = 0.5):
    """``probe()``'s first truthy value, or a TimeoutError that says what did not happen."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(interval)
