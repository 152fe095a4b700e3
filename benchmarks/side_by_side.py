"""Side by side with upstream Volcano's own JobFlow controller: the same workload, alternated, on one cluster.

The engines:

- **upstream**: the very ``vc-controller-manager`` binary ``make cluster`` builds (Volcano 1.14.1), started a second
  time with only ``--controllers=jobflow-controller,jobtemplate-controller --leader-elect=false`` (health checks on
  a free port, metrics off); it runs on our CRDs, which are upstream's plus optional fields;
- **ours**: the Procfile's ``web`` and ``eventsource`` lines as written, watching all namespaces.

Only one runs at a time. Each talks to a kube-apiserver of its own: a second kube-apiserver on the cluster's etcd
(the same arguments but the port, as in a highly available control plane), so that server's
``apiserver_request_total`` counts the engine's requests and nothing else (Volcano, kwok and this script talk to the
first one). Both engines pay the same for that extra hop.

The workload, in a fresh namespace per run: JobTemplates a..e of one pod each
(``kwok.jobflow.dev/run-for``, default 1s), then N seed diamonds a -> b -> {c, d} -> e (``jobRetainPolicy: retain``)
created at once (8 client threads). With ``--templates before`` (the default) the JobTemplates exist before the
engine starts, outside the measured window; with ``--templates inside`` they are created inside it, right before
the JobFlows, as a user's ``kubectl apply -f folder/`` does. With N=1 the diamond is run ``--repeat`` times one after
another (each alone), so that N=1's latency has enough samples (4 per diamond). Measured:

- dependency latency: a watch on the namespace's vcjobs (this process, against the first API server) notes when a
  vcjob is first seen ``Completed`` and when each vcjob is first seen at all; a sample is "the last target seen
  Completed -> the dependent seen ADDED" (4 per diamond: b, c, d, e);
- API requests: the engine's API server's ``apiserver_request_total``, all verbs, before the engine starts and after
  it stopped (a watch is counted when it ends); vcjob creates answered 409 (AlreadyExists) and JobFlow status
  writes answered 409 (Conflict) from the same counter;
- CPU and peak memory: user + system CPU time and ``VmHWM`` of every process of the engine, summed (each
  process's peak is in the result too);
- wall time: from the first JobFlow created to all of them ``Succeed``;
- ours only, from the handler's and the event source's ``/metrics`` at the end: reconciles by the source they
  planned from (snapshots used, stale, none), the handler's answer time (the reconcile histogram's p99 bucket), event
  deliveries retried (a timeout or a 503).

Run: ``.venv/bin/python -m benchmarks.side_by_side [--sizes 1,50,200] [--runs 2] [--run-for 1s]`` on a running
``make cluster``; ``--sizes 1000 --run-for 0s --name side_by_side-1000`` for the large run, ``--engines
ours,ours-3-workers`` for one handler process against three (any ``ours-<n>-workers``). Results:
``results/<name>.json``.
"""

from __future__ import annotations

import argparse
import re
import ssl
import statistics
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (VcJobWatch, connect, cpu_seconds, create, job_template, machine, new_namespace,
                               proc_status, process_tree, procfile_command, spawn, summary_ms, table,
                               wait_healthy, write_result)
from devcluster import objects
from devcluster.processes import Component, free_port, start
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW

ENGINES = ("upstream", "ours")
def workers_of(engine: str) -> int:
    """How many handler processes an engine of ours runs: ``ours`` one (the Procfile's), ``ours-<n>-workers`` n
    (gunicorn's ``--workers n``) behind the same event stream, as Knative would scale it."""
    found = re.fullmatch(r"ours-(\d+)-workers", engine)
    return int(found.group(1)) if found else 1
OWN_RESOURCES = frozenset({"leases", "services"})
"""What a kube-apiserver itself reads and writes (its identity lease, the kubernetes Service)."""
DIAMOND = [("a", []), ("b", ["a"]), ("c", ["b"]), ("d", ["b"]), ("e", ["c", "d"])]


# --- the engine's own API server -------------------------------------------------------------------------------

