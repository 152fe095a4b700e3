"""The handler's cold start on real Knative Serving: from the first event at zero to the handler's ``202``, split.

On the Serving tier's setup (the pod node, Serving's five programs, ``knative/base/handler.yaml``, the real
ApiServerSource adapter as a pod; ``devcluster/knative_serving.py``, ``devcluster/serving_engine.py``), each run:

1. waits until the handler is at zero (no pod, not even a draining one);
2. creates a diamond JobFlow (templates made once, 1 s vcjobs) and, from watches started before, notes when each
   step was first seen: the revision's Deployment asks for a pod (the autoscaler's decision, after the activator
   reported the held request), the Pod exists (the ReplicaSet controller), its containers run (kubelet,
   containerd), it is Ready (queue-proxy's probe of the handler's ``/healthz``); and, from the KIngress stand-in's
   access log, when the first request for the ksvc came in (the adapter's event, right after the create: that is
   where the activator begins to hold it) and when its ``202`` went back;
3. once the diamond succeeded, creates a second one at once, warm (the same pod serves it);
4. reads each diamond's dependency latency (``jobflow_dependency_latency_seconds``, a flow's last target ended ->
   its vcjob created) from the handler pod's ``/metrics``, and the memory (``VmRSS``) of the pod's processes.

Every time is the host's clock (``time.time()``): the watches and the stand-in run on the same machine.

Run (as root): ``.venv/bin/python -m benchmarks.serving_cold_start [--runs 10]``. It uses the install tier's
cluster in ``.devcluster/tests-install/`` (started if needed, left running: ``make cluster-down`` stops it).
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
import urllib.request
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from kubernetes import client, watch

from benchmarks.common import machine, percentile, table, write_result
from devcluster import cluster as devcluster, image, knative_serving, pod_node, serving_engine
from devcluster.node.kubelet import cgroup_root
from devcluster.node.network import NodeNetwork
from devcluster.testing import LocalCluster
from tests import seeds

TEMPLATE = ("apiVersion: flow.volcano.sh/v1alpha1\nkind: JobTemplate\nmetadata: {{name: {name}}}\nspec:\n"
            "  minAvailable: 1\n  schedulerName: volcano\n  tasks:\n  - name: main\n    replicas: 1\n    template:\n"
            "      metadata: {{annotations: {{kwok.jobflow.dev/run-for: 1s}}}}\n      spec:\n"
            "        restartPolicy: Never\n        containers: [{{name: main, image: busybox}}]\n")
ACCESS = re.compile(r"POST jobflow-handler\.volcano-jobflow\.svc\.cluster\.local/ arrived=([\d.]+) -> (\d+) in ([\d.]+) s")


class Steps:
    """When each step of a wake was first seen (host clock), from two watches in the background."""

    def __init__(self, local: LocalCluster) -> None:
        self.local, self.seen, self.since = local, {}, time.time()
        for target in (self._deployments, self._pods):
            threading.Thread(target=target, daemon=True).start()

    def reset(self) -> None:
        self.seen, self.since = {}, time.time()

    def note(self, step: str) -> None:
        self.seen.setdefault(step, time.time())

    def _deployments(self) -> None:
        for event in watch.Watch().stream(client.AppsV1Api(self.local.api).list_namespaced_deployment, serving_engine.NAMESPACE,
                                          label_selector=f"serving.knative.dev/service={serving_engine.KSVC}"):
            if (event["object"].spec.replicas or 0) > 0:
                self.note("scaled")

    def _pods(self) -> None:
        for event in watch.Watch().stream(self.local.core.list_namespaced_pod, serving_engine.NAMESPACE,
                                          label_selector=f"serving.knative.dev/service={serving_engine.KSVC}"):
            pod = event["object"]
            if pod.metadata.deletion_timestamp is not None:
                continue
            self.note("pod")
            if any(s.name == "handler" and s.state.running for s in pod.status.container_statuses or []):
                self.note("running")
            if any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []):
                self.note("ready")


def first_request(log: Path, since: float) -> tuple[float, int, float]:
    """(arrived, status, seconds) of the first request for the ksvc the KIngress stand-in saw after ``since`` (the
    log is in the order requests ended: a request held through a cold start is logged after later ones)."""
    found = [(float(m[1]), int(m[2]), float(m[3])) for m in map(ACCESS.search, log.read_text().splitlines())
             if m and float(m[1]) >= since]
    if not found:
        raise AssertionError(f"no request for the ksvc in {log} since {since}")
    return min(found)


def dependency_latency(local: LocalCluster) -> tuple[float, int]:
    """(sum, count) of ``jobflow_dependency_latency_seconds`` over the ready handler pods."""
    total, count = 0.0, 0
    for pod in serving_engine.handler_pods(local.api):
        if pod.metadata.deletion_timestamp is None and pod.status.pod_ip:
            text = urllib.request.urlopen(f"http://{pod.status.pod_ip}:8080/metrics", timeout=3).read().decode()
            total += sum(float(v) for v in re.findall(r"^jobflow_dependency_latency_seconds_sum (\S+)$", text, re.M))
            count += sum(int(float(v)) for v in re.findall(
                r"^jobflow_dependency_latency_seconds_count (\S+)$", text, re.M))
    return total, count


def pod_memory(local: LocalCluster) -> dict[str, float]:
    """MiB of resident memory of the handler's and queue-proxy's processes on the node (one pod running)."""
    marker = f"{cgroup_root(NodeNetwork(local.state.pod_network))}/"
    found = {"handler (gunicorn master + worker)": 0.0, "queue-proxy": 0.0}
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or marker not in (entry / "cgroup").read_text():
                continue
            command = (entry / "cmdline").read_bytes()
            rss = int(re.search(r"VmRSS:\s+(\d+)", (entry / "status").read_text())[1]) / 1024
        except (OSError, TypeError):
            continue
        if b"gunicorn" in command:
            found["handler (gunicorn master + worker)"] += rss
        elif command.startswith(b"/ko-app/queue"):
            found["queue-proxy"] += rss
    return {key: round(value, 1) for key, value in found.items()}


def diamond(local: LocalCluster, namespace: str, *, name: str) -> float:
    """Create the diamond ``name``; seconds until it succeeded."""
    started = time.time()
    local.custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                                 seeds.diamond(name))
    local.wait_until(f"{name} to Succeed", lambda: ((local.custom.get_namespaced_custom_object(
        "flow.volcano.sh", "v1alpha1", namespace, "jobflows", name).get("status") or {}).get("state") or {}).get(
        "phase") == "Succeed", timeout=180, interval=0.2)
    return time.time() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving_cold_start", description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    log = lambda line: print(line, flush=True)  # noqa: E731
    built = image.ensure_image(log=log)
    state, _ = devcluster.up(devcluster.INSTALL_ROOT, log=log, pods=True)
    local = LocalCluster(state)
    load = lambda name: pod_node.load_image(state, name)  # noqa: E731
    load(built)
    knative_serving.start(state, local.api, load_image=load, log=log)
    serving_engine.deploy(local.api, load_image=load, log=log)
    access_log = Path(next(c.log for c in state.components if c.name == "kingress-standin"))
    namespace = local.create_namespace()
    for name in "abcde":
        local.custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates",
                                                     yaml.safe_load(TEMPLATE.format(name=name)))
    steps = Steps(local)
    runs = []
    for run in range(args.runs):
        local.wait_until("the handler at zero", lambda: serving_engine.at_zero(local.api), timeout=300, interval=1)
        time.sleep(2)  # the watches have seen the last pod go
        steps.reset()
        cold = diamond(local, namespace, name=f"cold-{run}")
        arrived, status, seconds = first_request(access_log, steps.since)
        cold_latency = dependency_latency(local)
        warm = diamond(local, namespace, name=f"warm-{run}")
        warm_latency = dependency_latency(local)
        record = {"created": steps.since, "first_event": arrived - steps.since, "status": status,
                  "to_202": arrived + seconds - steps.since, "held": seconds,
                  **{step: at - steps.since for step, at in steps.seen.items()},
                  "cold_diamond": cold, "warm_diamond": warm,
                  "cold_dependency_mean": cold_latency[0] / max(cold_latency[1], 1),
                  "warm_dependency_mean": (warm_latency[0] - cold_latency[0]) / max(warm_latency[1] - cold_latency[1], 1),
                  "memory_mib": pod_memory(local), "loadavg": machine()["loadavg"]}
        log(f"run {run}: {record}")
        runs.append(record)
    keys = ["first_event", "scaled", "pod", "running", "ready", "to_202", "held", "cold_diamond", "warm_diamond",
            "cold_dependency_mean", "warm_dependency_mean"]
    rows = [[key, f"{percentile([r[key] for r in runs], 50) * 1000:.0f}",
             f"{percentile([r[key] for r in runs], 90) * 1000:.0f}"] for key in keys if all(key in r for r in runs)]
    print(table(["since the JobFlow's create, held: arrival -> 202 (ms)", "p50", "p90"], rows))
    path = write_result("serving_cold_start", {"machine": machine(), "runs": runs})
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
