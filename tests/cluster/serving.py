"""The Serving tier's helpers: waiting for zero, finding the handler's processes on the node, and counting the
events on both ends (the ApiServerSource adapter's metrics, each handler pod's ``/metrics``).

Counting across scale to zero: a handler pod's counters die with it, so :class:`EventCounts` scrapes every handler
pod (by its IP, from the host: pods are routed) and the adapter twice a second in the background and keeps each
pod's last answer. A pod stops getting requests when it leaves its Service's endpoints, and lives on for at least
the queue-proxy's 30 s drain after that, so the last scrape of each pod holds everything it was sent.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from devcluster import serving_engine
from devcluster.apiserversource_pod import METRICS_PORT
from devcluster.node.kubelet import cgroup_root
from devcluster.node.network import NodeNetwork
from devcluster.testing import LocalCluster
from installation import DEPLOYMENTS, NAMESPACE, kubectl

HANDLER_PORT = 8080  # the user container's port in knative/base/handler.yaml


def remove_plain_install(cluster: LocalCluster) -> None:
    """The install tier's engine (manifests/), without waiting for its pods to go: its handler and event source would
    be a second engine, its Service has the ksvc's name, and its webhook would judge the tests' JobFlows. The
    namespace stays (deleting it would wait for every pod in it)."""
    kubectl(cluster, "delete", "validatingwebhookconfiguration", "jobflow-admission", "--ignore-not-found")
    kubectl(cluster, "delete", "--namespace", NAMESPACE, "--ignore-not-found", "--wait=false",
            *(f"deployment/{name}" for name in DEPLOYMENTS), "service/jobflow-admission")
    plain = [service.metadata.name for service in cluster.core.list_namespaced_service(NAMESPACE).items
             if service.metadata.name == "jobflow-handler" and service.spec.selector]  # not the Route's
    for name in plain:
        kubectl(cluster, "delete", "--namespace", NAMESPACE, "--wait=false", f"service/{name}")


def wait_at_zero(cluster: LocalCluster, *, timeout: float = 150) -> None:
    cluster.wait_until("the handler scaled to zero (no pod, not even a draining one)",
                       lambda: serving_engine.at_zero(cluster.api), timeout=timeout, interval=1)


def handler_processes(cluster: LocalCluster) -> list[int]:
    """PIDs of gunicorn processes running in the pod node's cgroups (the handler's containers)."""
    marker = f"{cgroup_root(NodeNetwork(cluster.state.pod_network))}/"
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"gunicorn" in (entry / "cmdline").read_bytes() \
                    and marker in (entry / "cgroup").read_text():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def ready_handler_pods(cluster: LocalCluster) -> set[str]:
    return {pod.metadata.name for pod in serving_engine.handler_pods(cluster.api)
            if pod.metadata.deletion_timestamp is None
            and any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])}


def scrape(url: str, *, timeout: float = 3) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus samples by name: (labels, value)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        text = response.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def adapter_sent(samples: dict) -> Counter:
    """The adapter's CloudEvents sent to the handler, by (type, answer code); ``none`` when no answer came."""
    counts: Counter = Counter()
    for labels, value in samples.get("http_client_request_duration_seconds_count", []):
        if "cloudevents_type" in labels:
            counts[(labels["cloudevents_type"], labels.get("http_response_status_code", "none"))] += int(value)
    return counts


def handler_received(samples: dict) -> Counter:
    """The handler's ``jobflow_handler_events_total``, by (type, code)."""
    return Counter({(labels["type"], labels["code"]): int(value)
                    for labels, value in samples.get("jobflow_handler_events_total", [])})


class EventCounts:
    """Both ends' counts, scraped in the background (module docstring); also the most handler pods seen Ready at
    once."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.handler: dict[str, Counter] = {}  # pod UID -> its last counts
        self.handler_before: dict[str, Counter] = {}  # the same for the pods that were there before
        self._scrape_handlers(into=self.handler_before)
        self.adapter_before = self._adapter()
        self.adapter_last = self.adapter_before
        self.most_pods = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _adapter(self) -> Counter:
        pod = serving_engine.adapter_pod(self.cluster.api)
        assert pod is not None, "the ApiServerSource adapter's pod is not running"
        return adapter_sent(scrape(f"http://{pod.status.pod_ip}:{METRICS_PORT}/metrics"))

    def _scrape_handlers(self, *, into: dict[str, Counter]) -> None:
        """Each pod whose handler container runs (a stopped one's IP may already be another pod's)."""
        for pod in serving_engine.handler_pods(self.cluster.api):
            running = any(status.name == "handler" and status.state.running
                          for status in pod.status.container_statuses or [])
            if running and pod.status.pod_ip:
                try:
                    into[pod.metadata.uid] = handler_received(
                        scrape(f"http://{pod.status.pod_ip}:{HANDLER_PORT}/metrics", timeout=1))
                except Exception:  # not listening yet, or just stopped: its last scrape stands
                    continue

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self.adapter_last = self._adapter()
                self.most_pods = max(self.most_pods, len(ready_handler_pods(self.cluster)))
                self._scrape_handlers(into=self.handler)
            except Exception:  # an API hiccup: the next round
                continue

    def sent(self) -> Counter:
        """What the adapter sent since this object was made."""
        return self.adapter_last - self.adapter_before

    def received(self) -> Counter:
        """What the handler pods received since this object was made."""
        return sum((counts - self.handler_before.get(uid, Counter()) for uid, counts in self.handler.items()),
                   Counter())

    def settle(self, *, quiet: float = 3, timeout: float = 60) -> None:
        """Wait until the adapter sent nothing for ``quiet`` seconds (the last vcjob deletions announced), then
        stop scraping."""
        deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
        while time.monotonic() < deadline:
            now = self.sent()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet and self.received() == now:
                break
            time.sleep(0.5)
        else:
            print(f"the counts did not settle in {timeout:.0f} s: sent {dict(self.sent())}, received "
                  f"{dict(self.received())}")
        time.sleep(1)  # one more scrape of every pod
        self._stop.set()
        self._thread.join(timeout=10)
