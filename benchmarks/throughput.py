"""Events handled per second by one gunicorn worker, on a JobFlow that has nothing left to do.

Set-up (``steady_flow``): in a fresh namespace, a chain a -> b -> c of one-pod flows runs to ``Succeed`` with the
Procfile's processes; then they are stopped, so nothing else talks to the handler under test. (Other engines on the
shared cluster may still watch every namespace; ``machine.other_engine_processes`` in the result lists them.)

Then, for each worker kind, the Procfile's ``web`` command is started fresh on a free port: as written (``gthread``,
its ``--threads``) and with ``--threads 1`` (gunicorn's ``sync`` worker). After 50 warm-up events, ``--events``
ApiServerSource-format events (``apiclient.cloudevents.encode``, Reference mode, each with its own id) are POSTed by
``--concurrency`` client threads, one connection per request as the event source's sender does. Two event kinds:
``JobFlow update`` (a reconcile reads the JobFlow and LISTs its vcjobs) and ``Job update`` of one of its vcjobs
(LIST of the namespace's JobFlows, then the same). Reported: events per second, client-side latency p50/p99, the
worker's CPU time per event, and the replies; a steady flow must cause no status write (counted in the log).

Run: ``.venv/bin/python -m benchmarks.throughput [--events 2000] [--concurrency 8]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apiclient import cloudevents
from benchmarks.common import (chain_jobflow, connect, cpu_seconds, create, flow_phase, gunicorn_processes,
                               job_template, machine, new_namespace, procfile_command, spawn, summary_ms, table,
                               wait_healthy, write_result)
from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB
from jobflow_core.vocabulary.naming import job_name

FLOW_NAME = "steady"


def steady_flow(local: LocalCluster) -> str:
    """A namespace holding JobFlow ``steady`` (a -> b -> c), run to Succeed by the Procfile's processes."""
    namespace = new_namespace(local, "bench-steady")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-steady-"))
    env = {"PORT": str(free_port()), "KUBECONFIG": str(local.state.kubeconfig), "NAMESPACES": namespace}
    for name in "abc":
        create(local, namespace, job_template(name, run_for="200ms"))
    web = spawn("web", procfile_command("web"), log_dir=log_dir, env=env)
    source = spawn("eventsource", procfile_command("eventsource"), log_dir=log_dir, env=env)
    try:
        wait_healthy(f"http://127.0.0.1:{env['PORT']}/", web)
        create(local, namespace, chain_jobflow(FLOW_NAME, list("abc")))
        local.wait_until("JobFlow steady to Succeed",
                         lambda: flow_phase(local, namespace, FLOW_NAME) == "Succeed", timeout=120)
    finally:
        source.stop()
        web.stop()
    return namespace


def event(kind: str, namespace: str, source: str) -> tuple[dict[str, str], bytes]:
    """One ApiServerSource ``ref.update`` event for the steady JobFlow or for its first vcjob, with a fresh id."""
    api_type, name = (JOBFLOW, FLOW_NAME) if kind == JOBFLOW.kind else (VCJOB, job_name(jobflow=FLOW_NAME, flow="a"))
    envelope = cloudevents.Envelope(api_type, cloudevents.Change.UPDATE,
                                   {"metadata": {"namespace": namespace, "name": name}})
    return cloudevents.encode(envelope, mode=cloudevents.Mode.REFERENCE, source=source, overrides={})


def post(url: str, message: tuple[dict[str, str], bytes]) -> tuple[int, float]:
    """(HTTP status or 0 for no answer, seconds) of one POST."""
    headers, body = message
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers, method="POST"),
                                    timeout=30) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    except OSError:
        status = 0
    return status, time.perf_counter() - started


def fire(url: str, messages: list, *, concurrency: int) -> dict:
    with ThreadPoolExecutor(concurrency) as pool:
        started = time.perf_counter()
        answers = list(pool.map(lambda m: post(url, m), messages))
        wall = time.perf_counter() - started
    return {"events": len(messages), "seconds": round(wall, 2), "per_second": round(len(messages) / wall, 1),
            "latency_ms": summary_ms([s for _, s in answers]),
            "replies": dict(Counter(str(status) for status, _ in answers))}


def measure_worker(local: LocalCluster, namespace: str, *, threads: int | None, events: int,
                   concurrency: int) -> dict:
    """Start the web command (``threads`` overrides the Procfile's), then fire each event kind at it."""
    log_dir = Path(tempfile.mkdtemp(prefix="bench-tput-"))
    port = free_port()
    command = procfile_command("web", threads=threads)
    web = spawn("web", command, log_dir=log_dir, env={"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig)})
    url = f"http://127.0.0.1:{port}/"
    source = local.api.configuration.host
    results = {"command": command}
    try:
        wait_healthy(url, web)
        _, workers = gunicorn_processes(web)
        fire(url, [event("JobFlow", namespace, source) for _ in range(50)], concurrency=concurrency)  # warm-up
        for kind in ("JobFlow", "Job"):
            messages = [event(kind, namespace, source) for _ in range(events)]
            cpu_before = sum(cpu_seconds(w) for w in workers)
            results[kind] = fire(url, messages, concurrency=concurrency)
            used = sum(cpu_seconds(w) for w in workers) - cpu_before
            results[kind]["worker_cpu_ms_per_event"] = round(1000 * used / events, 2)
    finally:
        web.stop()
    log = (log_dir / "web.log").read_text(errors="replace")
    results["status_writes_in_log"] = log.count("status_written=True")
    return results


def run(*, events: int = 2000, concurrency: int = 8) -> dict:
    local = connect()
    before = machine()
    namespace = steady_flow(local)
    try:
        workers = {name: measure_worker(local, namespace, threads=threads, events=events, concurrency=concurrency)
                   for name, threads in (("gthread", None), ("sync", 1))}
    finally:
        local.delete_namespace(namespace)
    return {"benchmark": "throughput", "parameters": {"events": events, "concurrency": concurrency},
            "machine_before": before, "machine_after": machine(), "workers": workers}


def report(result: dict) -> str:
    rows = []
    for worker, data in result["workers"].items():
        for kind in ("JobFlow", "Job"):
            r = data[kind]
            rows.append([worker, f"{kind} update", r["events"], r["per_second"], r["latency_ms"]["p50"],
                         r["latency_ms"]["p99"], r["worker_cpu_ms_per_event"], r["replies"],
                         data["status_writes_in_log"]])
    return (table(["worker", "events", "n", "events/s", "p50 ms", "p99 ms", "worker CPU ms/event", "replies",
                   "status writes"], rows) +
            f"\nconcurrency {result['parameters']['concurrency']}; load {result['machine_before']['loadavg']} -> "
            f"{result['machine_after']['loadavg']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000, help="events per worker kind and event kind")
    parser.add_argument("--concurrency", type=int, default=8, help="client threads POSTing at once")
    args = parser.parse_args()
    result = run(events=args.events, concurrency=args.concurrency)
    print(report(result))
    print(f"-> {write_result('throughput', result)}")


if __name__ == "__main__":
    main()
