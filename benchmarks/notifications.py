"""What CloudEvents out costs: N diamonds with and without ``K_SINK``, on the local control plane.

The real processes: the Procfile's ``web`` (gunicorn) and ``eventsource`` (one fresh namespace each run), a local
HTTP receiver in this process as the sink (it accepts everything). Workload: N seed diamonds
a -> b -> {c, d} -> e of one-pod JobTemplates (``kwok.jobflow.dev/run-for: 0s``), created at once. Measured per
mode: wall time to every JobFlow ``Succeed`` (and, with a sink, every notification delivered), JobFlow status
writes and all JobFlow requests (``apiserver_request_total`` deltas), events received by the sink, the largest
JobFlow object seen.

Run: ``make cluster`` then ``.venv/bin/python -m benchmarks.notifications [--flows 20]``.
Writes ``benchmarks/results/notifications.json``. A benchmark, not a test: nothing here asserts a figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (  # noqa: E402
    connect,
    create,
    job_template,
    machine,
    new_namespace,
    procfile_command,
    spawn,
    table,
    wait_healthy,
    write_result,
)
from benchmarks.fan_out import request_counts  # noqa: E402
from devcluster.processes import free_port  # noqa: E402
from jobflow_core.vocabulary.api import JOBFLOW  # noqa: E402
from tests.seeds import diamond  # noqa: E402
from tests.sinks import Sink  # noqa: E402


def done(local, namespace: str, *, flows: int, notify: bool) -> tuple[bool, int]:
    """(every JobFlow Succeed with nothing left to deliver, largest object in bytes)."""
    listed = local.custom.list_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, namespace, JOBFLOW.plural)
    items = listed["items"]
    finished = len(items) == flows and all(
        ((item.get("status") or {}).get("state") or {}).get("phase") == "Succeed"
        and not (notify and ((item["status"].get("notifications") or {}).get("pending"))) for item in items)
    return finished, max((len(json.dumps(item, separators=(",", ":"))) for item in items), default=0)


def run_once(*, flows: int, notify: bool, timeout: float = 600) -> dict:
    local = connect()
    namespace = new_namespace(local, "bench-notify")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-notify-"))
    sink = Sink()
    port = free_port()
    env = {"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig), **({"K_SINK": sink.url} if notify else {})}
    web = spawn("web", procfile_command("web"), log_dir=log_dir, env=env)
    source = None
    largest = lists = 0
    try:
        wait_healthy(f"http://127.0.0.1:{port}/", web)
        for name in "abcde":
            create(local, namespace, job_template(name, run_for="0s"))
        source = spawn("eventsource", procfile_command("eventsource"), log_dir=log_dir,
                       env={**env, "NAMESPACES": namespace})
        time.sleep(2)
        before = request_counts(local)
        started = time.monotonic()
        for index in range(flows):
            create(local, namespace, diamond(f"d{index}", retain="retain"))
        while time.monotonic() - started < timeout:
            finished, size = done(local, namespace, flows=flows, notify=notify)
            lists += 1
            largest = max(largest, size)
            if finished:
                break
            time.sleep(1)
        wall = time.monotonic() - started
        time.sleep(2)
        counts = request_counts(local) - before
        counts[("jobflows", "", "LIST")] -= lists
    finally:
        for component in (source, web):
            if component is not None:
                component.stop()
        sink.close()
        local.delete_namespace(namespace)
    received = [request.headers["ce-id"] for request in sink.received]
    jobflow_requests = sum(value for (resource, _, _), value in counts.items() if resource == "jobflows")
    return {"notify": notify, "wall_seconds": round(wall, 1),
            "status_writes": counts[("jobflows", "status", "PUT")],
            "jobflow_requests": jobflow_requests,
            "events_received": len(received), "distinct_events": len(set(received)),
            "largest_jobflow_bytes": largest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=20)
    args = parser.parse_args()
    before = machine()
    runs = [run_once(flows=args.flows, notify=notify) for notify in (False, True, False, True)]
    result = {"benchmark": "notifications", "parameters": {"flows": args.flows, "run_for": "0s"},
              "machine_before": before, "machine_after": machine(), "runs": runs}
    print(table(["K_SINK", "wall s", "status writes", "JobFlow requests", "events (distinct)", "largest bytes"],
                [[run["notify"], run["wall_seconds"], run["status_writes"], run["jobflow_requests"],
                  f"{run['events_received']} ({run['distinct_events']})", run["largest_jobflow_bytes"]]
                 for run in runs]))
    print(f"-> {write_result('notifications', result)}")


if __name__ == "__main__":
    main()
