"""The reconciler benchmark: the four measurements of the handler and event source, one after another.

a) ``dependency_latency``: target vcjob Completed -> dependent vcjob exists, real gunicorn + real event source;
b) ``requests_per_event``: API requests and status writes per handled event, handler in-process and counting;
c) ``throughput``: events per second of one gunicorn worker (gthread as in the Procfile, and sync);
d) ``cold_start``: spawn -> first event answered, and resident memory once idle.

Each part is a module of its own (see its docstring for the method) and can run alone; this script runs them all
with their defaults, prints their tables and writes ``benchmarks/results/reconciler.json``. ``--only a,c`` picks
parts. Takes about three minutes on 2 cores.

Run: ``.venv/bin/python -m benchmarks.reconciler [--only a,b,c,d]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import cold_start, dependency_latency, requests_per_event, throughput
from benchmarks.common import write_result

PARTS = {"a": dependency_latency, "b": requests_per_event, "c": throughput, "d": cold_start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="a,b,c,d", help="comma-separated parts to run (a, b, c, d)")
    args = parser.parse_args()
    chosen = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PARTS]
    if unknown:
        parser.error(f"unknown part(s) {unknown}; choose from {', '.join(PARTS)}")
    results = {}
    for part in chosen:
        module = PARTS[part]
        name = module.__name__.rsplit(".", 1)[1]
        print(f"\n== {part}) {name}", flush=True)
        results[name] = module.run()
        print(module.report(results[name]), flush=True)
    print(f"-> {write_result('reconciler', results)}")


if __name__ == "__main__":
    main()
