"""A 1,000-item fan-out on the local control plane: wall time, API requests and status writes per item, and how big
the JobFlow object gets.

The real processes: the Procfile's ``web`` (gunicorn) on a free port and its ``eventsource`` watching only a fresh
namespace. One one-pod JobTemplate (``kwok.jobflow.dev/run-for: 0s``) and one JobFlow with one flow,
``forEach: {range: {count: N}, parallelism: P}``. Measured:

* wall time from creating the JobFlow to its phase ``Succeed`` (Volcano's job controller and scheduler and kwok
  run every vcjob for real: this is mostly their time);
* the most items live and not ended at once, from a watch on the namespace's vcjobs (must not exceed ``P``);
* the API server's ``apiserver_request_total`` deltas for JobFlows (by verb; status writes are ``PUT status``) and
  for vcjobs (by verb): the engine is the only client that writes JobFlows and creates vcjobs; vcjob LISTs and GETs
  are counted as they come (Volcano's controllers use watches). The benchmark's own reads (a JobFlow GET every
  second for its size) are subtracted;
* the JobFlow object's JSON size, the largest seen and at the end.

Run: ``make cluster`` then ``.venv/bin/python -m benchmarks.fan_out [--items 1000] [--parallelism 50]``.
Writes ``benchmarks/results/fan_out.json``. A benchmark, not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (  # noqa: E402
    VcJobWatch,
    connect,
    create,
    flow_phase,
    job_template,
    machine,
    new_namespace,
    procfile_command,
    spawn,
    table,
    wait_healthy,
    write_result,
)
from devcluster.processes import free_port  # noqa: E402
from jobflow_core.vocabulary.api import JOBFLOW  # noqa: E402

REQUESTS = re.compile(r'^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$')


def request_counts(local) -> Counter:
    """``apiserver_request_total`` by (resource, subresource, verb), for JobFlows and vcjobs."""
    response = local.api.call_api(*local.api.param_serialize(method="GET", resource_path="/metrics",
                                                             auth_settings=["BearerToken"]))
    response.read()
    counts: Counter = Counter()
    for line in response.data.decode().splitlines():
        match = REQUESTS.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group("labels")))
        if labels.get("group") in ("flow.volcano.sh", "batch.volcano.sh") and \
                labels.get("resource") in ("jobflows", "jobs"):
            counts[(labels["resource"], labels.get("subresource", ""), labels["verb"])] += int(float(match.group(
                "value")))
    return counts


def fan_out_jobflow(items: int, parallelism: int) -> dict:
    return {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind, "metadata": {"name": "fan"},
            "spec": {"flows": [{"name": "item", "forEach": {"range": {"count": items},
                                                             "parallelism": parallelism}}]}}


def run(*, items: int = 1000, parallelism: int = 50, timeout: float = 1800) -> dict:
    local = connect()
    before = machine()
    namespace = new_namespace(local, "bench-fan")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-fan-"))
    port = free_port()
    env = {"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig)}
    web = spawn("web", procfile_command("web"), log_dir=log_dir, env=env)
    source = watcher = None
    sizes: list[int] = []
    own_gets = 0
    try:
        wait_healthy(f"http://127.0.0.1:{port}/", web)
        create(local, namespace, job_template("item", run_for="0s"))
        watcher = VcJobWatch(local, namespace)
        source = spawn("eventsource", procfile_command("eventsource"), log_dir=log_dir,
                       env={**env, "NAMESPACES": namespace})
        time.sleep(2)
        counts_before = request_counts(local)
        started = time.monotonic()
        create(local, namespace, fan_out_jobflow(items, parallelism))
        while True:
            flow = local.custom.get_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, namespace,
                                                             JOBFLOW.plural, "fan")
            own_gets += 1
            sizes.append(len(json.dumps(flow, separators=(",", ":"))))
            phase = ((flow.get("status") or {}).get("state") or {}).get("phase")
            if phase in ("Succeed", "Failed") or time.monotonic() - started > timeout:
                break
            time.sleep(1)
        wall = time.monotonic() - started
        time.sleep(2)  # the last events settle
        counts = request_counts(local) - counts_before
        counts[("jobflows", "", "GET")] -= own_gets + 1  # ours: the size samples, and flow_phase below
        final_phase = flow_phase(local, namespace, "fan")
    finally:
        for component in (source, web):
            if component is not None:
                component.stop()
        if watcher is not None:
            watcher.stop()
        local.delete_namespace(namespace)

    most = _most_at_once(watcher, items)
    per_item = {f"{resource}{'/' + sub if sub else ''} {verb}": round(value / items, 2)
                for (resource, sub, verb), value in sorted(counts.items()) if value > 0}
    return {
        "benchmark": "fan_out",
        "parameters": {"items": items, "parallelism": parallelism, "run_for": "0s", "web": procfile_command("web")},
        "machine_before": before, "machine_after": machine(),
        "phase": final_phase,
        "wall_seconds": round(wall, 1),
        "most_items_live_at_once": most,
        "requests": {f"{resource}{'/' + sub if sub else ''} {verb}": value
                     for (resource, sub, verb), value in sorted(counts.items()) if value > 0},
        "requests_per_item": per_item,
        "status_writes": counts[("jobflows", "status", "PUT")] + counts[("jobflows", "status", "PATCH")],
        "jobflow_bytes": {"largest": max(sizes, default=0), "final": sizes[-1] if sizes else 0},
    }


def _most_at_once(watcher: VcJobWatch, items: int) -> int:
    """The most item vcjobs that had been added and not yet seen Completed at one time."""
    moments = []
    for index in range(items):
        name = f"fan-item-{index}"
        added, ended = watcher.seen(name, "ADDED"), watcher.seen(name, "Completed")
        if added:
            moments.append((added[0], 1))
        if ended:
            moments.append((ended[0], -1))
    live = most = 0
    for _, change in sorted(moments, key=lambda m: (m[0], m[1])):
        live += change
        most = max(most, live)
    return most


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--parallelism", type=int, default=50)
    args = parser.parse_args()
    result = run(items=args.items, parallelism=args.parallelism)
    print(table(["what", "figure"], [
        ["phase", result["phase"]], ["wall time", f"{result['wall_seconds']} s"],
        ["most items live at once", result["most_items_live_at_once"]],
        ["status writes", result["status_writes"]],
        ["JobFlow object, largest / final", f"{result['jobflow_bytes']['largest']} / "
                                            f"{result['jobflow_bytes']['final']} bytes"],
        *[[f"per item: {what}", value] for what, value in result["requests_per_item"].items()],
    ]))
    print(f"-> {write_result('fan_out', result)}")


if __name__ == "__main__":
    main()
