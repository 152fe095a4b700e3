"""What every benchmark needs: the running local cluster, throw-away namespaces, objects to create, the Procfile's
processes, a vcjob watch that timestamps what it sees, percentiles, and the result file.

The cluster is only ever *used*: a benchmark that finds no healthy ``make cluster`` stops with a message instead of
starting one (other people's tests share it). Every benchmark works in its own fresh namespace and deletes it at the
end. Processes are started the way ``make demo`` starts them (``bash -c`` on the Procfile line, the virtual
environment first on PATH, their own session) and stopped by their own process group only.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from kubernetes import watch
from kubernetes.client.rest import ApiException

from demo.procfile import read_procfile
from devcluster import cluster
from devcluster.processes import Component, start
from devcluster.state import ClusterState
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB, ApiType, api_type_of
from tests.healthz import wait_for_healthz

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"


# --- the cluster and the machine -------------------------------------------------------------------------------

def connect() -> LocalCluster:
    state = ClusterState.load(cluster.DEFAULT_ROOT)
    if state is None or not cluster.healthy(state):
        sys.exit("benchmarks: no healthy local control plane; start it with `make cluster` (never started here)")
    return LocalCluster(state)


def machine() -> dict:
    """Where and when: cores, load average, and the other engines running on the shared cluster right now."""
    return {"date": datetime.now(UTC).isoformat(timespec="seconds"), "cores": os.cpu_count(),
            "loadavg": [round(x, 2) for x in os.getloadavg()], "python": sys.version.split()[0],
            "other_engine_processes": other_engines()}


def other_engines() -> list[str]:
    """Command lines of handlers and event sources we did not start (they may reconcile our namespaces too)."""
    mine = {os.getpid()} | set(_started)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if "-m eventsource" in cmd or ("gunicorn" in cmd and "handlers:create_app" in cmd and "bash" not in cmd):
            found.append(f"{entry.name}: {cmd[-90:]}")
    return sorted(found)


def new_namespace(local: LocalCluster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    local.core.create_namespace({"metadata": {"name": name, "labels": {"jobflow.dev/benchmark": "true"}}})
    return name


# --- objects ---------------------------------------------------------------------------------------------------

def _pod_spec(run_for: str | None) -> dict:
    annotations = {"kwok.jobflow.dev/run-for": run_for} if run_for is not None else {}
    return {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
            "tasks": [{"name": "main", "replicas": 1, "template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}]}


def job_template(name: str, *, run_for: str) -> dict:
    """A JobTemplate of one pod that runs ``run_for`` on a kwok node, then succeeds."""
    return {"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind, "metadata": {"name": name},
            "spec": _pod_spec(run_for)}


def vcjob(name: str, *, run_for: str | None) -> dict:
    """A one-pod vcjob; ``run_for=None`` leaves the annotation out (kwok's default: 1s)."""
    return {"apiVersion": VCJOB.api_version, "kind": VCJOB.kind, "metadata": {"name": name},
            "spec": _pod_spec(run_for)}


def chain_jobflow(name: str, flows: list[str], *, retain: str = "retain") -> dict:
    """A JobFlow running ``flows`` one after another: each depends on the one before."""
    specs = [{"name": f} if i == 0 else {"name": f, "dependsOn": {"targets": [flows[i - 1]]}}
             for i, f in enumerate(flows)]
    return {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind, "metadata": {"name": name},
            "spec": {"jobRetainPolicy": retain, "flows": specs}}


def create(local: LocalCluster, namespace: str, body: dict) -> dict:
    api_type = api_type_of(body["apiVersion"], body["kind"])
    return local.custom.create_namespaced_custom_object(api_type.group, api_type.version, namespace, api_type.plural,
                                                        body)


def flow_phase(local: LocalCluster, namespace: str, name: str) -> str | None:
    try:
        flow = local.custom.get_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, namespace, JOBFLOW.plural,
                                                         name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return ((flow.get("status") or {}).get("state") or {}).get("phase")


# --- processes -------------------------------------------------------------------------------------------------

_started: list[int] = []


def procfile_command(name: str, *, threads: int | None = None) -> str:
    """The Procfile's line ``name``; ``threads`` swaps its ``--threads N`` (for the sync-worker comparison only)."""
    command = read_procfile(REPO / "Procfile")[name]
    if threads is not None:
        command, count = re.subn(r"--threads \d+", f"--threads {threads}", command)
        assert count == 1, f"the Procfile's {name} line has no --threads to change: {command}"
    return command


def spawn(name: str, command: str, *, log_dir: Path, env: dict[str, str]) -> Component:
    """Run ``command`` under ``bash -c`` like ``make demo`` does, in its own session, logging to ``log_dir``."""
    bin_dir = Path(sys.executable).parent
    full_env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", **env}
    component = start(name, Path(shutil.which("bash") or "/bin/bash"), ["-c", command], log_dir=log_dir,
                      env=full_env, cwd=REPO)
    _started.append(component.pid)
    return component


def wait_healthy(url: str, component: Component | None = None, *, timeout: float = 30) -> None:
    """The tests' wait for ``/healthz`` (``tests/healthz.py``); it fails at once if ``component`` exits first."""
    wait_for_healthz(url, timeout=timeout, server=component)


# --- watching vcjobs -------------------------------------------------------------------------------------------

class VcJobWatch:
    """Watches the vcjobs of one namespace (or the objects of ``api_type``: JobFlows, whose phases are theirs) and
    records, per object, the local time each thing was *first* seen: ``"ADDED"`` and every ``status.state.phase``.
    Times are (monotonic, wall clock) pairs."""

    def __init__(self, local: LocalCluster, namespace: str, api_type: ApiType = VCJOB) -> None:
        self.local, self.namespace = local, namespace
        self.first: dict[tuple[str, str], tuple[float, float]] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._list_args = (api_type.group, api_type.version, namespace, api_type.plural)
        self._version = local.custom.list_namespaced_custom_object(*self._list_args)["metadata"]["resourceVersion"]
        self._thread = threading.Thread(target=self._run, name=f"{api_type.plural}-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._watch_once()
            except (ApiException, OSError) as error:  # a broken watch loses nothing: it resumes from _version
                print(f"vcjob watch: {error}; resuming", file=sys.stderr)
                time.sleep(0.2)

    def _watch_once(self) -> None:
        stream = watch.Watch()
        for event in stream.stream(self.local.custom.list_namespaced_custom_object, *self._list_args,
                                   resource_version=self._version, timeout_seconds=5):
            now = (time.monotonic(), time.time())
            obj = event["object"]
            self._version = obj["metadata"]["resourceVersion"]
            name = obj["metadata"]["name"]
            phase = ((obj.get("status") or {}).get("state") or {}).get("phase") or ""
            with self._cond:
                if event["type"] == "ADDED":
                    self.first.setdefault((name, "ADDED"), now)
                if event["type"] in ("ADDED", "MODIFIED") and phase:
                    self.first.setdefault((name, phase), now)
                self._cond.notify_all()

    def seen(self, name: str, what: str) -> tuple[float, float] | None:
        with self._cond:
            return self.first.get((name, what))

    def wait_for(self, names: list[str], what: str, *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not all((n, what) in self.first for n in names):
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [n for n in names if (n, what) not in self.first]
                    raise TimeoutError(f"{len(missing)} vcjobs not {what} after {timeout:.0f} s: {missing[:5]}")
                self._cond.wait(min(left, 1))
            self.local.assert_alive()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


# --- numbers and results ---------------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary_ms(seconds: list[float]) -> dict:
    """n, p50, p90, p99, mean, min, max of durations given in seconds, in milliseconds."""
    if not seconds:
        return {"n": 0}
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "p50": round(percentile(ms, 50), 1), "p90": round(percentile(ms, 90), 1),
            "p99": round(percentile(ms, 99), 1), "mean": round(sum(ms) / len(ms), 1),
            "min": round(min(ms), 1), "max": round(max(ms), 1)}


def table(headers: list[str], rows: list[list[object]]) -> str:
    cells = [headers, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def write_result(name: str, data: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from /proc/<pid>/task/<tid>/children)."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                queue.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                pass
    return found


def proc_status(pid: int, field: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return line.split(":", 1)[1].strip()
    return ""


def gunicorn_processes(component: Component) -> tuple[int, list[int]]:
    """(master pid, worker pids) of a gunicorn started by ``spawn`` (bash execs it, or runs it as a child)."""
    pids = [p for p in process_tree(component.pid)
            if "gunicorn" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")]
    return pids[0], pids[1:]  # the tree is walked from the top: the master comes before its workers


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
