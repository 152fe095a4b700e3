"""What ``kubectl-jobflow`` costs to start: the CPU of ``--help``, of a usage error and of completion, this tree
against an older one, round for round.

Each sample is one process, started as the console script starts it (``from kubectl_jobflow.__main__ import main``
in a fresh interpreter, the tree's sources first on ``sys.path``, this virtualenv's packages), and its CPU time
(user + system, from ``RUSAGE_CHILDREN``) is what is measured: a start is mostly imports, which wall time on a
shared machine only blurs. Rounds alternate which tree goes first; the medians are compared. With ``make cluster``
running, ``get NAME`` on it is measured too (its one request included).

The old tree is a ``git worktree`` of ``--old`` made in a temporary directory and removed at the end.

    .venv/bin/python -m benchmarks.cli_start --old 4371d0f --rounds 30   # ~1 min -> results/cli_start.json
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import REPO, machine, table, write_result

SCRIPT = ("import sys; sys.argv[0] = 'kubectl-jobflow'; from kubectl_jobflow.__main__ import main; "
          "raise SystemExit(main())")
KUBECONFIG = REPO / ".devcluster" / "kubeconfig"
COMMANDS = {"--help": ["--help"], "usage error": ["gte"], "get --help": ["get", "--help"]}


def cpu_ms(tree: Path, argv: list[str]) -> float:
    """CPU milliseconds of one ``kubectl-jobflow ARGV`` run from the sources of ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", SCRIPT, *argv], cwd=tree, capture_output=True, check=False,
                   env={**os.environ, "PYTHONPATH": str(tree), "KUBECONFIG": str(KUBECONFIG)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1000 * (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def run(*, old: str, rounds: int) -> dict:
    commands = dict(COMMANDS)
    if KUBECONFIG.exists():
        namespace = "default"
        subprocess.run([str(REPO / ".venv" / "bin" / "kubectl"), f"--kubeconfig={KUBECONFIG}", "apply", "-n",
                        namespace, "-f", str(REPO / "examples" / "diamond" / "jobflow.yaml")],
                       capture_output=True, check=True)
        commands["get NAME"] = ["get", "test", "-n", namespace]
    old_tree = Path(tempfile.mkdtemp(prefix="bench-old-tree-")) / "tree"
    subprocess.run(["git", "worktree", "add", "--detach", str(old_tree), old], cwd=REPO, check=True,
                   capture_output=True)
    samples: dict[str, dict[str, list[float]]] = {name: {"old": [], "new": []} for name in commands}
    try:
        for round_ in range(rounds):
            order = (("old", old_tree), ("new", REPO)) if round_ % 2 else (("new", REPO), ("old", old_tree))
            for name, argv in commands.items():
                for which, tree in order:
                    samples[name][which].append(cpu_ms(tree, argv))
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=REPO, check=False)
    medians = {name: {which: round(statistics.median(values), 1) for which, values in pair.items()}
               for name, pair in samples.items()}
    return {"old": old, "rounds": rounds, "machine": machine(), "median_cpu_ms": medians, "samples": samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="4371d0f", help="the revision to compare with (default: before issue 40)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--name", default="cli_start")
    args = parser.parse_args()
    result = run(old=args.old, rounds=args.rounds)
    print(table(["command", "old ms CPU", "new ms CPU", "new/old"],
                [[name, f"{pair['old']:.0f}", f"{pair['new']:.0f}", f"{pair['new'] / pair['old']:.2f}"]
                 for name, pair in result["median_cpu_ms"].items()]))
    print(f"-> {write_result(args.name, result)}")


if __name__ == "__main__":
    main()
