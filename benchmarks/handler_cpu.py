"""The handler's own cost per event, without the API server: CPU time, or instructions under callgrind.

The wall-clock benchmarks (``dependency_latency``, ``throughput``) swing by ±40 % on a shared 2-core machine, and
most of a real event's time is the API server's. This one isolates what the handler itself does: the real Flask app
(``create_app``) answers ApiServerSource-format events through Flask's test client, against the in-memory KubeApi
of the fast test tier (``tests/unit/memory_kube.py``), for the seed diamond with a, b Completed and c running (no
write is due, as for most events). Two events: the JobFlow's own (GET it, LIST its vcjobs) and one of its vcjobs
(LIST the namespace's JobFlows, then the same).

    .venv/bin/python -m benchmarks.handler_cpu --events 2000           # CPU microseconds per event
    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        .venv/bin/python -m benchmarks.handler_cpu --events 300 --kind job   # "Collected" instructions ...
    valgrind ... --events 0 --kind job                                 # ... minus this, / 300 = per event

Instruction counts are repeatable whatever else the machine does, so they compare two versions of the code fairly.
No cluster is needed.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "unit")]  # scenario needs seeds

from handlers import create_app  # noqa: E402
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB, ApiType  # noqa: E402
from memory_kube import MemoryKube  # noqa: E402
from scenario import DIAMOND, TEMPLATE_SPEC  # noqa: E402

WARM_UP = 200


def headers(api_type: ApiType, name: str) -> dict[str, str]:
    return {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "1", "ce-source": "bench",
            "ce-type": "dev.knative.apiserver.ref.update", "ce-kind": api_type.kind,
            "ce-apiversion": api_type.api_version, "ce-name": name, "ce-namespace": "default"}


def run(*, events: int, kind: str) -> dict:
    logging.disable(logging.CRITICAL)
    kube = MemoryKube()
    for name in "abcde":
        kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
                  "metadata": {"name": name, "namespace": "default"}, "spec": yaml.safe_load(TEMPLATE_SPEC)})
    kube.put({"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind, **yaml.safe_load(DIAMOND)})
    client = create_app({"KUBE": kube, "CLOCK": lambda: kube.now}).test_client()
    jobflow_event = headers(JOBFLOW, "test")
    for flow, phase in (("a", "Completed"), ("b", "Completed"), ("c", "Running")):
        client.post("/", data=b"{}", headers=jobflow_event)
        kube.move("default", f"test-{flow}", phase)
    event = jobflow_event if kind == "jobflow" else headers(VCJOB, "test-c")
    for _ in range(WARM_UP):
        assert client.post("/", data=b"{}", headers=event).status_code == 202
    requests, started = kube.requests, time.process_time()
    for _ in range(events):
        client.post("/", data=b"{}", headers=event)
    cpu = time.process_time() - started
    return {"benchmark": "handler_cpu", "event": kind, "events": events,
            "cpu_us_per_event": round(cpu / events * 1e6, 1) if events else None,
            "api_calls_per_event": (kube.requests - requests) / events if events else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--kind", choices=["jobflow", "job"], default="jobflow")
    args = parser.parse_args()
    print(json.dumps(run(events=args.events, kind=args.kind)))


if __name__ == "__main__":
    main()
