"""What a 1,000-item fan-out costs the pure planner: time per plan and the size of the status it writes.

One JobFlow, one flow with ``forEach: {range: {count: N}, parallelism: P}``, driven to its end in memory (the
unit tests' ``scenario.Cluster``: each step plans, creates what the plan creates, then every live vcjob
completes). Reported: steps, total time, the slowest plan, and the JSON size of the final status, the figure that
must stay far below etcd's 1.5 MiB object limit. No cluster, no I/O: it shows what the core itself costs, before
any API request. The end-to-end run on the real control plane is still to be measured.

Run: ``.venv/bin/python -m benchmarks.fan_out_core [--items 1000] [--parallelism 50]``.
Writes ``benchmarks/results/fan_out_core.json``. A benchmark, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "unit")]  # scenario needs seeds

from jobflow_core.models import VcJobPhase  # noqa: E402
from scenario import Cluster, jobflow  # noqa: E402


def run(items: int, parallelism: int) -> dict:
    cluster = Cluster(jobflow(f"spec: {{flows: [{{name: s, forEach: {{range: {{count: {items}}}, "
                              f"parallelism: {parallelism}}}}}]}}"))
    plans: list[float] = []
    while True:
        start = time.perf_counter()
        result = cluster.step()
        plans.append(time.perf_counter() - start)
        live = [name for name, job in cluster.jobs.items() if job.phase is not VcJobPhase.COMPLETED]
        if not live and not result.creates:
            break
        for name in live:
            cluster.move_job(name, VcJobPhase.COMPLETED)
    status = json.dumps(cluster.flow.status.to_wire(), default=str, separators=(",", ":"))
    return {"items": items, "parallelism": parallelism, "phase": str(cluster.phase), "steps": len(plans),
            "total_seconds": round(sum(plans), 3), "slowest_plan_seconds": round(max(plans), 3),
            "status_bytes": len(status)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=50)
    args = parser.parse_args()
    figures = run(args.items, args.parallelism)
    print(json.dumps(figures, indent=2))
    out = ROOT / "benchmarks" / "results" / "fan_out_core.json"
    out.write_text(json.dumps({"figures": figures, "machine": {"python": sys.version.split()[0]}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
