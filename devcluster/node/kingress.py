"""``python -m devcluster.node.kingress``: Knative Serving's networking layer on the pod node, a stand-in for Kourier.

Knative Serving does not route requests itself. For each Route its controller writes a ``KIngress``
(``ingresses.networking.internal.knative.dev``): the hosts of the Route, and for each the revisions' Services
("splits") with a percentage and headers to add (``Knative-Serving-Revision``, ``Knative-Serving-Namespace``, which
tell the activator which revision a request is for). A networking layer (Kourier, Istio, Contour) reconciles
those: it programs a proxy, marks the KIngress Ready, and publishes where the proxy is reached; Serving then makes
the Route's cluster name (``jobflow-handler.volcano-jobflow.svc.cluster.local``) an ``ExternalName`` Service
pointing there. Behind a split's Service Serving itself keeps either the activator (the revision at zero) or the
revision's pods.

This process is that layer, for the KIngresses of class ``standin.ingress.jobflow.dev`` (``config-network``'s
``ingress-class``), in the smallest form:

- it owns the Service ``kingress-standin`` in ``knative-serving`` (port 80, no selector) and an EndpointSlice
  pointing at its own listener on the node network's host address, so kube-proxy routes that Service to it;
- it marks each KIngress Ready with ``kingress-standin.knative-serving.svc.cluster.local`` as its private and public
  load balancer (``status.*LoadBalancer.ingress[0].domainInternal``, as Kourier does); the pod node's DNS stand-in
  resolves the Route's ``ExternalName`` to that Service;
- it proxies each HTTP/1.1 request by its ``Host`` (port dropped) to the matching rule's path (longest prefix),
  picks a split by percentage, adds the path's and the split's ``appendHeaders``, and sends the request to the
  split's Service's ClusterIP and port, where kube-proxy takes it to the activator or a pod.

What it does not do, and Kourier does: HTTP/2 and gRPC (h2c), websockets, TLS, header-match rules, ``rewriteHost``,
timeouts and retries from the rules, probing that the routes took effect before it reports Ready (it is Ready at
once), external visibility (every host is cluster-local), and any load balancing of its own (kube-proxy's).
"""

from __future__ import annotations

import argparse
import http.client
import json
import logging
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster.objects import kube_client

LOG = logging.getLogger(__name__)
CLASS = "standin.ingress.jobflow.dev"
CLASS_ANNOTATION = "networking.knative.dev/ingress.class"
NAMESPACE = "knative-serving"
SERVICE = "kingress-standin"
DOMAIN_INTERNAL = f"{SERVICE}.{NAMESPACE}.svc.cluster.local"
GROUP, VERSION, PLURAL = "networking.internal.knative.dev", "v1alpha1", "ingresses"
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
              "content-length"}
UPSTREAM_TIMEOUT = 900  # longer than any revision's timeoutSeconds: the activator holds a request that long


def ready_status(ingress: dict, *, now: str) -> dict:
    """The status a networking layer writes once the KIngress's routes are in place."""
    conditions = [{"type": kind, "status": "True", "lastTransitionTime": now}
                  for kind in ("LoadBalancerReady", "NetworkConfigured", "Ready")]
    balancer = {"ingress": [{"domainInternal": DOMAIN_INTERNAL}]}
    return {"observedGeneration": ingress["metadata"]["generation"], "conditions": conditions,
            "privateLoadBalancer": balancer, "publicLoadBalancer": balancer}


def is_ready(ingress: dict) -> bool:
    status = ingress.get("status") or {}
    return status.get("observedGeneration") == ingress["metadata"]["generation"] and any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])


def routes(ingresses: list[dict]) -> dict[str, list[dict]]:
    """host -> the HTTP paths of the rules that name it (each ``{path, splits, appendHeaders}``), longest first."""
    found: dict[str, list[dict]] = {}
    for ingress in ingresses:
        for rule in ingress["spec"].get("rules") or []:
            for host in rule.get("hosts") or []:
                found.setdefault(host.lower(), []).extend((rule.get("http") or {}).get("paths") or [])
    for paths in found.values():
        paths.sort(key=lambda path: len(path.get("path") or ""), reverse=True)
    return found


def choose(paths: list[dict], request_path: str, *, roll: float) -> tuple[dict, dict] | None:
    """(path, split) for a request: the longest matching path prefix, the split whose percentage ``roll`` (0..100)
    falls in."""
    for path in paths:
        if request_path.startswith(path.get("path") or "/"):
            total = 0
            for split in path.get("splits") or []:
                total += split.get("percent", 100)
                if roll < total:
                    return path, split
            return (path, path["splits"][-1]) if path.get("splits") else None
    return None


