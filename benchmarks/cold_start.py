"""Handler cold start, as Knative pays it after scaling to zero: a new process, then the first event answered.

Each run spawns the Procfile's ``web`` line afresh (``bash -c``, a free ``PORT``, ``KUBECONFIG``: gunicorn, one
worker) and, from the moment of spawn, POSTs one ApiServerSource-format event again and again until it is answered
2xx (a refused connection is retried after 5 ms; once gunicorn's master listens, the request waits for the worker,
as the activator's would). The first answer is a whole reconcile, so it includes the worker's import of the app,
its Kubernetes client and that reconcile's API calls. At that answer, the CPU time the master and its worker have
used (user + system; unlike the wall time, other work on the machine hardly moves it), and after 1 s idle, their
resident memory (``VmRSS``). Median of ``--runs`` per case:

- ``starts a flow``: a ``ref.add`` of a new JobFlow (a -> b): the reconcile creates vcjob ``a``, records the
  ``Created`` event and writes the status. The usual first event after idle: something new to do.
- ``nothing to do``: a ``ref.update`` of a JobFlow already ``Succeed`` (``throughput.steady_flow``): GET + LIST.
- ``bare app``: the floor. The same gunicorn command serving a minimal Flask app that parses the event with
  ``cloudevents`` and GETs the JobFlow with the engine's client (``apiclient``; ``BARE_APP``), so the product's own
  cost is the difference, measured on the same machine under the same load.

Also, in a fresh interpreter (median of 3): importing gunicorn, importing and creating the app, and making the
handler's Kubernetes client (``shared_client`` + ``KubeApi``).

The sources are byte-compiled first (``compileall``), as ``pip install`` leaves them in the image: a development
shell with ``PYTHONDONTWRITEBYTECODE=1`` (this machine's) never refreshes a stale ``.pyc``, and each start would
then compile every module edited since, some 100-300 ms that no deployed handler pays.

Run: ``.venv/bin/python -m benchmarks.cold_start [--runs 10]``.
"""

from __future__ import annotations

import argparse
import compileall
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

from apiclient import cloudevents
from benchmarks.common import (REPO, chain_jobflow, connect, cpu_seconds, create, gunicorn_processes, job_template,
                               machine, new_namespace, proc_status, procfile_command, spawn, summary_ms, table,
                               write_result)
from benchmarks.throughput import event, post, steady_flow
from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB

