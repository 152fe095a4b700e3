"""What results in patches and memoization cost the pure planner: time per plan of one start decision.

Three versions of one two-flow pipeline (``prepare`` -> ``train``), planned at the moment ``train`` starts: plain
(upstream's shape), ``train``'s patch reading ``{{targets.prepare.result.path}}``, and ``prepare`` memoized with a
cache hit (the plan records the reuse and plans again, so ``train`` starts in the same plan). No cluster, no I/O:
what the core itself adds; the shell adds one ConfigMap GET per reconcile in which a memoized flow may start, and
one read-modify-write of it per run stored.

Run: ``.venv/bin/python -m benchmarks.memo_core [--plans 300]``. Writes ``benchmarks/results/memo_core.json``.
A benchmark, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "unit")]  # scenario needs seeds

from jobflow_core import plan  # noqa: E402
from jobflow_core.flows.memo import Entry  # noqa: E402
from jobflow_core.models import VcJobPhase  # noqa: E402
from jobflow_core.vocabulary.api import MEMO_KEY  # noqa: E402
from scenario import T0, jobflow, templates_for, vcjob  # noqa: E402

PATCH = ("patch: {jobSpec: {tasks: [{name: nginx, template: {spec: {containers: [{name: nginx, "
         "args: ['{{targets.prepare.result.path}}']}]}}}]}}")


def cases() -> dict[str, tuple]:
    plain = jobflow("spec: {flows: [{name: prepare}, {name: train, dependsOn: {targets: [prepare]}}]}")
    reads = jobflow("spec: {flows: [{name: prepare}, {name: train, dependsOn: {targets: [prepare]}, "
                    + PATCH + "}]}", status={"jobStatusList": [
                        {"name": "test-prepare", "state": "Completed", "result": "path=/data/x"}]})
    memoized = jobflow("spec: {flows: [{name: prepare, memoize: {}}, {name: train, "
                       "dependsOn: {targets: [prepare]}}]}")
    [first] = plan(memoized, templates=templates_for(memoized), jobs=[], now=T0).creates
    memo = {first.manifest["metadata"]["annotations"][MEMO_KEY]: Entry("default/old-prepare", T0, "")}
    return {
        "plain: train starts": (plain, [vcjob(plain, "prepare", VcJobPhase.COMPLETED)], None),
        "train's patch reads prepare's result": (reads, [vcjob(reads, "prepare", VcJobPhase.COMPLETED)], None),
        "prepare memoized, a hit: recorded, train starts": (memoized, [], memo),
    }


def run(plans: int) -> dict:
    figures = {}
    for name, (flow, jobs, memo) in cases().items():
        templates = templates_for(flow)
        result = plan(flow, templates=templates, jobs=jobs, now=T0, memo=memo)
        assert [c.flow for c in result.creates] == ["train"], (name, result.creates)
        times = []
        for _ in range(plans):
            start = time.perf_counter()
            plan(flow, templates=templates, jobs=jobs, now=T0, memo=memo)
            times.append(time.perf_counter() - start)
        figures[name] = {"median_ms": round(statistics.median(times) * 1000, 3),
                         "p90_ms": round(statistics.quantiles(times, n=10)[-1] * 1000, 3)}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=300)
    figures = run(parser.parse_args().plans)
    out = ROOT / "benchmarks" / "results" / "memo_core.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
