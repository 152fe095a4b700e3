"""Container probes (liveness, readiness, startup) as the kubelet runs them: from the node, against the pod IP.

A probe is due ``initialDelaySeconds`` after the container started and then every ``periodSeconds``; it fails
when it takes longer than ``timeoutSeconds``. ``failureThreshold`` failures in a row turn the result to failure,
``successThreshold`` successes to success. An ``httpGet`` succeeds on a status from 200 to 399 (HTTPS without
verifying the certificate, like the kubelet), a ``tcpSocket`` when the connection opens, an ``exec`` when the
command exits 0. ``grpc`` probes are not supported (the pod's container then fails to start, with that message).
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from devcluster.pods.spec import SpecError

USER_AGENT = "kube-probe/1.35"


def port_number(container: dict, port: int | str) -> int:
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise SpecError(f"probe port {port!r} is not a named port of container {container['name']!r}")


def check_supported(probe: dict, container: dict) -> None:
    """Raise SpecError for a probe this node cannot run, before the container starts."""
    for kind in ("httpGet", "tcpSocket"):
        if kind in probe:
            port_number(container, probe[kind]["port"])
            return
    if "exec" not in probe:
        raise SpecError(f"unsupported probe {sorted(probe)} (devcluster's pods run httpGet, tcpSocket and exec "
                        "probes)")


def check(probe: dict, *, container: dict, pod_ip: str, run_exec: Callable[[list[str], float], int]) -> bool:
    """One probe attempt: True on success."""
    timeout = float(probe.get("timeoutSeconds", 1))
    if "httpGet" in probe:
        action = probe["httpGet"]
        port = port_number(container, action["port"])
        host = action.get("host") or pod_ip
        if action.get("scheme", "HTTP").upper() == "HTTPS":
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=timeout, context=ssl._create_unverified_context())
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        headers = {"User-Agent": USER_AGENT, "Accept": "*/*"}
        headers.update({h["name"]: h["value"] for h in action.get("httpHeaders") or []})
        try:
            connection.request("GET", action.get("path", "/"), headers=headers)
            return 200 <= connection.getresponse().status < 400
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()
    if "tcpSocket" in probe:
        port = port_number(container, probe["tcpSocket"]["port"])
        try:
            socket.create_connection((probe["tcpSocket"].get("host") or pod_ip, port), timeout=timeout).close()
            return True
        except OSError:
            return False
    if "exec" in probe:
        return run_exec(probe["exec"]["command"], timeout) == 0
    raise SpecError(f"unsupported probe {sorted(probe)} (devcluster's pods run httpGet, tcpSocket and exec probes)")


@dataclass
class ProbeState:
    """The running result of one probe of one container start."""

    probe: dict
    started: float  # when the container started (time.monotonic())
    success: bool = False
    streak: int = 0  # consecutive results equal to the last one
    last_result: bool | None = None
    next_due: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.next_due = self.started + float(self.probe.get("initialDelaySeconds", 0))

    def due(self, now: float) -> bool:
        return now >= self.next_due

    def record(self, result: bool, now: float) -> None:
        self.next_due = now + float(self.probe.get("periodSeconds", 10))
        self.streak = self.streak + 1 if result == self.last_result else 1
        self.last_result = result
        if result and self.streak >= int(self.probe.get("successThreshold", 1)):
            self.success = True
        elif not result and self.streak >= int(self.probe.get("failureThreshold", 3)):
            self.success = False

    @property
    def failed(self) -> bool:
        """Failed enough times in a row to act on (a liveness probe then restarts the container)."""
        return self.last_result is False and self.streak >= int(self.probe.get("failureThreshold", 3))

