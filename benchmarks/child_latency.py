"""Child JobFlow latency with the real processes: from a child JobFlow's ``Succeed`` to its parent's next vcjob
existing, against a vcjob flow's ``Completed`` -> its dependent existing, in the same run.

Set-up, as :mod:`benchmarks.dependency_latency`, in a fresh namespace: the Procfile's ``web`` command (gunicorn, one
worker) on a free port and its ``eventsource`` command (``NAMESPACES`` = that namespace, ``K_SINK`` = that handler);
one-pod JobTemplates ``step``, ``a`` and ``d`` (``kwok.jobflow.dev/run-for`` 200ms) and the JobFlowTemplate
``unit`` whose JobFlow is the one flow ``step``. Each round creates, interleaved and all at once, ``--flows``
parents ``r<k>p<i>`` (``c``: ``jobFlow: {template: unit}``, then ``d`` depending on ``c``) and as many plain
JobFlows ``r<k>v<i>`` (``a``, then ``d`` depending on ``a``); the next round starts when every ``d`` Completed.

Measured by two watches on the namespace (this process, local monotonic clock; each records the time a thing is
*first* seen):

* **child**: the child JobFlow ``r<k>p<i>-c`` first shown with ``status.state.phase: Succeed`` -> the parent's
  vcjob ``r<k>p<i>-d`` ``ADDED``. The child's status carries no transition time of its own (its record's
  ``endTimestamp`` is its vcjob's end, in whole seconds), so the watch's time is the moment it ended;
* **vcjob flow**: ``r<k>v<i>-a`` first shown ``Completed`` -> ``r<k>v<i>-d`` ``ADDED``, as dependency_latency measures;
* and around the child: its vcjob ``r<k>p<i>-c-step`` ``Completed`` -> the child ``Succeed`` (the child's own
  reconcile, started by that vcjob's event), and ``step`` Completed -> ``d`` ADDED (the whole level of nesting).

The handler's log (its ``event ...`` line when a request comes in, millisecond timestamps) splits the vcjob flow's
sample, and the child's vcjob ``Completed`` -> ``Succeed``, in two, as dependency_latency does: until the handler
received an event about that JobFlow (the event source's queue), and from there. It also gives the reconciles per
JobFlow and where each read its JobFlow from (``from snapshot``: the event's signed snapshot, no read; ``from api``).

The child's ``Succeed`` and the parent's next vcjob are written by the same request (``handlers/dispatch.py``,
``_parents``): the child's reconcile writes its status, then the parent is reconciled and creates ``d``. The handler's
log says whether that happened (:func:`made_with_the_child`): the last line about the parent or the child before
its ``reconciled NS/<parent> ... created=['<parent>-d']`` line is the child's ``reconciled NS/<parent>-c ...
phase=Succeed ... status_written=True`` (a request prints its lines one after the other when it ends), or ``d`` was
created by some other request. The two watches are two streams from the same API server:
a child's ``Succeed`` may reach this process a little after ``d``'s ``ADDED`` (a negative sample, kept as measured).

Run: ``.venv/bin/python -m benchmarks.child_latency [--flows 20] [--rounds 3] [--run-for 200ms]`` (about a minute
at the defaults) -> ``results/child_latency-<flows>x<rounds>.json``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (REPO, VcJobWatch, chain_jobflow, connect, create, job_template, machine, new_namespace,
                               procfile_command, spawn, summary_ms, table, wait_healthy, write_result)
from devcluster.processes import free_port
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE

RECONCILED = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) handlers reconciled ([^/\s]+)/(\S+) from ([^:]+): "
                        r"phase=(\S+) created=\[([^\]]*)\] deleted=\[[^\]]*\] status_written=(\w+)")
PARENT = re.compile(r"r\d+p\d+")
EVENT = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) handlers event (\S+) (\w+) ([^/\s]+)/(\S+)")


def unit_template(step: str) -> dict:
    """The JobFlowTemplate ``unit``: a JobFlow of the one flow ``step``."""
    return {"apiVersion": JOBFLOWTEMPLATE.api_version, "kind": JOBFLOWTEMPLATE.kind, "metadata": {"name": "unit"},
            "spec": {"jobFlow": {"spec": {"flows": [{"name": step}]}}}}


def parent_jobflow(name: str) -> dict:
    """``c`` (a child made from ``unit``), then ``d``."""
    return {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind, "metadata": {"name": name},
            "spec": {"jobRetainPolicy": "retain", "flows": [
                {"name": "c", "jobFlow": {"template": "unit"}},
                {"name": "d", "dependsOn": {"targets": ["c"]}}]}}


@dataclass
class HandlerLog:
    """What the handler's log says: every ``reconciled`` line in order, and the events per kind."""

    reconciled: list[tuple[float, str, str, list[str], bool]] = field(default_factory=list)
    """(wall time, JobFlow, phase, vcjobs/children created, status written)."""
    sources: Counter = field(default_factory=Counter)
    """(parent, child or plain, where the reconcile read the JobFlow from: snapshot or api) -> reconciles."""
    arrivals: dict[str, list[float]] = field(default_factory=dict)
    """JobFlow -> wall times events about it (or about one of its vcjobs) reached the handler, in order."""
    events: Counter = field(default_factory=Counter)