class EngineApiServer:
    """A second kube-apiserver on the cluster's etcd, for the engine under test alone."""

    def __init__(self, local: LocalCluster, log_dir: Path) -> None:
        [first] = [c for c in local.state.components if c.name == "kube-apiserver"]
        args = [a.decode() for a in Path(f"/proc/{first.pid}/cmdline").read_bytes().split(b"\0")[1:-1]]
        self.port = free_port()
        args = [f"--secure-port={self.port}" if a.startswith("--secure-port=") else a for a in args]
        self.token = local.state.token
        self.component = start("engine-apiserver", Path(first.binary), args, log_dir=log_dir)
        self.url = f"https://127.0.0.1:{self.port}"
        self.kubeconfig = log_dir / "engine.kubeconfig"
        self.kubeconfig.write_text(local.state.kubeconfig.read_text().replace(local.state.server, self.url))
        objects.poll("the engine's kube-apiserver ready", lambda: self._get("/readyz") == b"ok", timeout=90,
                     on_tick=self._alive)

    def _alive(self) -> None:
        if not self.component.alive():
            raise RuntimeError(f"the engine's kube-apiserver exited:\n{self.component.log_tail()}")

    def _get(self, path: str) -> bytes | None:
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=10, context=ssl._create_unverified_context()) as reply:
                return reply.read()
        except OSError:
            return None

    def requests(self) -> Counter:
        """``apiserver_request_total`` by (verb, resource, subresource, code), plus the watches still open (that
        counter notes a watch when it ends) as ``("WATCH", resource, subresource, "open")``; without the API
        server's own requests (its lease, its Service), which no engine makes."""
        counts: Counter = Counter()
        for line in (self._get("/metrics") or b"").decode().splitlines():
            if line.startswith("apiserver_longrunning_requests{") and 'verb="WATCH"' in line:
                line = line.replace("apiserver_longrunning_requests{", "apiserver_request_total{code=\"open\",")
            if not line.startswith("apiserver_request_total{"):
                continue
            labels = dict(part.split("=", 1) for part in line[line.index("{") + 1:line.rindex("}")].split(","))
            labels = {k: v.strip('"') for k, v in labels.items()}
            if labels.get("resource") in OWN_RESOURCES:
                continue
            key = (labels.get("verb", ""), labels.get("resource", ""), labels.get("subresource", ""),
                   labels.get("code", ""))
            counts[key] += float(line.rsplit(" ", 1)[1])
        return counts

    def stop(self) -> None:
        self.component.stop()


# --- the engines -----------------------------------------------------------------------------------------------

def start_upstream(local: LocalCluster, server: EngineApiServer, log_dir: Path) -> list[Component]:
    [volcano] = [c for c in local.state.components if c.name == "vc-controller-manager"]
    return [start("upstream-jobflow", Path(volcano.binary), [
        f"--kubeconfig={server.kubeconfig}", "--controllers=jobflow-controller,jobtemplate-controller",
        "--leader-elect=false", "--scheduler-name=volcano", "--enable-healthz",
        f"--healthz-address=127.0.0.1:{free_port()}", "--v=1"], log_dir=log_dir)]


def start_ours(local: LocalCluster, server: EngineApiServer, log_dir: Path, *, workers: int = 1) -> list[Component]:
    port, metrics_port = free_port(), free_port()
    env = {"PORT": str(port), "KUBECONFIG": str(server.kubeconfig), "METRICS_PORT": str(metrics_port),
           "METRICS_ADDRESS": "127.0.0.1"}
    web_command = procfile_command("web")
    if workers != 1:
        assert "--workers 1 " in web_command, f"the Procfile's web line has no --workers 1 to change: {web_command}"
        web_command = web_command.replace("--workers 1 ", f"--workers {workers} ")
    web = spawn("web", web_command, log_dir=log_dir, env=env)
    wait_healthy(f"http://127.0.0.1:{port}/", web)
    source = spawn("eventsource", procfile_command("eventsource"), log_dir=log_dir, env=env)
    METRICS_URLS[web.pid] = f"http://127.0.0.1:{port}/metrics"
    METRICS_URLS[source.pid] = f"http://127.0.0.1:{metrics_port}/metrics"
    return [web, source]


METRICS_URLS: dict[int, str] = {}
"""Where each of our processes serves ``/metrics``, by PID."""


def scrape(components: list[Component]) -> dict[str, float]:
    """Every sample of our processes' ``/metrics`` (name{labels} -> value); none for upstream."""
    samples: dict[str, float] = {}
    for component in components:
        url = METRICS_URLS.get(component.pid)
        if url is None:
            continue
        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                text = reply.read().decode()
        except OSError:
            continue
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = samples.get(name, 0.0) + float(value)
    return samples


SNAPSHOT_OUTCOMES = ("used", "stale", "unsigned", "bad_signature", "no_key", "none")
"""Every ``outcome`` of ``jobflow_handler_snapshots_total``: all but ``used`` are reconciles that read the API."""


