"""Carry out the HTTP and TCP checks of ``dependsOn.probe`` that the planner asks for.

A check passes when one pod of the target vcjob's task (label ``volcano.sh/job-name`` and ``volcano.sh/task-spec``,
phase Running, with a pod IP) answers: an HTTP GET with a status from 200 to 399, or a TCP connection that opens,
within ``timeout`` seconds. Checks run concurrently, so a reconcile waits at most about one timeout however many
probes there are. Nothing here decides anything: the results go back to the pure planner.
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterable

from jobflow_core import CheckKind, CheckResult, NetworkCheck
from jobflow_core.vocabulary.naming import pods_of_task_selector

from handlers.kube import KubeApi

MAX_PODS_TRIED = 3


def _http_get(ip: str, check: NetworkCheck, timeout: float) -> CheckResult:
    connection = http.client.HTTPConnection(ip, check.port, timeout=timeout)
    try:
        headers = {check.header[0]: check.header[1]} if check.header else {}
        connection.request("GET", check.path or "/", headers=headers)
        status = connection.getresponse().status
    except (OSError, http.client.HTTPException) as error:
        return CheckResult(False, f"{ip}: {error or type(error).__name__}")
    finally:
        connection.close()
    return CheckResult(200 <= status < 400, f"HTTP {status} from {ip}")


def _tcp_connect(ip: str, check: NetworkCheck, timeout: float) -> CheckResult:
    try:
        with socket.create_connection((ip, check.port), timeout=timeout):
            return CheckResult(True, f"{ip}:{check.port} accepts connections")
    except OSError as error:
        return CheckResult(False, f"{ip}:{check.port}: {error.strerror or error}")


class Prober:
    def __init__(self, kube: KubeApi, *, timeout: float = 1.0) -> None:
        self.kube, self.timeout = kube, timeout

    def _pod_ips(self, check: NetworkCheck) -> list[str]:
        pods = self.kube.list_pods(check.namespace, pods_of_task_selector(job=check.job_name, task=check.task_name))
        return [pod["status"]["podIP"] for pod in pods
                if (pod.get("status") or {}).get("phase") == "Running" and pod["status"].get("podIP")]

    def check(self, check: NetworkCheck) -> CheckResult:
        ips = self._pod_ips(check)
        if not ips:
            return CheckResult(False, "no Running pod with an IP yet")
        attempt = _http_get if check.kind is CheckKind.HTTP_GET else _tcp_connect
        result = CheckResult(False, "not tried")
        for ip in ips[:MAX_PODS_TRIED]:
            result = attempt(ip, check, self.timeout)
            if result.passed:
                break
        return result

    def run(self, checks: Iterable[NetworkCheck]) -> dict[NetworkCheck, CheckResult]:
        checks = list(checks)
        if not checks:
            return {}
        # Imported here: only a JobFlow with an HTTP or TCP probe gets this far, and a cold start need not pay it.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(8, len(checks))) as pool:
            return dict(zip(checks, pool.map(self.check, checks), strict=True))