def parse_handler_log(path: Path, namespace: str) -> HandlerLog:
    log = HandlerLog()
    for line in path.read_text(errors="replace").splitlines():
        if match := EVENT.match(line):
            stamp, millis, event_type, kind, space, name = match.groups()
            if space == namespace:
                log.events[f"{kind} {event_type.rsplit('.', 1)[1]}"] += 1
                # vcjobs are named <JobFlow>-<flow>, and flows here have no dash: either names its JobFlow
                jobflow = name.rsplit("-", 1)[0] if kind == "Job" else name
                log.arrivals.setdefault(jobflow, []).append(wall_time(stamp, millis))
        elif match := RECONCILED.match(line):
            stamp, millis, space, name, source, phase, made, written = match.groups()
            if space != namespace:
                continue
            log.sources[(kind_of(name), source)] += 1
            wall = wall_time(stamp, millis)
            log.reconciled.append((wall, name, phase, [n.strip(" '") for n in made.split(",") if n.strip()],
                                   written == "True"))
    return log


def kind_of(jobflow: str) -> str:
    return "child" if jobflow.endswith("-c") else "parent" if PARENT.fullmatch(jobflow) else "plain"


def other_test_runs() -> list[str]:
    """Tests running on the machine meanwhile (pytest, or a script under ``tests/``): they share its 2 cores, and
    their own control planes, not ours."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if entry.name.isdigit() and cmd.startswith((".venv/bin/python", sys.executable)) \
                and ("pytest" in cmd or " tests/" in cmd):
            found.append(f"{entry.name}: {cmd[-90:]}")
    return sorted(found)


def head() -> str:
    """The commit measured, ``+edits`` when the tree has uncommitted changes to the handler's or the core's code."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    edited = git("status", "--porcelain", "--", "handlers", "jobflow_core", "apiclient", "eventsource")
    return git("rev-parse", "--short", "HEAD") + ("+edits" if edited else "")


def wall_time(stamp: str, millis: str) -> float:
    return time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000


def split(log: HandlerLog, jobflow: str, done: tuple[float, float],
          then: tuple[float, float]) -> tuple[float, float] | None:
    """``done`` -> ``then`` (watch times) in two at the event that started the reconcile: the last event about
    ``jobflow`` that reached the handler before ``then``. None when that event came before ``done``: a reconcile
    already under way saw it (counted, not split). As in :mod:`benchmarks.dependency_latency`."""
    arrivals = log.arrivals.get(jobflow, [])
    i = bisect_right(arrivals, then[1])
    if i and arrivals[i - 1] >= done[1] - 0.002:
        return max(0.0, arrivals[i - 1] - done[1]), then[1] - arrivals[i - 1]
    return None


