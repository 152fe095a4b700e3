"""Two versions of this repository, measured round for round: the handler's CPU per event and its cold start's CPU.

For a change that should cost nothing (issue 36 moved every module into rooms): each round runs the same
benchmark on the old tree and on this one, alternating which goes first, so a change of load on the machine falls
on both alike; the medians of the rounds are compared. Per round and tree, in a process of its own started in that
tree (its sources, its benchmark scripts, this virtualenv's packages):

- ``handler_cpu`` (:mod:`benchmarks.handler_cpu`): CPU microseconds per event, a JobFlow's event and a vcjob's;
- ``cold_start`` (:mod:`benchmarks.cold_start`, one run): the CPU the Procfile's gunicorn (master and worker) has
  used when the first event after a start is answered, for ``starts a flow`` and ``nothing to do``.

The old tree is a ``git worktree`` of ``--old`` (any revision) made in a temporary directory and removed at the
end; it shares this checkout's ``.devcluster`` (``make cluster`` must be running for the cold starts).

    .venv/bin/python -m benchmarks.interleaved --old b235eef --rounds 10   # ~15 min -> results/interleaved.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import REPO, connect, machine, table, write_result

COLD_START = "import json; from benchmarks.cold_start import run; print(json.dumps(run(runs=1)))"
MEASURES = ("handler_cpu jobflow event, us", "handler_cpu vcjob event, us", "cold start, starts a flow, ms CPU",
            "cold start, nothing to do, ms CPU")


def measure(tree: Path, *, events: int) -> dict[str, float]:
    """One round's figures for the sources of ``tree``."""
    def python(*args: str) -> dict:
        out = subprocess.run([sys.executable, *args], cwd=tree, capture_output=True, text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    jobflow = python("-m", "benchmarks.handler_cpu", "--events", str(events), "--kind", "jobflow")
    job = python("-m", "benchmarks.handler_cpu", "--events", str(events), "--kind", "job")
    cases = python("-c", COLD_START)["cases"]
    return dict(zip(MEASURES, (jobflow["cpu_us_per_event"], job["cpu_us_per_event"],
                               1000 * cases["starts a flow"]["samples"][0]["cpu_s"],
                               1000 * cases["nothing to do"]["samples"][0]["cpu_s"]), strict=True))


def run(*, old: str, rounds: int, events: int) -> dict:
    connect()  # fail early without a cluster
    revision = subprocess.run(["git", "rev-parse", "--short", old], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()
    old_tree = Path(tempfile.mkdtemp(prefix="bench-old-tree-")) / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), revision], cwd=REPO, check=True,
                   capture_output=True)
    (old_tree / ".devcluster").symlink_to(REPO / ".devcluster")
    samples: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    before = machine()
    try:
        for index in range(rounds):
            order = (("old", old_tree), ("new", REPO)) if index % 2 == 0 else (("new", REPO), ("old", old_tree))
            for name, tree in order:
                samples[name].append(measure(tree, events=events))
            print(f"round {index + 1}/{rounds}: " + ", ".join(
                f"{name} {samples[name][-1][MEASURES[0]]:.0f} us" for name in ("old", "new")), flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=REPO, check=False)
    medians = {name: {m: statistics.median(s[m] for s in runs) for m in MEASURES} for name, runs in samples.items()}
    return {"benchmark": "interleaved", "old": revision, "new": head, "rounds": rounds, "events": events,
            "machine_before": before, "machine_after": machine(), "medians": medians,
            "new_vs_old": {m: round(medians["new"][m] / medians["old"][m], 3) for m in MEASURES},
            "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the revision to compare this tree with")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--events", type=int, default=1000, help="events per handler_cpu run")
    parser.add_argument("--name", default="interleaved", help="result file name")
    args = parser.parse_args()
    result = run(old=args.old, rounds=args.rounds, events=args.events)
    print(table(["median of the rounds", result["old"], result["new"], "new / old"],
                [[m, f"{result['medians']['old'][m]:.1f}", f"{result['medians']['new'][m]:.1f}",
                  result["new_vs_old"][m]] for m in MEASURES]))
    print(f"-> {write_result(args.name, result)}")


if __name__ == "__main__":
    main()
