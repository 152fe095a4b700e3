"""Deadlines that steer: late JobFlows with a ``spec.deadline`` on a busy Volcano queue, against the same without.

Why (issue 47): on a full queue, JobFlows start in the order they were created (:mod:`jobflow_core.queueing.line`),
so a JobFlow created late waits behind every earlier one however urgent it is. A deadline should let it go ahead,
without costing the others much. This measures whether it does, and what it costs.

The shape: :mod:`benchmarks.queued_flows`' ``chain`` (s1 -> s2 -> s3, each stage a gang of 4 pods x 2 CPU, running
``--run-for``, default 10s) on a Volcano queue capped at ``--cpu`` (default 32) CPU: 4 stages at once. Arms,
alternated per run: ``upstream`` (upstream's controller), ``ours`` (our engine, no deadlines), ``ours-deadlines``
(our engine, the late five with ``spec.deadline``). Per run, in a fresh namespace and queue:

1. warm-up: one chain ``warm``, waited for (and, for ours, each JobTemplate's ``status.durationP50Seconds``); its
   completion / 3 is ``stage_seconds``;
2. 15 chains f0..f14 at once (8 threads); when the first of their vcjobs is seen Running, 5 chains d0..d4 at once.
   Each d's deadline = its creation + 1.10 x its completion in an earliest-deadline-first schedule of all 20
   (:func:`edf_completions`), rounded up to the second; set as ``spec.deadline`` in ``ours-deadlines`` only, the
   others are measured against the same deadlines;
3. phases polled every 0.25 s until all 20 are ``Succeed``.

Reported per run: for the five, deadlines met (first seen ``Succeed`` at or before the deadline, wall clock) and
lateness; for all 20, mean and max completion (from each create call returning), the max of the 15 alone, the
makespan (first create of the 15 -> last Succeed) and the share of time half-done (as queued_flows). For ours, each
d's final ``status.deadline`` and its first-seen ``status.queue``. The summary is the median of runs per arm, with
ours-deadlines / ours for makespan and the max of the 15, and the targets (printed, never tuned for).

Run: ``.venv/bin/python -m benchmarks.deadline_flows [--runs 3] [--arms upstream,ours,ours-deadlines]`` on a running
``make cluster``. Results: ``results/deadline_flows.json``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import VcJobWatch, connect, create, machine, new_namespace, table, write_result
from benchmarks.queued_flows import (SHAPES, ensure_priority_class, jobflow_of, make_queue, phases, sat_half_done,
                                     stage_template)
from benchmarks.side_by_side import EngineApiServer, start_ours, start_upstream
from devcluster.processes import Component
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, QUEUE, ApiType

ARMS = ("upstream", "ours", "ours-deadlines")
CHAIN = SHAPES["chain"]["flows"]
EARLY, LATE = [f"f{i}" for i in range(15)], [f"d{i}" for i in range(5)]
SLACK = 1.10
"""A deadline is this many times the completion the earliest-deadline-first schedule gives."""
TARGETS = {"met": 4, "makespan_ratio": 1.05, "max_early_ratio": 1.15}


def edf_completions(early: int, late: list[str], *, arrival: float, slots: int, stage_seconds: float,
                    stages: int = 3) -> dict[str, float]:
    """Each late JobFlow's completion, from its arrival, in a non-preemptive earliest-deadline-first list schedule.

    Assumes: ``slots`` stages run at once, each takes ``stage_seconds``; a JobFlow is a chain of ``stages``, its next
    stage ready when the previous ends. ``early`` JobFlows are ready at 0 with no deadline (last; among them the
    started first, then creation order); the ``late`` ones arrive together at ``arrival`` with equal deadlines
    (ahead of every early one; among them by name). Whenever a slot frees, the first ready stage in that order
    starts. No overheads between stages, no preemption."""
    flows = [{"name": None, "order": i, "ready": 0.0, "done": 0} for i in range(early)]
    flows += [{"name": name, "order": i, "ready": arrival, "done": 0} for i, name in enumerate(sorted(late))]

    def rank(flow: dict) -> tuple[int, int, int]:
        if flow["name"] is not None:  # a late one: equal deadlines, by name
            return 0, 0, flow["order"]
        return 1, 0 if flow["done"] else 1, flow["order"]  # no deadline: started first, then creation order

    free = [0.0] * slots
    completions: dict[str, float] = {}
    while any(f["done"] < stages for f in flows):
        slot = min(range(slots), key=lambda s: (free[s], s))
        now = free[slot]
        pending = [f for f in flows if f["done"] < stages]
        ready = [f for f in pending if f["ready"] <= now]
        if not ready:  # the slot idles until a stage is ready
            free[slot] = min(f["ready"] for f in pending)
            continue
        flow = min(ready, key=rank)
        flow["done"] += 1
        flow["ready"] = free[slot] = now + stage_seconds
        if flow["done"] == stages and flow["name"] is not None:
            completions[flow["name"]] = float(flow["ready"] - arrival)
    return completions


def rfc3339(epoch: float) -> str:
    """A wall-clock time as RFC 3339 UTC, whole seconds, rounded up."""
    return datetime.fromtimestamp(math.ceil(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_alive(components: list[Component]) -> None:
    for component in components:
        if not component.alive():
            raise RuntimeError(f"{component.name} exited:\n{component.log_tail()}")


def wait_until(what: str, test: Callable[[], bool], components: list[Component], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {timeout:.0f} s")
        check_alive(components)
        time.sleep(0.25)


def statuses(local: LocalCluster, namespace: str, api_type: ApiType) -> dict[str, dict]:
    """Each object's ``status`` by name."""
    items = local.custom.list_namespaced_custom_object(api_type.group, api_type.version, namespace,
                                                       api_type.plural)["items"]
    return {i["metadata"]["name"]: i.get("status") or {} for i in items}