def ours_figures(samples: dict[str, float]) -> dict:
    """Snapshots used against reconciles, the answer time's p99 bucket, deliveries retried."""
    def total(prefix: str, label: str = "") -> float:
        return sum(v for k, v in samples.items() if k.startswith(prefix) and label in k)

    snapshots = {o: total("jobflow_handler_snapshots_total", f'outcome="{o}"') for o in SNAPSHOT_OUTCOMES}
    buckets = sorted((float(k.split('le="')[1].split('"')[0].replace("+Inf", "inf")), v) for k, v in samples.items()
                     if k.startswith("jobflow_handler_reconcile_duration_seconds_bucket"))
    count = total("jobflow_handler_reconcile_duration_seconds_count")
    p99 = next((le for le, seen in buckets if count and seen >= 0.99 * count), None)
    return {"snapshots": snapshots,
            "snapshots_used_share": round(snapshots["used"] / max(1.0, sum(snapshots.values())), 3),
            "answer_p99_bucket_seconds": p99,
            "deliveries_retried": total("jobflow_eventsource_events_sent_total", 'outcome="retried"'),
            "template_writes_409": total("jobflow_handler_conflicts_total", 'kind="JobTemplate"')}


def processes_of(components: list[Component]) -> list[int]:
    return sorted({pid for c in components for pid in process_tree(c.pid)})


def process_name(pid: int) -> str:
    """A process's program, briefly: ``gunicorn`` (master or worker), ``python -m eventsource``, a binary's name."""
    args = [arg.decode() for arg in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if arg]
    program = Path(args[0]).name if args else "?"
    if "-m" in args:
        return f"{program} -m {args[args.index('-m') + 1]}"
    return " ".join([program, *(arg for arg in args[1:2] if not arg.startswith("-"))])


def kib(value: str) -> int:
    return int(value.split()[0]) if value else 0


# --- one run ---------------------------------------------------------------------------------------------------

def diamond(name: str) -> dict:
    flows = [{"name": f, **({"dependsOn": {"targets": targets}} if targets else {})} for f, targets in DIAMOND]
    return {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind, "metadata": {"name": name},
            "spec": {"jobRetainPolicy": "retain", "flows": flows}}


def all_succeeded(local: LocalCluster, namespace: str, n: int) -> bool:
    items = local.custom.list_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, namespace,
                                                       JOBFLOW.plural)["items"]
    return sum(((i.get("status") or {}).get("state") or {}).get("phase") == "Succeed" for i in items) == n


def run_once(local: LocalCluster, engine: str, n: int, *, run_for: str, timeout: float, templates: str,
             repeat: int) -> dict:
    log_dir = Path(tempfile.mkdtemp(prefix=f"side-{engine}-{n}-"))
    namespace = new_namespace(local, f"side-{engine[:2]}")
    server = EngineApiServer(local, log_dir)
    components: list[Component] = []
    watcher = None
    rounds = repeat if n == 1 else 1
    try:
        if templates == "before":
            for name, _ in DIAMOND:
                create(local, namespace, job_template(name, run_for=run_for))
        before = server.requests()
        if engine == "upstream":
            components = start_upstream(local, server, log_dir)
        else:
            components = start_ours(local, server, log_dir, workers=workers_of(engine))
        time.sleep(3)  # informers synced, first lists done, the templates' announcements through
        watcher = VcJobWatch(local, namespace)
        started = time.monotonic()
        if templates == "inside":  # as kubectl apply -f folder/ does: the templates first, then the JobFlows
            for name, _ in DIAMOND:
                create(local, namespace, job_template(name, run_for=run_for))
        for round_ in range(rounds):
            names = [f"d{i}" if rounds == 1 else f"d{round_}" for i in range(n)]
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda name: create(local, namespace, diamond(name)), names))
            deadline = time.monotonic() + timeout
            while not all_succeeded(local, namespace, n + (round_ if rounds > 1 else 0)):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{engine}: not every one of {n} JobFlows Succeed after {timeout:.0f} s")
                for component in components:
                    if not component.alive():
                        raise RuntimeError(f"{component.name} exited:\n{component.log_tail()}")
                time.sleep(0.2 if rounds > 1 else 0.5)
        wall = time.monotonic() - started
        pids = processes_of(components)
        cpu = sum(cpu_seconds(p) for p in pids)
        peaks = {f"{p} {process_name(p)}": round(kib(proc_status(p, "VmHWM")) / 1024, 1) for p in pids}
        rss = sum(kib(proc_status(p, "VmHWM")) for p in pids) / 1024
        ours = ours_figures(scrape(components)) if engine != "upstream" else {}
        after = server.requests()
        # Deleted while the engine still runs: ours keeps a finalizer on its vcjobs until it has recorded them.
        local.delete_namespace(namespace)
        local.wait_until(f"namespace {namespace} gone", lambda: namespace not in {
            ns.metadata.name for ns in local.core.list_namespace().items}, timeout=300, interval=1)
    finally:
        for component in reversed(components):
            component.stop()
        if watcher is not None:
            watcher.stop()
        server.stop()

    latencies = []
    for i in range(n * rounds):
        for flow, targets in DIAMOND[1:]:
            done = max(watcher.seen(f"d{i}-{t}", "Completed")[0] for t in targets)
            latencies.append(watcher.seen(f"d{i}-{flow}", "ADDED")[0] - done)
    delta = after - before
    return {
        "engine": engine, "n": n, "namespace": namespace, "log_dir": str(log_dir),
        "dependency_latency_ms": summary_ms(latencies),
        "api_requests": int(sum(delta.values())),
        "api_requests_by_kind": {" ".join(k): int(v) for k, v in sorted(delta.items())},
        "vcjob_creates_409": int(sum(v for (verb, res, sub, code), v in delta.items()
                                     if verb == "POST" and res == "jobs" and code == "409")),
        "status_writes": int(sum(v for (verb, res, sub, code), v in delta.items()
                                 if verb == "PUT" and res == "jobflows" and sub == "status")),
        "status_writes_409": int(sum(v for (verb, res, sub, code), v in delta.items()
                                     if verb == "PUT" and res == "jobflows" and sub == "status" and code == "409")),
        "cpu_seconds": round(cpu, 2), "peak_rss_mib": round(rss, 1),
        "peak_rss_by_process_mib": peaks, "wall_seconds": round(wall, 1),
        "templates": templates, "rounds": rounds, **ours,
    }