APP = "'handlers:create_app()'"
BARE_APP = f'''
from cloudevents.core.bindings.http import HTTPMessage, from_http_event
from flask import Flask, request

from apiclient.kubeconfig import connect
from apiclient.rest import Rest

app = Flask(__name__)
rest = []


@app.post("/")
def receive():
    event = from_http_event(HTTPMessage(dict(request.headers), request.get_data()))
    if not rest:
        rest.append(Rest(connect()))
    rest[0].request("GET", "/apis/{JOBFLOW.group}/{JOBFLOW.version}/namespaces/{{namespace}}/{JOBFLOW.plural}/{{name}}",
                    {{"namespace": event.get_extension("namespace"), "name": event.get_extension("name")}})
    return "", 202
'''


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
    cloudevents, jobflow_core), and the Kubernetes client the first request makes (reads the kubeconfig)."""
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True,
                         cwd=REPO, env={**os.environ, "KUBECONFIG": str(local.state.kubeconfig)}).stdout
    gunicorn, app, kube = (round(1000 * float(x), 1) for x in out.split())
    return {"import_gunicorn_ms": gunicorn, "import_and_create_app_ms": app, "first_kubeapi_ms": kube}


def one_start(local: LocalCluster, command: str, message: tuple[dict[str, str], bytes]) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log_dir = Path(tempfile.mkdtemp(prefix="bench-cold-"))
    spawned = time.perf_counter()
    web = spawn("web", command, log_dir=log_dir, env={"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig)})
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
        master, workers = gunicorn_processes(web)
        cpu = sum(cpu_seconds(pid) for pid in (master, *workers))
        time.sleep(1)
        return {"listening_s": listening, "first_2xx_s": answered, "cpu_s": cpu, "rss_master_kib": rss_kib(master),
                "rss_workers_kib": sum(rss_kib(w) for w in workers), "workers": len(workers)}
    finally:
        web.stop()


def new_flow_event(local: LocalCluster, namespace: str, name: str) -> tuple[dict[str, str], bytes]:
    """Create JobFlow ``name`` (a -> b) with no handler running, and the ``ref.add`` event that announces it."""
    created = create(local, namespace, chain_jobflow(name, ["a", "b"]))
    envelope = cloudevents.Envelope(JOBFLOW, cloudevents.Change.ADD, created)
    return cloudevents.encode(envelope, mode=cloudevents.Mode.REFERENCE, source=local.api.configuration.host,
                             overrides={})


def summarise(samples: list[dict]) -> dict:
    def median(key: str) -> float:
        return statistics.median(s[key] for s in samples)
    return {"listening_ms": summary_ms([s["listening_s"] for s in samples]),
            "first_2xx_ms": summary_ms([s["first_2xx_s"] for s in samples]),
            "cpu_ms": summary_ms([s["cpu_s"] for s in samples]),
            "rss_mib_median": {"master": round(median("rss_master_kib") / 1024, 1),
                               "worker": round(median("rss_workers_kib") / 1024, 1),
                               "total": round((median("rss_master_kib") + median("rss_workers_kib")) / 1024, 1)},
            "samples": samples}


def run(*, runs: int = 10) -> dict:
    local = connect()
    for package in ("apiclient", "eventsource", "handlers", "jobflow_core"):
        compileall.compile_dir(REPO / package, quiet=1)
    before = machine()
    steady = steady_flow(local)
    fresh = new_namespace(local, "bench-cold")
    bare_dir = Path(tempfile.mkdtemp(prefix="bench-bare-app-"))
    (bare_dir / "bare_app.py").write_text(BARE_APP)
    web = procfile_command("web")
    bare = web.replace(APP, f"--chdir {bare_dir} bare_app:app")
    assert bare != web, f"the Procfile's web line no longer serves {APP}: {web}"
    try:
        for name in "ab":
            create(local, fresh, job_template(name, run_for="200ms"))
        cases = {"starts a flow": [], "nothing to do": [], "bare app": []}
        for index in range(runs):  # interleaved, so a change of load touches every case alike
            cases["starts a flow"].append(one_start(local, web, new_flow_event(local, fresh, f"cold-{index}")))
            cases["nothing to do"].append(one_start(local, web, event("JobFlow", steady, local.api.configuration.host)))
            cases["bare app"].append(one_start(local, bare, event("JobFlow", steady, local.api.configuration.host)))
        started = local.custom.list_namespaced_custom_object(VCJOB.group, VCJOB.version, fresh, VCJOB.plural)["items"]
        assert len(started) == runs, f"{len(started)} of {runs} new flows got their first vcjob"
        imports = [import_breakdown(local) for _ in range(3)]
    finally:
        local.delete_namespace(steady)
        local.delete_namespace(fresh)
    return {"benchmark": "cold_start", "parameters": {"runs": runs, "web": web, "bare": bare},
            "machine_before": before, "machine_after": machine(),
            "cases": {name: summarise(samples) for name, samples in cases.items()},
            "start_breakdown_ms_median_of_3": {k: statistics.median(i[k] for i in imports) for k in imports[0]}}


def report(result: dict) -> str:
    rows = []
    for name, case in result["cases"].items():
        rss = case["rss_mib_median"]
        bare = result["cases"]["bare app"]
        rows.append([name, case["first_2xx_ms"]["n"], case["listening_ms"]["p50"], case["first_2xx_ms"]["p50"],
                     case["first_2xx_ms"]["min"], case["first_2xx_ms"]["max"],
                     f"{case['first_2xx_ms']['p50'] / bare['first_2xx_ms']['p50']:.2f}", case["cpu_ms"]["p50"],
                     f"{case['cpu_ms']['p50'] / bare['cpu_ms']['p50']:.2f}",
                     f"{rss['master']} + {rss['worker']} = {rss['total']}"])
    return (table(["spawn -> (ms)", "n", "port open p50", "first 2xx p50", "min", "max", "x bare", "CPU p50",
                   "x bare", "RSS idle MiB"], rows) +
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
