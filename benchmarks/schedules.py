"""What one look at a JobFlowTemplate costs the pure core: ``plan_schedule`` for the schedules users write.

Each resync tick (every minute on Knative) looks at every JobFlowTemplate of the served namespaces, so this is the
core's share of a tick per template, before the two API requests of the look (the LIST of its runs, the GET of the
template) and the writes when something is due. Cases: a daily and a five-minute schedule one minute after their
last time, a minutely one a minute and a day after (the day: 1,440 missed times, counted to the cap of 100), all in
Europe/Berlin, with five runs listed. No cluster, no I/O.

Run: ``.venv/bin/python -m benchmarks.schedules``. Writes ``benchmarks/results/schedules.json``. A benchmark, not a
test: nothing here asserts a time.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from jobflow_core.models import JobFlowTemplate  # noqa: E402
from jobflow_core.schedules.firing import plan_schedule  # noqa: E402
from jobflow_core.schedules.runs import Run  # noqa: E402

NOW = datetime(2026, 11, 24, 12, 0, 30, tzinfo=UTC)
CASES = (("0 2 * * *", "2026-11-24T01:00:00Z"), ("*/5 * * * *", "2026-11-24T11:55:00Z"),
         ("* * * * *", "2026-11-24T11:59:00Z"), ("* * * * *", "2026-11-23T11:59:00Z"))


def measure(schedule: str, last: str, *, repeat: int = 300) -> float:
    template = JobFlowTemplate.model_validate({
        "metadata": {"name": "n", "namespace": "d", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"schedule": schedule, "timeZone": "Europe/Berlin"}, "status": {"lastScheduleTime": last}})
    runs = [Run(f"n-{i}", None, NOW, None, "schedule", NOW) for i in range(5)]
    best = float("inf")
    for _ in range(5):  # the best of five rounds: the machine is shared
        started = time.perf_counter()
        for _ in range(repeat):
            plan_schedule(template, runs=runs, now=NOW)
        best = min(best, (time.perf_counter() - started) / repeat)
    return best


def main() -> None:
    results = [{"schedule": s, "lastScheduleTime": last, "ms": round(measure(s, last) * 1000, 2)} for s, last in CASES]
    for row in results:
        print(f"{row['schedule']:<14} last {row['lastScheduleTime']}  {row['ms']:.2f} ms")
    (ROOT / "benchmarks" / "results" / "schedules.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
