"""One event of a wide JobFlow: the handler's CPU and wall time per reconcile, and how they grow with the flows.

The shape of ``benchmarks/dashboard.py``'s large DAG: ``start`` -> N-2 steps (one shared JobTemplate, ``jobTemplate:
step``) -> ``end`` (after every step). The real Flask app (``create_app``) answers ApiServerSource-format events
(no snapshot: it reads) through Flask's test client against the in-memory KubeApi of the fast test tier
(``tests/unit/memory_kube.py``), in this process, so only the handler's own work is timed (the API server's is not):

- ``created``: the JobFlow's first event: its first status (every flow's estimate read) and ``start``'s vcjob;
- ``fan_out``: ``start`` Completed, its vcjob's event: the N-2 steps' vcjobs created in one reconcile;
- ``step_ended``: one step Completed, its vcjob's event: its end recorded (median of ``--ends``);
- ``nothing_new``: the JobFlow's event when nothing changed (median of ``--ends``): read, plan, no write.

    .venv/bin/python -m benchmarks.wide_reconcile [--flows 100,250,500,1000,2000] [--ends 10]

Prints a table and writes ``benchmarks/results/wide_reconcile.json``. No cluster is needed. A benchmark, not a test:
nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "unit")]

from benchmarks.common import machine, table, write_result  # noqa: E402
from handlers import create_app  # noqa: E402
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB, ApiType  # noqa: E402
from memory_kube import MemoryKube  # noqa: E402
from scenario import TEMPLATE_SPEC  # noqa: E402

NS = "default"


def headers(api_type: ApiType, name: str) -> dict[str, str]:
    return {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "1", "ce-source": "bench",
            "ce-type": "dev.knative.apiserver.ref.update", "ce-kind": api_type.kind,
            "ce-apiversion": api_type.api_version, "ce-name": name, "ce-namespace": NS}


def wide(flows: int) -> dict:
    steps = [f"step-{i}" for i in range(flows - 2)]
    spec = [{"name": "start"}, *({"name": s, "jobTemplate": "step", "dependsOn": {"targets": ["start"]}}
                                 for s in steps), {"name": "end", "dependsOn": {"targets": steps}}]
    return {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind,
            "metadata": {"name": "wide", "namespace": NS}, "spec": {"flows": spec}}


def timed(post) -> tuple[float, float]:
    """(CPU ms, wall ms) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    reply = post()
    assert reply.status_code == 202, reply.get_data(as_text=True)
    return (time.process_time() - cpu) * 1e3, (time.perf_counter() - wall) * 1e3


def run(flows: int, *, ends: int) -> dict:
    kube = MemoryKube()
    for name in ("start", "step", "end"):
        kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
                  "metadata": {"name": name, "namespace": NS}, "spec": yaml.safe_load(TEMPLATE_SPEC)})
    kube.put(wide(flows))
    client = create_app({"KUBE": kube, "CLOCK": lambda: kube.now}).test_client()

    def event(api_type: ApiType, name: str):
        return lambda: client.post("/", data=b"{}", headers=headers(api_type, name))

    figures = {"flows": flows, "created": timed(event(JOBFLOW, "wide"))}
    kube.move(NS, "wide-start", "Completed")
    figures["fan_out"] = timed(event(VCJOB, "wide-start"))
    assert len(kube.names(VCJOB, NS)) == flows - 1, "every step's vcjob created"
    ended, idle = [], []
    for i in range(ends):
        kube.move(NS, f"wide-step-{i}", "Completed")
        ended.append(timed(event(VCJOB, f"wide-step-{i}")))
        idle.append(timed(event(JOBFLOW, "wide")))
    figures["step_ended"] = tuple(statistics.median(x[k] for x in ended) for k in (0, 1))
    figures["nothing_new"] = tuple(statistics.median(x[k] for x in idle) for k in (0, 1))
    return {key: [round(v, 1) for v in value] if isinstance(value, tuple) else value
            for key, value in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", default="100,250,500,1000,2000")
    parser.add_argument("--ends", type=int, default=10)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    rows = [run(int(n), ends=args.ends) for n in args.flows.split(",")]
    print(table(["flows", "created CPU/wall ms", "fan-out CPU/wall ms", "a step ended CPU/wall ms",
                 "nothing new CPU/wall ms"],
                [[r["flows"], *("{} / {}".format(*r[k]) for k in ("created", "fan_out", "step_ended", "nothing_new"))]
                 for r in rows]))
    write_result("wide_reconcile", {"benchmark": "wide_reconcile", "machine": machine(), "runs": rows})


if __name__ == "__main__":
    main()
