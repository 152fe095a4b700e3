"""API requests and status writes per handled event: the handler in-process, counting, fed by the real event source.

The handler is ``handlers.create_app({"KUBE": kube})`` on a threaded werkzeug server (as ``tests/cluster/engine.py``
runs it), where ``kube`` is a ``KubeApi`` whose every request is counted by verb and resource. A thin WSGI wrapper
opens a record per request, so each API request is charged to the event that caused it. The Procfile's
``eventsource`` command (a real process, ``NAMESPACES`` = a fresh namespace) feeds it while ``--flows`` chains of
``--length`` one-pod flows run to ``Succeed``; the run ends when no event has come for 3 s.

Checked against the design targets (``handlers/kube.py``, ``handlers/jobflows.py``):

- at most one JobFlow status write per reconcile, and none that leaves the stored status as it was (a write whose
  answer has the very status the handler had read is counted as a no-op write);
- reads bounded by the flow: per reconcile one GET of the JobFlow (or one LIST of the namespace's JobFlows for a
  vcjob event) and one LIST of its vcjobs, plus JobTemplate GETs only for flows starting now (= vcjobs created),
  plus a GET and a LIST per JobTemplate whose ``jobDependsOnList`` is refreshed.

Run: ``.venv/bin/python -m benchmarks.requests_per_event [--flows 3] [--length 11]``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from werkzeug.serving import make_server

from apiclient.rest import Conflict
from benchmarks.common import (chain_jobflow, connect, create, flow_phase, job_template, machine, new_namespace,
                               procfile_command, spawn, table, write_result)
from devcluster.processes import free_port
from handlers import create_app
from handlers.kube import KubeApi

_current = threading.local()
READS = ("GET", "LIST")
WRITES = ("CREATE", "DELETE", "PUT", "POST", "PATCH")


def classify(fn, args: tuple, kwargs: dict) -> str:
    """``GET jobflows``, ``LIST jobs by flow``, ``PUT jobflows/status``, ``POST events``, ... for one client call."""
    name = fn.__name__
    if name == "_core":  # a core/v1 request by path: ("POST", ".../events") or ("GET", ".../pods")
        method, path = args[0], args[1]
        return f"{'LIST' if method == 'GET' else method} {path.rsplit('/', 1)[-1]}"
    plural = args[2] if name == "list_cluster_custom_object" else args[3]
    if name.startswith("get_"):
        return f"GET {plural}"
    if name.startswith("list_"):
        selector = kwargs.get("label_selector") or ""
        return f"LIST {plural}" + (" by flow" if "JobFlow" in selector else " by template" if selector else "")
    if name.startswith("create_"):
        return f"CREATE {plural}"
    if name.startswith("delete_"):
        return f"DELETE {plural}"
    if name.startswith("patch_"):
        return f"PATCH {plural}"
    return f"PUT {plural}/status"


class CountingKube(KubeApi):
    """A KubeApi that charges each request to the event being handled on this thread."""

    def __init__(self, api) -> None:
        super().__init__(api)
        self._read_status: dict[tuple[str, str], object] = {}  # (name, resourceVersion) -> status as read
        self._lock = threading.Lock()

    def _call(self, fn, *args, **kwargs):
        record = getattr(_current, "record", None)
        verb = classify(fn, args, kwargs)
        started = time.perf_counter()
        try:
            result = super()._call(fn, *args, **kwargs)
        except Conflict:
            if record is not None:
                record["conflicts"] += 1
            raise
        if record is not None:
            record["calls"][verb] += 1
            record["api_seconds"][verb] += time.perf_counter() - started
        with self._lock:
            if verb in ("GET jobflows", "LIST jobflows") and result:
                for flow in result.get("items", [result]):
                    meta = flow["metadata"]
                    self._read_status[(meta["name"], meta["resourceVersion"])] = flow.get("status")
            elif verb == "PUT jobflows/status" and record is not None:
                before = self._read_status.get((args[4], args[5]["metadata"]["resourceVersion"]), object())
                if before == result.get("status"):
                    record["noop_writes"] += 1
        return result


def counting_app(app):
    """WSGI wrapper: one record per request, with the CloudEvent's kind and change and the reply's status."""
    records: list[dict] = []

    def wrapped(environ, start_response):
        kind = environ.get("HTTP_CE_KIND", "?")
        change = environ.get("HTTP_CE_TYPE", "?").rsplit(".", 1)[-1]
        record = {"event": f"{kind} {change}", "calls": Counter(), "api_seconds": Counter(), "conflicts": 0,
                  "noop_writes": 0}
        _current.record = record
        started = time.perf_counter()

        def start(status, headers, exc_info=None):
            record["status"] = int(status.split()[0])
            return start_response(status, headers, exc_info)
        try:
            return app(environ, start)
        finally:
            record["seconds"] = time.perf_counter() - started
            _current.record = None
            if environ.get("PATH_INFO") == "/" and environ.get("REQUEST_METHOD") == "POST":
                records.append(record)
    wrapped.records = records
    return wrapped


def per_event(records: list[dict]) -> dict:
    """Mean and max of reads, writes and status writes per event, and the checks against the targets."""
    def n(record, prefixes):
        return sum(c for verb, c in record["calls"].items() if verb.startswith(prefixes))

    def stats(values):
        return {"mean": round(sum(values) / len(values), 2), "max": max(values)} if values else {}
    calls = sum((r["calls"] for r in records), Counter())
    api_seconds = sum((r["api_seconds"] for r in records), Counter())
    reads = [n(r, READS) for r in records]
    writes = [n(r, WRITES) for r in records]
    status_writes = [r["calls"]["PUT jobflows/status"] for r in records]
    reconciles = [r["calls"]["LIST jobs by flow"] for r in records]
    template_refreshes = [r["calls"]["LIST jobs by template"] for r in records]
    # The read bound of the module docstring, per event: 2 per reconcile, 1 per template of a flow starting now,
    # 2 per JobTemplate refreshed; a vcjob event's single LIST of JobFlows serves all its reconciles.
    over_bound = sum(1 for r, rec, tpl in zip(records, reconciles, template_refreshes)
                     if n(r, READS) > 2 * max(rec, 1) + r["calls"]["CREATE jobs"] + 2 * tpl)
    return {
        "events": len(records),
        "reads": stats(reads), "writes": stats(writes),
        "jobflow_status_writes": stats(status_writes),
        "jobtemplate_status_writes": stats([r["calls"]["PUT jobtemplates/status"] for r in records]),
        "events_with_zero_writes": sum(1 for w in writes if w == 0),
        "events_with_zero_status_writes": sum(1 for s in status_writes if s == 0),
        "events_with_more_status_writes_than_reconciles": sum(1 for s, c in zip(status_writes, reconciles) if s > c),
        "events_with_more_than_one_status_write": sum(1 for s in status_writes if s > 1),
        "noop_status_writes": sum(r["noop_writes"] for r in records),
        "template_gets_beyond_flows_starting_now": sum(
            1 for r, tpl in zip(records, template_refreshes)
            if r["calls"]["GET jobtemplates"] > r["calls"]["CREATE jobs"] + tpl),
        "events_over_read_bound": over_bound,
        "conflicts": sum(r["conflicts"] for r in records),
        "replies": dict(Counter(str(r.get("status")) for r in records)),
        "handling_ms_mean": round(1000 * sum(r["seconds"] for r in records) / max(len(records), 1), 1),
        "calls_total": dict(calls),
        "api_ms_mean_by_call": {verb: round(1000 * api_seconds[verb] / count, 1) for verb, count in calls.items()},
        "api_share_of_handling": round(sum(api_seconds.values()) / max(sum(r["seconds"] for r in records), 1e-9), 2),
    }


def run(*, flows: int = 3, length: int = 11, run_for: str = "200ms", timeout: float = 600) -> dict:
    local = connect()
    before = machine()
    namespace = new_namespace(local, "bench-req")
    for name in ("handlers", "werkzeug"):  # their per-request INFO lines would bury the table
        logging.getLogger(name).setLevel(logging.WARNING)
    kube = CountingKube(local.connection)
    app = counting_app(create_app({"KUBE": kube}))
    port = free_port()
    server = make_server("127.0.0.1", port, app, threaded=True)
    threading.Thread(target=server.serve_forever, name="handler", daemon=True).start()
    names = [f"f{i:02d}" for i in range(length)]
    source = None
    try:
        for name in names:
            create(local, namespace, job_template(name, run_for=run_for))
        source = spawn("eventsource", procfile_command("eventsource"), log_dir=Path(tempfile.mkdtemp("bench-req")),
                       env={"PORT": str(port), "KUBECONFIG": str(local.state.kubeconfig), "NAMESPACES": namespace})
        for j in range(flows):
            create(local, namespace, chain_jobflow(f"c{j}", names))
        local.wait_until("every chain to Succeed", lambda: all(
            flow_phase(local, namespace, f"c{j}") == "Succeed" for j in range(flows)), timeout=timeout, interval=0.5)
        wait_for_quiet(app.records, seconds=3)
    finally:
        if source is not None:
            source.stop()
        server.shutdown()
        local.delete_namespace(namespace)
    by_event = {}
    for kind in sorted({r["event"] for r in app.records}):
        by_event[kind] = per_event([r for r in app.records if r["event"] == kind])
    return {"benchmark": "requests_per_event", "parameters": {"flows": flows, "length": length, "run_for": run_for},
            "machine_before": before, "machine_after": machine(),
            "all_events": per_event(app.records), "by_event": by_event}


def wait_for_quiet(records: list[dict], *, seconds: float) -> None:
    """Return once no event has been handled for ``seconds`` (records are appended as requests finish)."""
    count, since = -1, time.monotonic()
    while count != len(records) or time.monotonic() - since < seconds:
        if count != len(records):
            count, since = len(records), time.monotonic()
        time.sleep(0.25)


def report(result: dict) -> str:
    rows = []
    for label, s in [("all events", result["all_events"]), *result["by_event"].items()]:
        rows.append([label, s["events"], s["reads"].get("mean"), s["reads"].get("max"),
                     s["jobflow_status_writes"].get("mean"), s["jobflow_status_writes"].get("max"),
                     s["jobtemplate_status_writes"].get("mean"), s["events_with_zero_writes"],
                     s["noop_status_writes"], s["events_over_read_bound"], s["handling_ms_mean"]])
    a = result["all_events"]
    return (table(["per event", "n", "reads", "max", "JF status", "max", "JT status", "0 writes", "no-op writes",
                   "over bound", "ms"], rows) +
            f"\nchecks: >1 JobFlow status write in one event: {a['events_with_more_than_one_status_write']}; "
            f"status writes > reconciles: {a['events_with_more_status_writes_than_reconciles']}; no-op status "
            f"writes: {a['noop_status_writes']}; template GETs beyond flows starting now: "
            f"{a['template_gets_beyond_flows_starting_now']}; conflicts: {a['conflicts']}; replies {a['replies']}"
            f"\nAPI calls, mean ms: {a['api_ms_mean_by_call']} ({a['api_share_of_handling']:.0%} of handling time)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, default=3, help="JobFlows (chains) run at the same time")
    parser.add_argument("--length", type=int, default=11, help="flows per chain")
    parser.add_argument("--run-for", default="200ms", help="how long each pod runs (Go duration)")
    args = parser.parse_args()
    result = run(flows=args.flows, length=args.length, run_for=args.run_for)
    print(report(result))
    print(f"-> {write_result('requests_per_event', result)}")


if __name__ == "__main__":
    main()
