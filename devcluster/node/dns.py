"""``python -m devcluster.node.dns``: cluster DNS for the pod node's pods, a stand-in for CoreDNS.

The kubelet writes each pod's ``/etc/resolv.conf`` as in any cluster (this server as the nameserver; search
``<ns>.svc.cluster.local svc.cluster.local cluster.local``; ``ndots:5``), so ``jobflow-handler``,
``jobflow-handler.volcano-jobflow`` and ``jobflow-handler.volcano-jobflow.svc.cluster.local`` all resolve the way
a pod's resolver tries them. What this server answers, over UDP:

- ``A`` for ``<service>.<namespace>.svc.cluster.local``: the Service's ClusterIP (every Service listed once a
  second from the API server); ``NXDOMAIN`` for any other name, so the resolver moves on to its next search domain;
- for an ``ExternalName`` Service whose external name is another Service's cluster name (what Knative Serving makes
  of a Route: ``jobflow-handler.volcano-jobflow.svc.cluster.local`` -> the networking layer's Service), ``A`` with
  that Service's ClusterIP: the ``CNAME`` CoreDNS would answer, flattened into the address it leads to;
- no records for other types of a known name (``AAAA`` included: the answer is empty, not an error).

Not done: ``CNAME`` records (an external name outside the cluster is ``NXDOMAIN``), TCP, headless Services' pod records, SRV, PTR, ``<ip>.<ns>.pod`` names, forwarding names outside the
cluster (pods here reach nothing outside it anyway).
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import struct
import sys
import threading
import time

from devcluster.objects import kube_client
from kubernetes import client

LOG = logging.getLogger(__name__)
DOMAIN = "svc.cluster.local"
TTL = 5
A, IN = 1, 1
NXDOMAIN = 3


def question(packet: bytes) -> tuple[str, int, int]:
    """(name, type, end offset) of the first question of a DNS query."""
    labels, offset = [], 12
    while packet[offset]:
        length = packet[offset]
        labels.append(packet[offset + 1:offset + 1 + length].decode("ascii", "replace").lower())
        offset += 1 + length
    qtype, _ = struct.unpack("!HH", packet[offset + 1:offset + 5])
    return ".".join(labels), qtype, offset + 5


def service_addresses(services: list[dict]) -> dict[str, str]:
    """``<svc>.<ns>.svc.cluster.local`` -> the address it resolves to, from a list of Services (module docstring)."""
    addresses = {f"{s['metadata']['name']}.{s['metadata']['namespace']}.{DOMAIN}": s["spec"]["clusterIP"]
                 for s in services if s["spec"].get("clusterIP") not in (None, "", "None")}
    for service in services:
        target = (service["spec"].get("externalName") or "").lower().rstrip(".")
        if service["spec"].get("type") == "ExternalName" and target in addresses:
            addresses[f"{service['metadata']['name']}.{service['metadata']['namespace']}.{DOMAIN}"] = addresses[target]
    return addresses


def answer(packet: bytes, addresses: dict[str, str]) -> bytes:
    """The reply to one query, from ``addresses`` (``<svc>.<ns>.svc.cluster.local`` -> ClusterIP)."""
    ident, flags = struct.unpack("!HH", packet[:4])
    name, qtype, end = question(packet)
    address = addresses.get(name)
    rcode = 0 if address else NXDOMAIN
    records = b""
    if address and qtype == A:
        records = struct.pack("!HHHIH", 0xC00C, A, IN, TTL, 4) + socket.inet_aton(address)
    header = struct.pack("!HHHHHH", ident, 0x8400 | (flags & 0x0100) | 0x0080 | rcode, 1, 1 if records else 0, 0, 0)
    return header + packet[12:end] + records


class Server:
    def __init__(self, core: client.CoreV1Api, listen: tuple[str, int]) -> None:
        self.core = core
        self.addresses: dict[str, str] = {}
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(listen)

    def refresh(self) -> None:
        while True:
            try:
                items = json.loads(self.core.list_service_for_all_namespaces(_preload_content=False).data)["items"]
                self.addresses = service_addresses(items)
            except Exception as error:  # the API server restarting: keep the last names
                LOG.warning("cannot list Services (%s); answering from the last list", error)
            time.sleep(1)

    def serve(self) -> None:
        threading.Thread(target=self.refresh, daemon=True).start()
        while True:
            packet, sender = self.sock.recvfrom(512)
            try:
                self.sock.sendto(answer(packet, self.addresses), sender)
            except (IndexError, struct.error, UnicodeError):
                continue  # not a query we can read: no answer, as for garbage


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.node.dns", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--listen", required=True, help="address:port, e.g. 10.245.1.1:53")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(message)s")
    host, _, port = args.listen.rpartition(":")
    Server(client.CoreV1Api(kube_client(args.kubeconfig)), (host, int(port))).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