def run_once(local: LocalCluster, arm: str, *, cpu: int, run_for: str, timeout: float) -> dict:
    log_dir = Path(tempfile.mkdtemp(prefix=f"deadline-{arm}-"))
    namespace = new_namespace(local, f"dl-{arm}")
    queue = f"q-{namespace}"
    make_queue(local, queue, cpu)
    server = EngineApiServer(local, log_dir)
    components: list[Component] = []
    watcher = None
    try:
        for stage, _, pods in CHAIN:
            create(local, namespace, stage_template(stage, pods=pods, queue=queue, run_for=run_for))
        components = start_upstream(local, server, log_dir) if arm == "upstream" else \
            start_ours(local, server, log_dir)
        time.sleep(3)  # informers synced, the templates' announcements through
        watcher = VcJobWatch(local, namespace)

        # 1. warm-up: stage_seconds, and (ours) the templates' statistics
        create(local, namespace, jobflow_of("warm", CHAIN))
        warm_created = time.monotonic()

        def warm_done() -> bool:
            phase = phases(local, namespace).get("warm")
            if phase == "Failed":
                raise RuntimeError(f"{arm}: JobFlow warm Failed")
            return phase == "Succeed"

        wait_until(f"{arm}: warm Succeed", warm_done, components, timeout)
        warm_completion = time.monotonic() - warm_created
        stage_seconds = warm_completion / len(CHAIN)
        seen = [(watcher.seen(f"warm-{s}", "Running"), watcher.seen(f"warm-{s}", "Completed")) for s, _, _ in CHAIN]
        spans = [completed[0] - running[0] for running, completed in seen if running and completed]  # for the record
        templates_p50: dict[str, int | None] = {}
        if arm != "upstream":
            def p50s() -> bool:
                found = statuses(local, namespace, JOBTEMPLATE)
                templates_p50.update({s: found.get(s, {}).get("durationP50Seconds") for s, _, _ in CHAIN})
                return all(v is not None for v in templates_p50.values())

            wait_until(f"{arm}: JobTemplates' durationP50Seconds", p50s, components, 60)
        # 2. the 15, then (once the line is established) the 5
        created: dict[str, float] = {}

        def make(name: str, body: dict) -> None:
            create(local, namespace, body)
            created[name] = time.monotonic()

        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda name: make(name, jobflow_of(name, CHAIN)), EARLY))
        wait_until(f"{arm}: a vcjob of the 15 Running",
                   lambda: any(watcher.seen(f"{n}-{CHAIN[0][0]}", "Running") for n in EARLY),
                   components, timeout)
        arrival, late_wall = time.monotonic() - started, time.time()
        edf = edf_completions(len(EARLY), LATE, arrival=arrival, slots=cpu // 8, stage_seconds=stage_seconds)
        deadlines = {name: math.ceil(late_wall + SLACK * edf[name]) for name in LATE}
        bodies = {name: jobflow_of(name, CHAIN) for name in LATE}
        for name, body in bodies.items() if arm == "ours-deadlines" else ():
            body["spec"]["deadline"] = rfc3339(deadlines[name])
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda name: make(name, bodies[name]), LATE))

        # 3. until all 20 Succeed
        names = EARLY + LATE
        done: dict[str, tuple[float, float]] = {}  # first seen Succeed: (monotonic, wall clock)
        first_queue: dict[str, dict] = {}
        end = time.monotonic() + timeout
        while len(done) < len(names):
            now = (time.monotonic(), time.time())
            if now[0] > end:
                raise TimeoutError(f"{arm}: {len(names) - len(done)} JobFlows not Succeed after {timeout:.0f} s")
            for name, phase in phases(local, namespace).items():
                if phase == "Succeed" and name != "warm":
                    done.setdefault(name, now)
                elif phase == "Failed":
                    raise RuntimeError(f"{arm}: JobFlow {name} Failed")
            if arm != "upstream" and len(first_queue) < len(LATE):
                for name, status in statuses(local, namespace, JOBFLOW).items():
                    if name in LATE and status.get("queue"):
                        first_queue.setdefault(name, status["queue"])
            check_alive(components)
            time.sleep(0.25)
        final = statuses(local, namespace, JOBFLOW)
    finally:
        for component in reversed(components):
            component.stop()
        if watcher is not None:
            watcher.stop()
        server.stop()
    completion = {name: done[name][0] - created[name] for name in names}
    half_done = sum(sat_half_done(watcher, [f"{name}-{s}" for s, _, _ in CHAIN], end=done[name][0])
                    for name in names)
    local.delete_namespace(namespace)
    local.custom.delete_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, queue)
    lateness = {name: round(max(0.0, done[name][1] - deadlines[name]), 2) for name in LATE}
    values = list(completion.values())
    return {
        "arm": arm, "cpu": cpu, "run_for": run_for, "namespace": namespace, "log_dir": str(log_dir),
        "stage_seconds": round(stage_seconds, 2), "warm_completion": round(warm_completion, 2),
        "warm_stage_running_seconds": [round(s, 2) for s in spans], "templates_p50": templates_p50,
        "arrival": round(arrival, 2), "edf_completion": {k: round(v, 2) for k, v in edf.items()},
        "deadlines": {name: rfc3339(deadlines[name]) for name in LATE}, "deadline_set": arm == "ours-deadlines",
        "completion_seconds": {k: round(v, 2) for k, v in completion.items()},
        "lateness": lateness, "met": sum(v == 0 for v in lateness.values()),
        "total_lateness": round(sum(lateness.values()), 2),
        "mean": round(statistics.mean(values), 2), "max": round(max(values), 2),
        "max_early": round(max(completion[n] for n in EARLY), 2),
        "makespan": round(max(t for t, _ in done.values()) - started, 2),
        "half_done_share": round(half_done / sum(values), 3),
        "status_deadline": {n: final.get(n, {}).get("deadline") for n in LATE}, "first_queue": first_queue,
        "late_stages": {f"{n}-{s}": [round(t[0] - started, 1) if t else None for t in (
            watcher.seen(f"{n}-{s}", "Running"), watcher.seen(f"{n}-{s}", "Completed"))]
            for n in LATE for s, _, _ in CHAIN},
    }


