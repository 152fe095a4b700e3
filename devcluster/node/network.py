"""The network of the node that really runs pods: a network namespace that is the node's own network stack.

A real node has a network stack of its own, on which kube-proxy writes its iptables rules and through which pod
traffic is routed. Here that stack is a network namespace, ``jf<n>-node``; containerd, the kubelet and kube-proxy
run inside it, so the host's own iptables, routes and ``ip_forward`` stay untouched and two clusters on one machine
(two worktrees' tests) never meet: each takes the first free ``n`` and with it its own ranges::

    host ── jf<n>h 10.245.<n>.1/30 ══ eth0 10.245.<n>.2/30 ── node netns (ip_forward=1, kube-proxy's iptables,
                                                              containerd, the kubelet)
                                                              ├─ veth ══ eth0 10.244.<n>.<i>/32  a pod (CNI ptp)
                                                              └─ ...
    host routes: 10.244.<n>.0/24 (pods) and 10.96.<n>.0/24 (Services) via 10.245.<n>.2

- Pods get real, routed, non-loopback IPs from CNI's ``ptp`` plugin (a veth each, ``10.244.<n>.1`` the gateway on
  the node's side): no bridge, so every packet between pods crosses the node's iptables, as kube-proxy's DNAT needs.
- The API server listens on the host's 127.0.0.1 only. It advertises ``10.245.<n>.1`` (the ``kubernetes``
  Service's endpoint, which its certificate names), where a relay (socat) forwards to the loopback port; so the
  kubelet, kube-proxy and pods reach it as in any cluster.
- The API server reaches a webhook pod, and the kubelet's port, through the host routes into the node.

Everything is named after ``n``, so :func:`remove` after a crash finds it all. Needs root (``CAP_NET_ADMIN``).
"""

from __future__ import annotations

import subprocess
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
        """The host's end of the node link: the API server's advertised address, where the relay listens."""
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

    def create(self) -> None:
        """The node namespace, its link to the host and the host's routes to it."""
        ip("netns", "add", self.netns)
        ip("link", "add", self.host_link, "type", "veth", "peer", "name", "eth0", "netns", self.netns)
        ip("addr", "add", f"{self.host_ip}/30", "dev", self.host_link)
        ip("link", "set", self.host_link, "up")
        for args in (("link", "set", "lo", "up"), ("addr", "add", f"{self.node_ip}/30", "dev", "eth0"),
                     ("link", "set", "eth0", "up"), ("route", "add", "default", "via", self.host_ip)):
            ip(*args, netns=self.netns)
        _sysctl(self.netns, "net.ipv4.ip_forward", "1")
        for cidr in (self.pod_cidr, self.service_cidr):
            ip("route", "add", cidr, "via", self.node_ip, "dev", self.host_link)


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
    """The node namespace and link of network ``n`` (the pods' veths go with the namespace, the host's routes with
    the link)."""
    ip("netns", "delete", NodeNetwork(n).netns, check=False)
    ip("link", "delete", NodeNetwork(n).host_link, check=False)


def _sysctl(netns: str, key: str, value: str) -> None:
    proc = subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-qw", f"{key}={value}"], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise NetworkError(f"sysctl {key}={value} in {netns} failed: {proc.stderr.strip()}")
