"""Handler cold start: from spawning the Procfile's ``web`` command to the first event answered 2xx, and its memory.

Each run starts the Procfile's ``web`` line afresh (``bash -c``, a free ``PORT``, ``KUBECONFIG``) and, from the
moment of spawn, POSTs a valid ``JobFlow update`` event for a Succeed JobFlow (``throughput.steady_flow``) again and
again until one is answered 2xx (a refused connection is retried after 5 ms; once gunicorn's master listens, the
request simply waits for the worker). Recorded per run: when the port first accepted a connection, when the first
2xx came, and, once the handler has been idle for 1 s, the resident memory (``VmRSS`` in /proc/<pid>/status) of the
gunicorn master and its worker. The first answered event is a full reconcile, so it includes the worker's import
of the app and the creation of its Kubernetes client. Median of ``--runs``.

Run: ``.venv/bin/python -m benchmarks.cold_start [--runs 10]``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (REPO, connect, gunicorn_processes, machine, procfile_command, proc_status, spawn,
                               summary_ms, table, write_result)
from benchmarks.throughput import event, post, steady_flow
from devcluster.processes import free_port
from devcluster.testing import LocalCluster


def rss_kib(pid: int) -> int:
    return int(proc_status(pid, "VmRSS").split()[0])


IMPORT_PROBE = """
import time; t0 = time.perf_counter()
import gunicorn.app.wsgiapp; t1 = time.perf_counter()
from handlers import create_app; create_app(); t2 = time.perf_counter()
from handlers.kube import KubeApi, shared_client; KubeApi(shared_client()); t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def import_breakdown(local: LocalCluster) -> dict:
    """Where a worker's start goes, in a fresh interpreter: gunicorn, the app (Flask, pydantic, kubernetes,
    jobflow_core), and what the first request adds: the Kubernetes client (reads the kubeconfig) and ``KubeApi``,
    whose ``CoreV1Api`` makes the kubernetes package import its (large) module on first use."""
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True,
                         cwd=REPO, env={**os.environ, "KUBECONFIG": str(local.state.kubeconfig)}).stdout
    gunicorn, app, kube = (round(1000 * float(x), 1) for x in out.split())
    return {"import_gunicorn_ms": gunicorn, "import_and_create_app_ms": app, "first_kubeapi_ms": kube}


def one_start(local: LocalCluster, namespace: str) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    message = event("JobFlow", namespace, local.api.configuration.host)
    log_dir = Path(tempfile.mkdtemp(prefix="bench-cold-"))
    spawned = time.perf_counter()
    web = spawn("web", procfile_command("web"), log_dir=log_dir,
                env={"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig)})
    try:
        listening = None
        while time.perf_counter() - spawned < 60:
            if listening is None:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    listening = time.perf_counter() - spawned
                except OSError:
                    time.sleep(0.005)
                    continue
            status, _ = post(url, message)
            if 200 <= status < 300:
                break
            time.sleep(0.005)
        else:
            raise RuntimeError(f"no 2xx within 60 s; see {log_dir / 'web.log'}")
        answered = time.perf_counter() - spawned
        time.sleep(1)
        master, workers = gunicorn_processes(web)
        return {"listening_s": listening, "first_2xx_s": answered, "rss_master_kib": rss_kib(master),
                "rss_workers_kib": sum(rss_kib(w) for w in workers), "workers": len(workers)}
    finally:
        web.stop()


def run(*, runs: int = 10) -> dict:
    local = connect()
    before = machine()
    namespace = steady_flow(local)
    try:
        samples = [one_start(local, namespace) for _ in range(runs)]
        imports = [import_breakdown(local) for _ in range(3)]
    finally:
        local.delete_namespace(namespace)

    def median(key: str) -> float:
        return statistics.median(s[key] for s in samples)
    return {"benchmark": "cold_start", "parameters": {"runs": runs, "web": procfile_command("web")},
            "machine_before": before, "machine_after": machine(),
            "listening_ms": summary_ms([s["listening_s"] for s in samples]),
            "first_2xx_ms": summary_ms([s["first_2xx_s"] for s in samples]),
            "rss_mib_median": {"master": round(median("rss_master_kib") / 1024, 1),
                               "worker": round(median("rss_workers_kib") / 1024, 1),
                               "total": round((median("rss_master_kib") + median("rss_workers_kib")) / 1024, 1)},
            "start_breakdown_ms_median_of_3": {k: statistics.median(i[k] for i in imports) for k in imports[0]},
            "samples": samples}


def report(result: dict) -> str:
    rows = [[label, *(result[key][f] for f in ("n", "p50", "min", "max"))] for label, key in (
        ("spawn -> port accepts connections", "listening_ms"), ("spawn -> first event answered 2xx", "first_2xx_ms"))]
    rss = result["rss_mib_median"]
    return (table(["ms", "n", "median", "min", "max"], rows) +
            f"\nRSS once idle (median): master {rss['master']} MiB + worker {rss['worker']} MiB = {rss['total']} MiB"
            f"\nin a fresh interpreter (median of 3): {result['start_breakdown_ms_median_of_3']}"
            f"\nload {result['machine_before']['loadavg']} -> {result['machine_after']['loadavg']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    result = run(runs=args.runs)
    print(report(result))
    print(f"-> {write_result('cold_start', result)}")


if __name__ == "__main__":
    main()
