"""The network of the node that really runs pods: a network namespace for the node, one for each pod.

A real node has a network stack of its own, on which kube-proxy writes its iptables rules and through which pod
traffic is routed. Here that stack is a network namespace, ``jf<n>-node``, so the host's own iptables, routes and
``ip_forward`` stay untouched and two clusters on one machine (two worktrees' tests) never meet: each takes the
first free ``n`` and with it its own ranges::

    host ── jf<n>h 10.245.<n>.1/30 ══ eth0 10.245.<n>.2/30 ── node netns (ip_forward=1, kube-proxy's iptables)
                                                              ├─ p<i> ══ eth0 10.244.<n>.<i>/32  pod netns jf<n>-p<i>
                                                              └─ ...
    host routes: 10.244.<n>.0/24 (pods) and 10.96.<n>.0/24 (Services) via 10.245.<n>.2

- Pods have real, routed, non-loopback IPs (the API server refuses loopback addresses in Endpoints), one /32 each
  on a veth into the node namespace, with ``10.244.<n>.1`` (on the node's loopback) as their gateway: no bridge,
  so every packet between pods crosses the node's iptables, as kube-proxy's DNAT needs.
- The API server listens on the host's 127.0.0.1 only. It advertises ``10.245.<n>.1`` (the ``kubernetes`` Service's
  endpoint, which its certificate names), and :class:`Forwarder` relays that address to the loopback one. So a pod
  reaches the API server as in any cluster: ``KUBERNETES_SERVICE_HOST`` (a ClusterIP), DNAT by kube-proxy.
- The API server reaches a webhook pod through its Service's ClusterIP: the host route sends it into the node.

Everything is named after ``n``, so :func:`remove` after a crash finds it all. Needs root (``CAP_NET_ADMIN``).
"""

from __future__ import annotations

import ipaddress
import select
import socket
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

NETNS_DIR = Path("/run/netns")


class NetworkError(RuntimeError):
    """A network namespace, link or route could not be made; the message has the command and its error."""


def ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    command = ["ip", *(["-n", netns] if netns else []), *args]
    proc = subprocess.run(command, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise NetworkError(f"`{' '.join(command)}` failed: {proc.stderr.strip()}")
    return proc


@dataclass(frozen=True)
class NodeNetwork:
    """The ranges and names of network ``n`` (see the module docstring)."""

    n: int

    @property
    def host_link(self) -> str:
        return f"jf{self.n}h"

    @property
    def netns(self) -> str:
        return f"jf{self.n}-node"

    @property
    def host_ip(self) -> str:
        """The host's end of the node link: the API server's advertised address, where :class:`Forwarder` listens."""
        return f"10.245.{self.n}.1"

    @property
    def node_ip(self) -> str:
        return f"10.245.{self.n}.2"

    @property
    def gateway(self) -> str:
        return f"10.244.{self.n}.1"

    @property
    def pod_cidr(self) -> str:
        return f"10.244.{self.n}.0/24"

    @property
    def service_cidr(self) -> str:
        return f"10.96.{self.n}.0/24"

    def pod_ip(self, index: int) -> str:
        return f"10.244.{self.n}.{index}"

    def pod_netns(self, index: int) -> str:
        return f"jf{self.n}-p{index}"

    def create(self) -> None:
        """The node namespace, its link to the host and the host's routes to it."""
        ip("netns", "add", self.netns)
        ip("link", "add", self.host_link, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
        ip("addr", "add", f"{self.host_ip}/30", "dev", self.host_link)
        ip("link", "set", self.host_link, "up")
        for args in (("link", "set", "lo", "up"), ("addr", "add", f"{self.node_ip}/30", "dev", "eth0"),
                     ("link", "set", "eth0", "up"), ("addr", "add", f"{self.gateway}/32", "dev", "lo"),
                     ("route", "add", "default", "via", self.host_ip)):
            ip(*args, netns=self.netns)
        _sysctl(self.netns, "net.ipv4.ip_forward", "1")
        for cidr in (self.pod_cidr, self.service_cidr):
            ip("route", "add", cidr, "via", self.node_ip, "dev", self.host_link)

    def add_pod(self, index: int) -> str:
        """A pod's namespace with ``eth0`` at ``pod_ip(index)``, routed through the node. Returns its netns path."""
        name, address, link = self.pod_netns(index), self.pod_ip(index), f"p{index}"
        ip("netns", "add", name)
        ip("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", name, netns=self.netns)
        for args in (("link", "set", "lo", "up"), ("addr", "add", f"{address}/32", "dev", "eth0"),
                     ("link", "set", "eth0", "up"), ("route", "add", self.gateway, "dev", "eth0", "scope", "link"),
                     ("route", "add", "default", "via", self.gateway, "dev", "eth0")):
            ip(*args, netns=name)
        ip("link", "set", link, "up", netns=self.netns)
        ip("route", "add", f"{address}/32", "dev", link, "src", self.gateway, netns=self.netns)
        return str(NETNS_DIR / name)

    def remove_pod(self, index: int) -> None:
        """Deleting the namespace deletes its veth pair, and with the node's end its route."""
        ip("netns", "delete", self.pod_netns(index), check=False)


def existing_networks() -> set[int]:
    """The ``n`` of every node network on this machine (by its host link), whoever made it."""
    links = ip("-o", "link", "show").stdout
    taken = set()
    for line in links.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith("jf") and name.endswith("h") and name[2:-1].isdigit():
            taken.add(int(name[2:-1]))
    return taken


def claim() -> NodeNetwork:
    """The first free ``n``, created. Creating the host link is the claim: two starts cannot both succeed."""
    for n in range(1, 250):
        if n in existing_networks() or (NETNS_DIR / f"jf{n}-node").exists():
            continue
        network = NodeNetwork(n)
        try:
            network.create()
        except NetworkError:
            remove(n)
            continue
        return network
    raise NetworkError("no free node network (jf1h..jf249h all exist); `make cluster-down` removes the ones this "
                       "project left, or delete stale ones with `ip link delete jf<n>h`")


def remove(n: int) -> None:
    """Every namespace and link of network ``n``; the host's routes go with the link."""
    prefix = f"jf{n}-"
    for line in ip("netns", "list").stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(prefix):
            ip("netns", "delete", name, check=False)
    ip("link", "delete", f"jf{n}h", check=False)


def _sysctl(netns: str, key: str, value: str) -> None:
    proc = subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-qw", f"{key}={value}"], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise NetworkError(f"sysctl {key}={value} in {netns} failed: {proc.stderr.strip()}")


class Forwarder:
    """A TCP relay from ``listen`` (host, port) to ``target``: how pods and kube-proxy reach the loopback-bound
    API server at the address it advertises (module docstring)."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        ipaddress.ip_address(listen[0])
        self.target = target
        self.server = socket.create_server(listen, reuse_port=False)
        self.thread = threading.Thread(target=self._accept, name=f"forward-{listen[0]}", daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                incoming, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(incoming,), daemon=True).start()

    def _relay(self, incoming: socket.socket) -> None:
        try:
            outgoing = socket.create_connection(self.target, timeout=5)
        except OSError:
            incoming.close()
            return
        outgoing.settimeout(None)
        with incoming, outgoing:
            peer = {incoming: outgoing, outgoing: incoming}
            try:
                while True:
                    readable, _, _ = select.select(list(peer), [], [])
                    for sock in readable:
                        data = sock.recv(65536)
                        if not data:
                            return
                        peer[sock].sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.server.close()

