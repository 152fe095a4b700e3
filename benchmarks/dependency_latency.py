"""Dependency latency with the real processes: from a target vcjob becoming ``Completed`` to its dependent existing.

Set-up, in a fresh namespace: the Procfile's ``web`` command (gunicorn, one worker) on a free port and its
``eventsource`` command (``NAMESPACES`` = that namespace, ``K_SINK`` = that handler), 21 one-pod JobTemplates
``f00``..``f20`` (``kwok.jobflow.dev/run-for`` 200ms), and ``--flows`` JobFlows ``c0``, ``c1``, ... each a chain
f00 -> f01 -> ... -> f20, all created at once. Every chain gives 20 samples.

Measured by a watch on the namespace's vcjobs (this process, local monotonic clock): the time a vcjob's event first
shows phase ``Completed``, and the time its dependent's ``ADDED`` event arrives. The handler's own log (its
``event ...`` line when a request comes in, millisecond timestamps) splits each sample in two: until the handler
received an event for the completed vcjob (watch fan-out, the event source's queue and its POST), and from there
to the dependent appearing (the reconcile up to the create call, plus the watch delivering ADDED).

Run: ``.venv/bin/python -m benchmarks.dependency_latency [--flows 6] [--length 21] [--run-for 200ms]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (VcJobWatch, chain_jobflow, connect, create, job_template, machine, new_namespace,
                               procfile_command, spawn, summary_ms, table, wait_healthy, write_result)
from devcluster.processes import free_port

LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) handlers "
                      r"(?:event (\S+) (\w+) ([^/\s]+)/(\S+)|reconciled [^:]+: .*created=\[([^\]]*)\])")


@dataclass
class HandlerLog:
    """What the handler's log says: when each event arrived (and for which JobFlow), and how long the handler was
    busy. The event source POSTs one event at a time, so requests do not overlap and a request ends with the last
    ``reconciled`` line before the next ``event`` line."""

    arrivals: dict[str, list[float]] = field(default_factory=dict)  # JobFlow -> wall times its events arrived
    created: set[str] = field(default_factory=set)  # vcjobs this handler created
    kinds: Counter = field(default_factory=Counter)
    handling: dict[str, list[float]] = field(default_factory=dict)  # event kind -> seconds per request


def parse_handler_log(path: Path) -> HandlerLog:
    log = HandlerLog()
    current: tuple[str, float] | None = None
    last_line = 0.0
    for line in path.read_text(errors="replace").splitlines():
        match = LOG_LINE.match(line)
        if not match:
            continue
        stamp, millis, event_type, kind, _namespace, name, made = match.groups()
        wall = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000
        if event_type:
            if current is not None:
                log.handling.setdefault(current[0], []).append(last_line - current[1])
            current, last_line = (kind, wall), wall
            log.kinds[f"{kind} {event_type.rsplit('.', 1)[1]}"] += 1
            # Our vcjobs are named <jobflow>-<flow> and flows here have no dash: either names its JobFlow.
            jobflow = name.rsplit("-", 1)[0] if kind == "Job" else name
            log.arrivals.setdefault(jobflow, []).append(wall)
        else:
            last_line = wall
            if made:
                log.created.update(n.strip(" '") for n in made.split(","))
    return log


def run(*, flows: int = 6, length: int = 21, run_for: str = "200ms", timeout: float = 900) -> dict:
    local = connect()
    before = machine()
    namespace = new_namespace(local, "bench-dep")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-dep-"))
    port = free_port()
    env = {"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig)}
    names = [f"f{i:02d}" for i in range(length)]
    web = spawn("web", procfile_command("web"), log_dir=log_dir, env=env)
    source = watcher = None
    try:
        wait_healthy(f"http://127.0.0.1:{port}/", web)
        for name in names:
            create(local, namespace, job_template(name, run_for=run_for))
        watcher = VcJobWatch(local, namespace)
        source = spawn("eventsource", procfile_command("eventsource"), log_dir=log_dir,
                       env={**env, "NAMESPACES": namespace})
        time.sleep(2)  # its first lists and watches are open; the template announcements are through
        started = time.monotonic()
        for j in range(flows):
            create(local, namespace, chain_jobflow(f"c{j}", names))
        watcher.wait_for([f"c{j}-{names[-1]}" for j in range(flows)], "Completed", timeout=timeout)
        wall_seconds = time.monotonic() - started
        time.sleep(1)  # let the last log lines reach the file
    finally:
        for component in (source, web):
            if component is not None:
                component.stop()
        if watcher is not None:
            watcher.stop()
        local.delete_namespace(namespace)

    log = parse_handler_log(log_dir / "web.log")
    total, to_handler, in_handler, run_times = [], [], [], []
    in_flight = 0
    for j in range(flows):
        arrivals = sorted(log.arrivals.get(f"c{j}", []))
        for target, dependent in zip(names, names[1:]):
            done = watcher.seen(f"c{j}-{target}", "Completed")
            added = watcher.seen(f"c{j}-{dependent}", "ADDED")
            total.append(added[0] - done[0])
            # The reconcile that created the dependent was started by the last event about this JobFlow that
            # reached the handler before the dependent appeared. If that came before the target completed, a
            # reconcile already under way saw the completion (counted, but not split).
            i = bisect_right(arrivals, added[1])
            if i and arrivals[i - 1] >= done[1] - 0.002:
                to_handler.append(max(0.0, arrivals[i - 1] - done[1]))
                in_handler.append(added[1] - arrivals[i - 1])
            else:
                in_flight += 1
        for name in names:
            added, done = watcher.seen(f"c{j}-{name}", "ADDED"), watcher.seen(f"c{j}-{name}", "Completed")
            run_times.append(done[0] - added[0])
    dependents = [f"c{j}-{n}" for j in range(flows) for n in names[1:]]
    return {
        "benchmark": "dependency_latency",
        "parameters": {"flows": flows, "length": length, "run_for": run_for, "web": procfile_command("web")},
        "machine_before": before, "machine_after": machine(),
        "dependency_latency_ms": summary_ms(total),
        "completed_to_event_at_handler_ms": summary_ms(to_handler),
        "event_at_handler_to_dependent_added_ms": summary_ms(in_handler),
        "samples_seen_by_a_reconcile_already_under_way": in_flight,
        "handling_per_event_ms": summary_ms(sum(log.handling.values(), [])),
        "handling_per_event_ms_by_kind": {k: summary_ms(v) for k, v in sorted(log.handling.items())},
        "handler_busy_fraction": round(sum(map(sum, log.handling.values())) / wall_seconds, 2),
        "vcjob_added_to_completed_ms": summary_ms(run_times),
        "dependents_created_by_this_handler": sum(d in log.created for d in dependents),
        "dependents": len(dependents),
        "wall_seconds": round(wall_seconds, 1),
        "events_handled": dict(log.kinds),
        "handler_log": str(log_dir / "web.log"),
    }


def report(result: dict) -> str:
    rows = [[label, *(result[key].get(f, "-") for f in ("n", "p50", "p90", "p99", "max"))] for label, key in (
        ("dependency latency (Completed -> dependent ADDED)", "dependency_latency_ms"),
        ("  Completed -> vcjob event at the handler", "completed_to_event_at_handler_ms"),
        ("  event at the handler -> dependent ADDED", "event_at_handler_to_dependent_added_ms"),
        ("vcjob ADDED -> Completed (Volcano + kwok)", "vcjob_added_to_completed_ms"),
        ("handler: time per event (from its log)", "handling_per_event_ms"))]
    rows += [[f"  {kind} events", *(s.get(f, "-") for f in ("n", "p50", "p90", "p99", "max"))]
             for kind, s in result["handling_per_event_ms_by_kind"].items()]
    events = sum(result["events_handled"].values())
    return (table(["ms", "n", "p50", "p90", "p99", "max"], rows) +
            f"\n{result['parameters']['flows']} chains of {result['parameters']['length']} in "
            f"{result['wall_seconds']} s; {events} events handled, handler busy "
            f"{result['handler_busy_fraction']:.0%} of the time; "
            f"{result['dependents_created_by_this_handler']}/{result['dependents']} dependents created by this "
            f"handler; load {result['machine_before']['loadavg']} -> {result['machine_after']['loadavg']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=6, help="JobFlows (chains) run at the same time")
    parser.add_argument("--length", type=int, default=21, help="flows per chain")
    parser.add_argument("--run-for", default="200ms", help="how long each pod runs (Go duration)")
    args = parser.parse_args()
    result = run(flows=args.flows, length=args.length, run_for=args.run_for)
    print(report(result))
    print(f"-> {write_result(f'dependency_latency-{args.flows}x{args.length}', result)}")


if __name__ == "__main__":
    main()