class Table:
    """What the proxy reads: the routes of the KIngresses of our class and every Service's ClusterIP, refreshed
    from the API server; meanwhile it marks new KIngresses Ready."""

    def __init__(self, api: client.ApiClient) -> None:
        self.custom, self.core = client.CustomObjectsApi(api), client.CoreV1Api(api)
        self.routes: dict[str, list[dict]] = {}
        self.cluster_ips: dict[tuple[str, str], str] = {}

    def refresh_forever(self) -> None:
        while True:
            try:
                self.refresh()
            except Exception as error:  # the API server restarting: keep the last table
                LOG.warning("cannot refresh the KIngress table (%s); keeping the last one", error)
            time.sleep(0.5)

    def refresh(self) -> None:
        listed = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]
        ours = [item for item in listed if (item["metadata"].get("annotations") or {}).get(CLASS_ANNOTATION) == CLASS]
        services = json.loads(self.core.list_service_for_all_namespaces(_preload_content=False).data)["items"]
        self.cluster_ips = {(s["metadata"]["namespace"], s["metadata"]["name"]): s["spec"].get("clusterIP")
                            for s in services}
        self.routes = routes(ours)
        for ingress in ours:
            if not is_ready(ingress) and ingress["metadata"].get("deletionTimestamp") is None:
                self.mark_ready(ingress)

    def mark_ready(self, ingress: dict) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        meta = ingress["metadata"]
        body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": ready_status(ingress, now=now)}
        try:
            self.custom.patch_namespaced_custom_object_status(GROUP, VERSION, meta["namespace"], PLURAL,
                                                              meta["name"], body)
            LOG.info("KIngress %s/%s Ready (generation %s)", meta["namespace"], meta["name"], meta["generation"])
        except ApiException as error:
            if error.status not in (404, 409):  # gone, or changed meanwhile: the next refresh sees it again
                raise


def publish(core: client.CoreV1Api, discovery: client.DiscoveryV1Api, *, address: str, port: int) -> None:
    """The Service ``kingress-standin`` and its EndpointSlice: this process at ``address:port``."""
    service = {"metadata": {"name": SERVICE, "namespace": NAMESPACE},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": port}]}}
    endpoints = {"metadata": {"name": SERVICE, "namespace": NAMESPACE,
                              "labels": {"kubernetes.io/service-name": SERVICE}},
                 "addressType": "IPv4", "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
                 "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}
    try:
        core.create_namespaced_service(NAMESPACE, service)
    except ApiException as error:
        if error.status != 409:
            raise
    try:
        discovery.create_namespaced_endpoint_slice(NAMESPACE, endpoints)
    except ApiException as error:
        if error.status != 409:
            raise
        discovery.patch_namespaced_endpoint_slice(SERVICE, NAMESPACE, endpoints)  # a restart on another address


def handler_class(table: Table) -> type[BaseHTTPRequestHandler]:
    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args) -> None:  # noqa: A002 (the base class's name)
            LOG.debug(format, *args)

        def forward(self) -> None:
            arrived = time.time()
            host = (self.headers.get("Host") or "").split(":")[0].lower()
            chosen = choose(table.routes.get(host, []), self.path, roll=random.uniform(0, 100))
            body = self.read_body()
            if chosen is None:
                self.reply(404, f"no KIngress of class {CLASS} routes {host}{self.path}\n".encode(), {})
                return
            path, split = chosen
            target = table.cluster_ips.get((split["serviceNamespace"], split["serviceName"]))
            if not target or target == "None":
                self.reply(503, f"no ClusterIP for {split['serviceNamespace']}/{split['serviceName']}\n".encode(), {})
                return
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers.update(path.get("appendHeaders") or {})
            headers.update(split.get("appendHeaders") or {})
            headers["Content-Length"] = str(len(body))
            upstream = http.client.HTTPConnection(target, int(split.get("servicePort", 80)), timeout=UPSTREAM_TIMEOUT)
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                self.reply(answer.status, answer.read(), {k: v for k, v in answer.getheaders()
                                                           if k.lower() not in HOP_BY_HOP})
                # The access log, read by benchmarks/serving_cold_start.py: when each request came, how it ended.
                LOG.info("%s %s%s arrived=%.3f -> %d in %.3f s", self.command, host, self.path, arrived,
                         answer.status, time.time() - arrived)
            except OSError as error:
                self.reply(502, f"{target}: {error}\n".encode(), {})
            finally:
                upstream.close()

        def read_body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                chunks = []
                while (size := int(self.rfile.readline().split(b";")[0], 16)) > 0:
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response_only(status)  # the upstream's own Server and Date headers, not a second pair
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = forward

    return Proxy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.node.kingress", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--listen", required=True, help="address:port on the node network, e.g. 10.245.1.1:8081")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(message)s")
    address, _, port = args.listen.rpartition(":")
    api = kube_client(args.kubeconfig)
    table = Table(api)
    server = ThreadingHTTPServer((address, int(port)), handler_class(table))
    server.daemon_threads = True
    publish(client.CoreV1Api(api), client.DiscoveryV1Api(api), address=address, port=int(port))
    threading.Thread(target=table.refresh_forever, daemon=True).start()
    LOG.info("KIngress stand-in on %s, class %s, load balancer %s", args.listen, CLASS, DOMAIN_INTERNAL)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
