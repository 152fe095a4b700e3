"""What each program holds in memory when idle, and where it goes.

Measured, on a running ``make cluster``, each program started as users start it:

- **idle RSS** of each process: the Procfile's ``web`` (gunicorn's master and its worker, after one event
  answered, so the worker has loaded everything a reconcile needs) and ``eventsource`` lines, and the dashboard
  (``python -m dashboard --read-only``, after one page of its API answered), each watching one fresh namespace
  with a JobFlow in it, read ``--idle`` seconds after start (``VmRSS``; ``VmHWM`` beside it);
- **the command line's peak RSS**: ``kubectl jobflow list`` (a one-shot program: its high-water mark, from the
  kernel's ``ru_maxrss``);
- **the largest parts**: in a fresh interpreter, what each program imports and makes at start (its app, its
  connection), under ``tracemalloc``, summed by the top-level package whose code was running (see ``PROBE``); what
  tracemalloc does not see (the interpreter itself, shared libraries such as OpenSSL's, allocator slack) is RSS
  minus the traced total (RSS is read in an untraced interpreter: the traces take memory too).

Run: ``.venv/bin/python -m benchmarks.memory [--idle 5] [--name memory]``. Results: ``results/<name>.json``.
The side-by-side figures at N=50 and N=200 (the sum over the engine's processes) are ``benchmarks/side_by_side.py``'s.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    REPO,
    connect,
    create,
    job_template,
    machine,
    new_namespace,
    proc_status,
    process_tree,
    procfile_command,
    spawn,
    wait_healthy,
    write_result,
)
from devcluster.processes import free_port
from jobflow_core.vocabulary.api import JOBFLOW

PROBES = {
    "handler worker": "from handlers import create_app; create_app()\n"
                      "from handlers.kube import KubeApi, shared_client; KubeApi(shared_client())",
    "event source": "import eventsource.__main__, eventsource.runner\n"
                    "from apiclient.kubeconfig import connect; connect(program='eventsource')",
    "dashboard": "import gevent.pywsgi, dashboard.__main__, dashboard.app, dashboard.pages, dashboard.store\n"
                 "from apiclient.cluster import Cluster, Target; Cluster(Target(), program='dashboard')",
    "command line": "from kubectl_jobflow.cli import run\n"
                    "from apiclient.cluster import Cluster, Target; Cluster(Target(), program='kubectl-jobflow')",
}

PROBE = """
import sys, tracemalloc
if {traced}:
    tracemalloc.start(100)
{code}
if not {traced}:
    print([line for line in open("/proc/self/status") if line.startswith("VmRSS")][0].split()[1])
    sys.exit()
snapshot = tracemalloc.take_snapshot()
parts = {{}}
for stat in snapshot.statistics("traceback"):
    # The innermost frame outside the import machinery: the module whose code runs (its classes, its tables), or,
    # for the code objects of a module being loaded, the module importing it (so a package's own submodules count
    # to it, and its top module to whoever imported the package).
    name = next((frame.filename for frame in reversed(stat.traceback) if not frame.filename.startswith("<")), "")
    if "site-packages/" in name:
        part = name.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    elif name.startswith({repo!r}):
        part = name[len({repo!r}) + 1:].split("/", 1)[0]
    else:
        part = "the standard library"
    parts[part] = parts.get(part, 0) + stat.size
print(__import__("json").dumps({{k: v // 1024 for k, v in parts.items()}}))
"""


def probe(code: str, kubeconfig: Path) -> dict:
    """A fresh interpreter's RSS after ``code``, and (in another, traced) its allocations by top-level package."""
    def python(traced: bool) -> str:
        return subprocess.run([sys.executable, "-c", PROBE.format(code=code, repo=str(REPO), traced=traced)],
                              cwd=REPO, check=True, capture_output=True, text=True,
                              env={"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin"}).stdout.strip().splitlines()[-1]

    rss_kib = int(python(False))
    parts = sorted(json.loads(python(True)).items(), key=lambda item: -item[1])
    traced = sum(size for _, size in parts)
    return {"rss_mib": round(rss_kib / 1024, 1), "traced_mib": round(traced / 1024, 1),
            "largest_mib": {name: round(size / 1024, 1) for name, size in parts[:10]}}


def memory(pid: int) -> dict:
    return {field: round(int(proc_status(pid, field).split()[0]) / 1024, 1) for field in ("VmRSS", "VmHWM")}


def command_line_peak(kubeconfig: Path, namespace: str) -> float:
    """``kubectl jobflow list``'s peak RSS (MiB), from the kernel's accounting of a finished child."""
    code = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'kubectl_jobflow', 'list', "
            f"'-n', {namespace!r}], check=True, stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True,
                         env={"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin"})
    return round(int(out.stdout.split()[-1]) / 1024, 1)


def run(*, idle: float) -> dict:
    local = connect()
    before = machine()
    namespace = new_namespace(local, "bench-mem")
    create(local, namespace, job_template("a", run_for="1s"))
    create(local, namespace, {"apiVersion": JOBFLOW.api_version, "kind": "JobFlow", "metadata": {"name": "f"},
                              "spec": {"flows": [{"name": "a"}]}})
    log_dir = Path(tempfile.mkdtemp(prefix="bench-mem-"))
    port, dashboard_port = free_port(), free_port()
    env = {"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig), "NAMESPACES": namespace}
    web = spawn("web", procfile_command("web"), log_dir=log_dir, env=env)
    components = [web]
    try:
        wait_healthy(f"http://127.0.0.1:{port}/", web)
        source = spawn("eventsource", procfile_command("eventsource"), log_dir=log_dir, env=env)
        dashboard = spawn("dashboard", f"python -m dashboard --read-only -n {namespace} --port {dashboard_port}",
                          log_dir=log_dir, env=env)
        components += [source, dashboard]
        local.wait_until("the JobFlow to be reconciled (an event answered)", lambda: (
            local.custom.get_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, namespace, JOBFLOW.plural, "f")
            .get("status") or {}).get("state"), timeout=60)
        local.wait_until("the dashboard to answer", lambda: _answers(f"http://127.0.0.1:{dashboard_port}/api/jobflows"),
                         timeout=60)
        time.sleep(idle)
        master, worker = sorted(process_tree(web.pid))[-2:]  # gunicorn's master, then its one worker
        idle_rss = {"handler master": memory(master), "handler worker": memory(worker),
                    "event source": memory(process_tree(source.pid)[-1]),
                    "dashboard": memory(process_tree(dashboard.pid)[-1])}
        idle_rss["engine (master + worker + event source)"] = {
            field: round(sum(idle_rss[name][field] for name in ("handler master", "handler worker", "event source")),
                         1) for field in ("VmRSS", "VmHWM")}
        cli_peak = command_line_peak(local.state.kubeconfig, namespace)
    finally:
        for component in reversed(components):
            component.stop()
        local.delete_namespace(namespace)
    parts = {name: probe(code, local.state.kubeconfig) for name, code in PROBES.items()}
    return {"machine": before, "idle_seconds": idle, "idle_mib": idle_rss, "command_line_peak_mib": cli_peak,
            "imports": parts}


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of quiet before RSS is read")
    parser.add_argument("--name", default="memory", help="result file name")
    args = parser.parse_args()
    result = run(idle=args.idle)
    print(json.dumps({key: result[key] for key in ("idle_mib", "command_line_peak_mib", "imports")}, indent=1))
    print(f"written to {write_result(args.name, result)}")


if __name__ == "__main__":
    main()
