"""Flows that finish: many JobFlows on one Volcano queue, upstream's controller and ours, alternated.

The shape (issue 27): N JobFlows (default 20) created at once (8 client threads), on a Volcano queue of their own
capped at ``--cpu`` (default 32) CPU by its ``capability``. Shapes (``--shape``):

- ``chain``: each JobFlow a chain s1 -> s2 -> s3; each stage a vcjob of ``minAvailable: 4``, four one-pod tasks
  requesting 2 CPU that run ``--run-for`` (default 10s) on a kwok node: 8 CPU per stage, 4 stages at once fill the
  queue;
- ``diamond``: the seed diamond with a wide middle: a -> b -> {c, d} -> e, c twice as wide (16 CPU) as the rest;
- ``mix``: every other JobFlow is a chain of three, the others a single stage (long and short JobFlows).

The engines are those of :mod:`benchmarks.side_by_side` (upstream's ``vc-controller-manager`` with only its JobFlow
controllers; ours as the Procfile runs it), each on an API server of its own, one at a time, arms alternated. Ours
needs PriorityClass ``volcano-jobflow-started`` (``manifests/priorityclasses.yaml``); it is applied if missing and
left (upstream ignores it).

Measured, per JobFlow, from its create call returning: completion (first seen ``Succeed``, polled every 0.25 s);
from the vcjob watch: when each stage was first seen Running and Completed. Reported per engine: mean, p90 and max
completion, the first completion, the makespan (first create -> last Succeed), and the share of time flows sat
half-done (a stage Completed, the JobFlow not ended, and none of its stages Running), over the sum of completions.

Run: ``.venv/bin/python -m benchmarks.queued_flows [--shape chain] [--runs 3]`` on a running ``make cluster``.
Results: ``results/queued_flows-<shape>.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (REPO, VcJobWatch, connect, cpu_seconds, create, machine, new_namespace, percentile,
                               table, write_result)
from benchmarks.side_by_side import EngineApiServer, processes_of, start_ours, start_upstream
from devcluster.processes import Component
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, QUEUE

ENGINES = ("upstream", "ours")
SHAPES = {
    "chain": {"flows": [("s1", [], 4), ("s2", ["s1"], 4), ("s3", ["s2"], 4)]},
    "diamond": {"flows": [("a", [], 4), ("b", ["a"], 4), ("c", ["b"], 8), ("d", ["b"], 4), ("e", ["c", "d"], 4)]},
    "mix": {"flows": [("s1", [], 4), ("s2", ["s1"], 4), ("s3", ["s2"], 4)], "short_every": 2},
}
"""Per shape: the stages (name, targets, pods of 2 CPU each; the gang is all of them)."""


def stage_template(name: str, *, pods: int, queue: str, run_for: str) -> dict:
    task = {"replicas": 1, "template": {"metadata": {"annotations": {"kwok.jobflow.dev/run-for": run_for}},
                                        "spec": {"restartPolicy": "Never", "containers": [{
                                            "name": "main", "image": "busybox",
                                            "resources": {"requests": {"cpu": "2"}}}]}}}
    return {"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind, "metadata": {"name": name},
            "spec": {"minAvailable": pods, "schedulerName": "volcano", "queue": queue,
                     "tasks": [{"name": f"t{i}", **task} for i in range(pods)]}}


def jobflow_of(name: str, stages: list[tuple[str, list[str], int]]) -> dict:
    flows = [{"name": s, **({"dependsOn": {"targets": targets}} if targets else {})} for s, targets, _ in stages]
    return {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind, "metadata": {"name": name},
            "spec": {"jobRetainPolicy": "retain", "flows": flows}}


def stages_of(shape: str, index: int) -> list[tuple[str, list[str], int]]:
    spec = SHAPES[shape]
    every = spec.get("short_every")
    return spec["flows"][:1] if every and index % every == 1 else spec["flows"]


def ensure_priority_class(local: LocalCluster) -> None:
    for body in yaml.safe_load_all((REPO / "manifests" / "priorityclasses.yaml").read_text()):
        try:
            client.SchedulingV1Api(local.api).create_priority_class(body)
        except ApiException as error:
            if error.status != 409:
                raise


def make_queue(local: LocalCluster, name: str, cpu: int) -> None:
    local.custom.create_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, {
        "apiVersion": QUEUE.api_version, "kind": QUEUE.kind, "metadata": {"name": name},
        "spec": {"weight": 1, "reclaimable": False, "capability": {"cpu": str(cpu)}}})
    local.wait_until(f"queue {name} Open", lambda: (local.custom.get_cluster_custom_object(
        QUEUE.group, QUEUE.version, QUEUE.plural, name).get("status") or {}).get("state") == "Open", timeout=60)


def phases(local: LocalCluster, namespace: str) -> dict[str, str | None]:
    items = local.custom.list_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, namespace,
                                                       JOBFLOW.plural)["items"]
    return {i["metadata"]["name"]: ((i.get("status") or {}).get("state") or {}).get("phase") for i in items}


def run_once(local: LocalCluster, engine: str, *, shape: str, n: int, cpu: int, run_for: str,
             timeout: float) -> dict:
    log_dir = Path(tempfile.mkdtemp(prefix=f"queued-{engine}-"))
    namespace = new_namespace(local, f"queued-{engine[:2]}")
    queue = f"q-{namespace}"
    make_queue(local, queue, cpu)
    server = EngineApiServer(local, log_dir)
    components: list[Component] = []
    watcher = None
    try:
        for stage, _, pods in {s[0]: s for s in SHAPES[shape]["flows"]}.values():
            create(local, namespace, stage_template(stage, pods=pods, queue=queue, run_for=run_for))
        components = start_upstream(local, server, log_dir) if engine == "upstream" else \
            start_ours(local, server, log_dir)
        time.sleep(3)  # informers synced, the templates' announcements through
        watcher = VcJobWatch(local, namespace)
        names = [f"f{i}" for i in range(n)]
        created: dict[str, float] = {}

        def make(i: int) -> None:
            create(local, namespace, jobflow_of(names[i], stages_of(shape, i)))
            created[names[i]] = time.monotonic()

        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(make, range(n)))
        done: dict[str, float] = {}
        deadline = time.monotonic() + timeout
        while len(done) < n:
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f"{engine}: {n - len(done)} JobFlows not Succeed after {timeout:.0f} s")
            for name, phase in phases(local, namespace).items():
                if phase == "Succeed":
                    done.setdefault(name, now)
                elif phase == "Failed":
                    raise RuntimeError(f"{engine}: JobFlow {name} Failed")
            for component in components:
                if not component.alive():
                    raise RuntimeError(f"{component.name} exited:\n{component.log_tail()}")
            time.sleep(0.25)
        makespan = max(done.values()) - started
        cpu_used = sum(cpu_seconds(p) for p in processes_of(components))
    finally:
        for component in reversed(components):
            component.stop()
        if watcher is not None:
            watcher.stop()
        server.stop()
    completion = {name: done[name] - created[name] for name in names}
    half_done = 0.0
    for i, name in enumerate(names):
        stages = [s for s, _, _ in stages_of(shape, i)]
        half_done += sat_half_done(watcher, [f"{name}-{s}" for s in stages], end=done[name])
    local.delete_namespace(namespace)
    local.custom.delete_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, queue)
    values = list(completion.values())
    return {"engine": engine, "shape": shape, "n": n, "cpu": cpu, "run_for": run_for, "namespace": namespace,
            "log_dir": str(log_dir), "completion_seconds": {k: round(v, 2) for k, v in completion.items()},
            "mean": round(statistics.mean(values), 2), "p90": round(percentile(values, 90), 2),
            "max": round(max(values), 2), "first": round(min(values), 2), "makespan": round(makespan, 2),
            "half_done_share": round(half_done / sum(values), 3), "engine_cpu_seconds": round(cpu_used, 1)}


def sat_half_done(watcher: VcJobWatch, jobs: list[str], *, end: float) -> float:
    """Seconds in which a stage of the JobFlow had Completed, none of its stages ran, and it had not ended."""
    spans = []  # (start, end) of each stage's running, by the watch's first sightings
    for job in jobs:
        running = watcher.seen(job, "Running") or watcher.seen(job, "Completed")
        completed = watcher.seen(job, "Completed")
        if running and completed:
            spans.append((running[0], completed[0]))
    if not spans:
        return 0.0
    spans.sort()
    idle, covered = 0.0, spans[0][1]
    for begin, finish in spans[1:]:
        if begin > covered:
            idle += begin - covered
        covered = max(covered, finish)
    return idle + max(0.0, end - covered)


ROWS = [("mean completion (s)", "mean"), ("p90 completion (s)", "p90"), ("max completion (s)", "max"),
        ("first completion (s)", "first"), ("makespan (s)", "makespan"),
        ("share of time half-done", "half_done_share"), ("engine CPU (s)", "engine_cpu_seconds")]


def report(results: list[dict]) -> str:
    rows = []
    for shape in sorted({r["shape"] for r in results}):
        by = {e: [r for r in results if r["shape"] == shape and r["engine"] == e] for e in ENGINES}
        for label, key in ROWS:
            values = {e: statistics.median(r[key] for r in runs) if runs else None for e, runs in by.items()}
            up, ours = values["upstream"], values["ours"]
            rows.append([f"{shape} {label}", *(f"{values[e]:.2f}" if values[e] is not None else "-" for e in ENGINES),
                         f"{ours / up:.2f}" if up and ours is not None else "-"])
    return table(["metric (median of runs)", *ENGINES, "ours/upstream"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="chain")
    parser.add_argument("--runs", type=int, default=3, help="runs per engine (alternated)")
    parser.add_argument("-n", type=int, default=20, help="JobFlows created at once")
    parser.add_argument("--cpu", type=int, default=32, help="the queue's capability, CPU")
    parser.add_argument("--run-for", default="10s", help="how long each pod runs (Go duration)")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    local = connect()
    ensure_priority_class(local)
    engines = args.engines.split(",")
    results, before = [], machine()
    for run in range(args.runs):
        for engine in engines if run % 2 == 0 else list(reversed(engines)):
            result = run_once(local, engine, shape=args.shape, n=args.n, cpu=args.cpu, run_for=args.run_for,
                              timeout=args.timeout)
            print(f"{args.shape} run {run + 1} {engine}: mean {result['mean']} p90 {result['p90']} max "
                  f"{result['max']} first {result['first']} makespan {result['makespan']} half-done "
                  f"{result['half_done_share']} (load {machine()['loadavg']})", flush=True)
            results.append(result)
    print(report(results))
    path = write_result(f"queued_flows-{args.shape}", {
        "benchmark": "queued_flows", "parameters": vars(args), "machine_before": before, "machine_after": machine(),
        "runs": results, "table": report(results)})
    print(f"-> {path}")


if __name__ == "__main__":
    main()