def made_with_the_child(log: HandlerLog, parent: str) -> bool:
    """Whether the parent's ``d`` was created by the request whose child reconcile wrote ``Succeed``: the last line
    about the child or the parent before the one that created ``d`` is that write (a request prints its lines one
    after the other when it ends; another thread's may come between, and a busy machine may hold the thread up
    between two of them for tens of milliseconds)."""
    for i, line in enumerate(log.reconciled):
        if line[1] == parent and f"{parent}-d" in line[3]:
            before = next((b for b in reversed(log.reconciled[:i]) if b[1] in (parent, f"{parent}-c")), None)
            return before is not None and before[1:3] == (f"{parent}-c", "Succeed") and before[4]
    return False


def run(*, flows: int = 20, rounds: int = 3, run_for: str = "200ms", timeout: float = 300) -> dict:
    local = connect()
    before, tests_before, commit = machine(), other_test_runs(), head()
    namespace = new_namespace(local, "bench-child")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-child-"))
    port = free_port()
    env = {"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig)}
    web = spawn("web", procfile_command("web"), log_dir=log_dir, env=env)
    parents = [[f"r{k}p{i:02d}" for i in range(flows)] for k in range(rounds)]
    plain = [[f"r{k}v{i:02d}" for i in range(flows)] for k in range(rounds)]
    source = jobs = jobflows = None
    round_seconds = []
    try:
        wait_healthy(f"http://127.0.0.1:{port}/", web)
        for name in ("step", "a", "d"):
            create(local, namespace, job_template(name, run_for=run_for))
        create(local, namespace, unit_template("step"))
        jobs, jobflows = VcJobWatch(local, namespace), VcJobWatch(local, namespace, JOBFLOW)
        source = spawn("eventsource", procfile_command("eventsource"), log_dir=log_dir,
                       env={**env, "NAMESPACES": namespace})
        time.sleep(2)  # its first lists and watches are open; the template announcements are through
        for k in range(rounds):
            started = time.monotonic()
            for p, v in zip(parents[k], plain[k]):
                create(local, namespace, parent_jobflow(p))
                create(local, namespace, chain_jobflow(v, ["a", "d"]))
            jobs.wait_for([f"{n}-d" for n in parents[k] + plain[k]], "Completed", timeout=timeout)
            round_seconds.append(round(time.monotonic() - started, 1))
        time.sleep(1)  # let the last log lines reach the file
    finally:
        for component in (source, web):
            if component is not None:
                component.stop()
        for watcher in (jobs, jobflows):
            if watcher is not None:
                watcher.stop()
        local.delete_namespace(namespace)

    log = parse_handler_log(log_dir / "web.log", namespace)
    child, vcjob_flow, child_own, step_to_next = [], [], [], []
    splits = {"vcjob flow": [], "child": []}  # (until the event reached the handler, from there), or None
    for p in sum(parents, []):
        succeed, step_done = jobflows.seen(f"{p}-c", "Succeed"), jobs.seen(f"{p}-c-step", "Completed")
        added = jobs.seen(f"{p}-d", "ADDED")
        child.append(added[0] - succeed[0])
        child_own.append(succeed[0] - step_done[0])
        step_to_next.append(added[0] - step_done[0])
        splits["child"].append(split(log, f"{p}-c", step_done, succeed))
    for v in sum(plain, []):
        done, added = jobs.seen(f"{v}-a", "Completed"), jobs.seen(f"{v}-d", "ADDED")
        vcjob_flow.append(added[0] - done[0])
        splits["vcjob flow"].append(split(log, v, done, added))
    in_same_request = sum(made_with_the_child(log, p) for p in sum(parents, []))
    per_jobflow = Counter(kind_of(name) for _, name, _, _, _ in log.reconciled)
    result = {
        "benchmark": "child_latency",
        "parameters": {"flows": flows, "rounds": rounds, "run_for": run_for, "web": procfile_command("web")},
        "head": commit if commit == head() else f"{commit}, then {head()}",
        "machine_before": before, "machine_after": machine(),
        "child_succeed_to_next_vcjob_added_ms": summary_ms(child),
        "vcjob_completed_to_next_vcjob_added_ms": summary_ms(vcjob_flow),
        "child_vcjob_completed_to_child_succeed_ms": summary_ms(child_own),
        "child_vcjob_completed_to_next_vcjob_added_ms": summary_ms(step_to_next),
        "vcjob_completed_to_event_at_handler_ms": summary_ms([s[0] for s in splits["vcjob flow"] if s]),
        "event_at_handler_to_next_vcjob_added_ms": summary_ms([s[1] for s in splits["vcjob flow"] if s]),
        "child_vcjob_completed_to_event_at_handler_ms": summary_ms([s[0] for s in splits["child"] if s]),
        "event_at_handler_to_child_succeed_ms": summary_ms([s[1] for s in splits["child"] if s]),
        "samples_seen_by_a_reconcile_already_under_way": {kind: found.count(None) for kind, found in splits.items()},
        "next_vcjob_made_in_the_request_that_wrote_the_child_succeed": in_same_request,
        "parents": len(child),
        "reconciles_per_jobflow": {kind: round(count / (len(child) if kind != "plain" else len(vcjob_flow)), 1)
                                   for kind, count in sorted(per_jobflow.items())},
        "reconciles_by_source": {f"{kind} from {source}": count for (kind, source), count in
                                 sorted(log.sources.items())},
        "events_handled": dict(log.events),
        "other_test_runs": {"before": tests_before, "after": other_test_runs()},
        "round_seconds": round_seconds,
        "handler_log": str(log_dir / "web.log"),
    }
    for key, over in (("ratio_p50_p90_max", "child_succeed_to_next_vcjob_added_ms"),
                      ("ratio_whole_level_p50_p90_max", "child_vcjob_completed_to_next_vcjob_added_ms")):
        result[key] = [round(result[over][f] / result["vcjob_completed_to_next_vcjob_added_ms"][f], 2)
                       for f in ("p50", "p90", "max")]
    return result


def report(result: dict) -> str:
    fields = ("n", "p50", "p90", "p99", "max", "min")
    rows = [[label, *(result[key].get(f, "-") for f in fields)] for label, key in (
        ("child Succeed -> parent's next vcjob ADDED", "child_succeed_to_next_vcjob_added_ms"),
        ("vcjob Completed -> dependent ADDED (vcjob flow)", "vcjob_completed_to_next_vcjob_added_ms"),
        ("  Completed -> vcjob event at the handler", "vcjob_completed_to_event_at_handler_ms"),
        ("  event at the handler -> dependent ADDED", "event_at_handler_to_next_vcjob_added_ms"),
        ("child's vcjob Completed -> child Succeed", "child_vcjob_completed_to_child_succeed_ms"),
        ("  Completed -> vcjob event at the handler", "child_vcjob_completed_to_event_at_handler_ms"),
        ("  event at the handler -> child Succeed", "event_at_handler_to_child_succeed_ms"),
        ("child's vcjob Completed -> parent's next vcjob ADDED", "child_vcjob_completed_to_next_vcjob_added_ms"))]
    parameters = result["parameters"]
    return (table(["ms", *fields], rows) +
            f"\nratio child / vcjob flow (p50, p90, max): {result['ratio_p50_p90_max']}; whole level (child's vcjob "
            f"Completed -> next): {result['ratio_whole_level_p50_p90_max']}"
            f"\n{parameters['rounds']} rounds of {parameters['flows']} parents + {parameters['flows']} plain "
            f"JobFlows, {result['round_seconds']} s each; next vcjob made in the request that wrote the child's "
            f"Succeed: {result['next_vcjob_made_in_the_request_that_wrote_the_child_succeed']}/{result['parents']}; "
            f"reconciles per JobFlow {result['reconciles_per_jobflow']}, {result['reconciles_by_source']}; "
            f"load {result['machine_before']['loadavg']} -> {result['machine_after']['loadavg']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=20, help="parents (and as many plain JobFlows) per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, one after another")
    parser.add_argument("--run-for", default="200ms", help="how long each pod runs (Go duration)")
    args = parser.parse_args()
    result = run(flows=args.flows, rounds=args.rounds, run_for=args.run_for)
    print(report(result))
    print(f"-> {write_result(f'child_latency-{args.flows}x{args.rounds}', result)}")


if __name__ == "__main__":
    main()