ROWS = [("met of 5", "met"), ("total lateness (s)", "total_lateness"), ("mean completion (s)", "mean"),
        ("max completion (s)", "max"), ("max completion of the 15 (s)", "max_early"), ("makespan (s)", "makespan"),
        ("share of time half-done", "half_done_share")]


def medians(results: list[dict]) -> dict[str, dict[str, float | None]]:
    by = {a: [r for r in results if r["arm"] == a] for a in ARMS}
    return {a: {key: statistics.median(r[key] for r in runs) if runs else None for _, key in ROWS}
            for a, runs in by.items()}


def verdicts(results: list[dict]) -> list[dict]:
    """Each target with its value (None when an arm is missing) and whether it is met."""
    m = medians(results)
    ours, steered = m["ours"], m["ours-deadlines"]
    ratios = {k: round(steered[k] / ours[k], 3) if ours[k] and steered[k] is not None else None
              for k in ("makespan", "max_early")}
    found = [("ours-deadlines met of 5", steered["met"], ">=", TARGETS["met"]),
             ("makespan ours-deadlines/ours", ratios["makespan"], "<=", TARGETS["makespan_ratio"]),
             ("max of the 15 ours-deadlines/ours", ratios["max_early"], "<=", TARGETS["max_early_ratio"])]
    return [{"target": label, "value": value, "wanted": f"{op} {bound}",
             "met": None if value is None else value >= bound if op == ">=" else value <= bound}
            for label, value, op, bound in found]