# --- the table -------------------------------------------------------------------------------------------------

def median(runs: list[dict], pick) -> float:
    return statistics.median(pick(r) for r in runs)


ROWS = [
    ("dependency latency p50 (ms)", lambda r: r["dependency_latency_ms"]["p50"]),
    ("dependency latency p90 (ms)", lambda r: r["dependency_latency_ms"]["p90"]),
    ("API requests", lambda r: r["api_requests"]),
    ("API requests per JobFlow", lambda r: r["api_requests"] / (r["n"] * r.get("rounds", 1))),
    ("vcjob creates answered 409", lambda r: r["vcjob_creates_409"]),
    ("status writes", lambda r: r["status_writes"]),
    ("status writes answered 409", lambda r: r["status_writes_409"]),
    ("CPU (s)", lambda r: r["cpu_seconds"]),
    ("peak RSS, all processes (MiB)", lambda r: r["peak_rss_mib"]),
    ("wall time to all Succeed (s)", lambda r: r["wall_seconds"]),
    ("template status writes answered 409", lambda r: r["api_requests_by_kind"].get("PUT jobtemplates status 409", 0)),
]


def report(results: list[dict]) -> str:
    rows = []
    engines = list(dict.fromkeys(r["engine"] for r in results))
    for n in sorted({r["n"] for r in results}):
        by_engine = {e: [r for r in results if r["n"] == n and r["engine"] == e] for e in engines}
        for label, pick in ROWS:
            values = {e: median(runs, pick) if runs else None for e, runs in by_engine.items()}
            up, ours = values.get("upstream"), values.get("ours")
            ratio = f"{ours / up:.2f}" if up and ours is not None else "-"
            rows.append([f"N={n} {label}", *(f"{values[e]:,.1f}" if values[e] is not None else "-" for e in engines),
                         ratio])
    return table(["metric (median of runs)", *engines, "ours/upstream"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,50,200", help="numbers of diamonds, comma-separated")
    parser.add_argument("--runs", type=int, default=2, help="runs per engine and size (alternated)")
    parser.add_argument("--run-for", default="1s", help="how long each pod runs (Go duration)")
    parser.add_argument("--engines", default=",".join(ENGINES), help="of upstream, ours, ours-<n>-workers")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--name", default="side_by_side", help="result file name")
    parser.add_argument("--templates", choices=("before", "inside"), default="before",
                        help="create the JobTemplates before the engine starts, or inside the measured window")
    parser.add_argument("--repeat", type=int, default=13, help="N=1: diamonds run one after another per run")
    args = parser.parse_args()
    local = connect()
    engines = args.engines.split(",")
    results, before = [], machine()
    for n in map(int, args.sizes.split(",")):
        for run in range(args.runs):
            for engine in engines if run % 2 == 0 else reversed(engines):
                result = run_once(local, engine, n, run_for=args.run_for, timeout=args.timeout,
                                  templates=args.templates, repeat=args.repeat)
                print(f"N={n} run {run + 1} {engine}: p50/p90 {result['dependency_latency_ms'].get('p50')}/"
                      f"{result['dependency_latency_ms'].get('p90')} ms, {result['api_requests']} requests, "
                      f"{result['cpu_seconds']} s CPU, {result['peak_rss_mib']} MiB, {result['wall_seconds']} s",
                      flush=True)
                results.append(result)
    print(report(results))
    path = write_result(args.name, {"benchmark": "side_by_side", "parameters": vars(args),
                                    "machine_before": before, "machine_after": machine(), "runs": results,
                                    "table": report(results)})
    print(f"-> {path}")


if __name__ == "__main__":
    main()
