"""How long the control plane alone takes to run a one-pod vcjob to ``Completed`` (no JobFlow, no handler).

This is the floor under every JobFlow step: Volcano's webhook admits the vcjob, its job controller makes the
PodGroup, the scheduler (``schedule-period`` 500ms) binds the pod to a kwok node, kwok runs it for
``kwok.jobflow.dev/run-for`` and marks it Succeeded, and the job controller moves the vcjob to Completed.

In a fresh namespace, ``--runs`` vcjobs per setting are created one after another, each measured from just before
its create call to the moment a watch on the namespace's vcjobs (this process) first shows it ``Completed``; the
times it was first seen ``Pending`` and ``Running`` split that up. Two settings: ``run-for: 0s`` and no annotation
(kwok's default, 1s).

Run: ``.venv/bin/python -m benchmarks.control_plane [--runs 20]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import VcJobWatch, connect, create, machine, new_namespace, summary_ms, table, vcjob, \
    write_result

SETTINGS = {"run-for 0s": "0s", "default (1s)": None}


def run(*, runs: int = 20, timeout: float = 60) -> dict:
    local = connect()
    before = machine()
    namespace = new_namespace(local, "bench-cp")
    watcher = VcJobWatch(local, namespace)
    results = {}
    try:
        for label, run_for in SETTINGS.items():
            total, to_running, running_to_done = [], [], []
            for i in range(runs):
                name = f"{'zero' if run_for else 'default'}-{i:02d}"
                started = time.monotonic()
                create(local, namespace, vcjob(name, run_for=run_for))
                watcher.wait_for([name], "Completed", timeout=timeout)
                done = watcher.seen(name, "Completed")[0]
                running = watcher.seen(name, "Running")
                total.append(done - started)
                if running is not None:  # a job can go straight to Completed between two watch events
                    to_running.append(running[0] - started)
                    running_to_done.append(done - running[0])
            results[label] = {"create_to_completed_ms": summary_ms(total),
                              "create_to_running_ms": summary_ms(to_running),
                              "running_to_completed_ms": summary_ms(running_to_done)}
    finally:
        watcher.stop()
        local.delete_namespace(namespace)
    return {"benchmark": "control_plane", "parameters": {"runs": runs}, "machine_before": before,
            "machine_after": machine(), "settings": results}


def report(result: dict) -> str:
    rows = []
    for label, r in result["settings"].items():
        for what in ("create_to_completed_ms", "create_to_running_ms", "running_to_completed_ms"):
            s = r[what]
            rows.append([label if what.startswith("create_to_c") else "", what[:-3].replace("_", " "),
                         s.get("n"), s.get("p50"), s.get("p90"), s.get("min"), s.get("max")])
    return (table(["vcjob", "ms", "n", "p50", "p90", "min", "max"], rows) +
            f"\nload {result['machine_before']['loadavg']} -> {result['machine_after']['loadavg']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="vcjobs per setting, one after another")
    args = parser.parse_args()
    result = run(runs=args.runs)
    print(report(result))
    print(f"-> {write_result('control_plane', result)}")


if __name__ == "__main__":
    main()