def report(results: list[dict]) -> str:
    m = medians(results)
    rows = [[label, *(f"{m[a][key]:.2f}" if m[a][key] is not None else "-" for a in ARMS)] for label, key in ROWS]
    lines = [table(["metric (median of runs)", *ARMS], rows), "", "targets (issue 47; reported, never tuned for):"]
    for v in verdicts(results):
        lines.append(f"  {v['target']}: {'-' if v['value'] is None else v['value']} (target {v['wanted']}): "
                     f"{'-' if v['met'] is None else 'met' if v['met'] else 'NOT met'}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per arm (alternated)")
    parser.add_argument("--cpu", type=int, default=32, help="the queue's capability, CPU")
    parser.add_argument("--run-for", default="10s", help="how long each pod runs (Go duration)")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    arms = args.arms.split(",")
    unknown = set(arms) - set(ARMS)
    if unknown:
        parser.error(f"unknown arms {sorted(unknown)}; known: {', '.join(ARMS)}")
    local = connect()
    ensure_priority_class(local)
    results, before = [], machine()
    for run in range(args.runs):
        for arm in arms if run % 2 == 0 else list(reversed(arms)):
            result = run_once(local, arm, cpu=args.cpu, run_for=args.run_for, timeout=args.timeout)
            print(f"run {run + 1} {arm}: met {result['met']}/5 lateness {result['total_lateness']} mean "
                  f"{result['mean']} max {result['max']} max-of-15 {result['max_early']} makespan "
                  f"{result['makespan']} half-done {result['half_done_share']} stage {result['stage_seconds']} "
                  f"(load {machine()['loadavg']})", flush=True)
            results.append(result)
    print(report(results))
    path = write_result("deadline_flows", {
        "benchmark": "deadline_flows", "parameters": {**vars(args), "slack": SLACK, "targets": TARGETS},
        "machine_before": before, "machine_after": machine(), "runs": results, "table": report(results),
        "targets": verdicts(results)})
    print(f"-> {path}")


if __name__ == "__main__":
    main()
