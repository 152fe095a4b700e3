"""JobFlow dependency latency with the real processes: from a JobFlow ``A``'s ``Succeed`` to the first vcjob of a
JobFlow ``B`` that waits for it (``spec.dependsOn: {jobFlows: [{name: A}]}``, :mod:`jobflow_core.dag.awaits`), and
what waking ``B`` costs in API requests.

Set-up, as :mod:`benchmarks.child_latency`, in a fresh namespace: the Procfile's ``web`` command (gunicorn, one worker,
4 threads) on a free port and its ``eventsource`` command (``NAMESPACES`` = that namespace, ``K_SINK`` = that
handler), as written: the event source's resync stays at its default (``RESYNC_SECONDS`` 300), the safety net, not
what is measured. One-pod JobTemplates ``a`` and ``b`` (``kwok.jobflow.dev/run-for`` 200ms). Each round creates
``--pairs`` pairs at once, each ``r<k>a<i>`` (the one flow ``a``) and right after it ``r<k>b<i>`` (the one flow
``b``, the whole JobFlow waiting for ``r<k>a<i>``); the next round starts when every ``b`` Completed.

The engine talks to a kube-apiserver of its own on the cluster's etcd, as in :mod:`benchmarks.side_by_side`, started
with an audit log of every LIST of JobFlows (``--no-audit``: the cluster's API server, as child_latency; no request
count then). The audit log gives each LIST's query, so the LISTs that look for waiters (label selector
``jobflow.waits.flow.volcano.sh/<name>``, :func:`jobflow_core.dag.awaits.waiters_selectors`) are counted per JobFlow
that ended: the wake's whole request cost, besides ``B``'s own reconcile (which any event about ``B`` would cost too).

Measured by two watches on the namespace (this process, against the cluster's API server, local monotonic clock;
each records the time a thing is *first* seen):

* **wake**: ``r<k>a<i>`` first shown with ``status.state.phase: Succeed`` -> ``r<k>b<i>-b`` ``ADDED``. ``A``'s
  ``status.endTimestamp`` is in whole seconds (its vcjob's end), so the watch's sight stands for the moment it
  ended; a ``Succeed`` that reaches this process after ``b``'s ``ADDED`` is a negative sample, kept as measured;
* and around it: ``r<k>a<i>-a`` ``Completed`` -> ``A`` ``Succeed`` (``A``'s own reconcile, started by that vcjob's
  event) and ``a`` ``Completed`` -> ``b`` ``ADDED`` (the whole step, as a dependency inside one JobFlow is measured).

``A``'s ``Succeed`` is the handler's own write, for which our event source sends no event: the request that
wrote it lists the JobFlows waiting for ``A`` (``handlers/dispatch.py``, ``Dispatcher._waiters``) and, as the event
source asked (``HANDLER_REPLIES``), hands ``B`` back in its answer; the event source sends an event about ``B``, whose
reconcile creates ``b``. The handler's log splits the wake sample there (:func:`woken`): ``A`` ``Succeed`` -> that
event about ``B`` at the handler (the answer, the event source's queue), and from there -> ``b`` ``ADDED``; a ``B``
whose ``b`` was created by a request for an event about it that came before ``A``'s ``Succeed`` was logged is not
counted as woken. The event source's ``/metrics`` (``METRICS_PORT``, a free port) count the JobFlows handed back. The
run is shorter than the event source's first resync (300 s after it starts), so nothing else re-announces ``B``; a
``B`` started more than ``--late`` seconds (5) after ``A``'s ``Succeed`` is counted all the same.

Run: ``.venv/bin/python -m benchmarks.awaits_latency [--pairs 10] [--rounds 3] [--run-for 200ms] [--no-audit]``
(about a minute at the defaults) -> ``results/awaits_latency-<pairs>x<rounds>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from bisect import bisect_right
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.child_latency import EVENT, RECONCILED, wall_time, head, other_test_runs
from benchmarks.common import (VcJobWatch, chain_jobflow, connect, create, job_template, machine, new_namespace,
                               procfile_command, spawn, summary_ms, table, wait_healthy, write_result)
from benchmarks.side_by_side import EngineApiServer
from devcluster import objects
from devcluster.processes import free_port, start
from devcluster.testing import LocalCluster
from jobflow_core.dag.awaits import WAITS_FOR_JOBFLOW, WAITS_FOR_TEMPLATE
from jobflow_core.vocabulary.api import JOBFLOW

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [list]
    resources: [{group: flow.volcano.sh, resources: [jobflows]}]
  - level: None
"""
"""Every LIST of JobFlows, with its query (``requestURI``) and who made it (``userAgent``); nothing else."""


class AuditedApiServer(EngineApiServer):
    """:class:`benchmarks.side_by_side.EngineApiServer` (a second kube-apiserver on the cluster's etcd, for the engine
    alone) with an audit log of the LISTs of JobFlows."""

    def __init__(self, local: LocalCluster, log_dir: Path) -> None:
        # EngineApiServer.__init__ takes no extra flags: its start, with the audit flags added
        [first] = [c for c in local.state.components if c.name == "kube-apiserver"]
        args = [a.decode() for a in Path(f"/proc/{first.pid}/cmdline").read_bytes().split(b"\0")[1:-1]]
        self.port = free_port()
        args = [f"--secure-port={self.port}" if a.startswith("--secure-port=") else a for a in args
                if not a.startswith("--audit-")]
        policy, self.audit_log = log_dir / "audit-policy.yaml", log_dir / "audit.log"
        policy.write_text(AUDIT_POLICY)
        args += [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-format=json"]
        self.token = local.state.token
        self.component = start("engine-apiserver", Path(first.binary), args, log_dir=log_dir)
        self.url = f"https://127.0.0.1:{self.port}"
        self.kubeconfig = log_dir / "engine.kubeconfig"
        self.kubeconfig.write_text(local.state.kubeconfig.read_text().replace(local.state.server, self.url))
        objects.poll("the engine's kube-apiserver ready", lambda: self._get("/readyz") == b"ok", timeout=90,
                     on_tick=self._alive)

    def jobflow_lists(self, namespace: str) -> list[tuple[str, str]]:
        """(label selector or "", user agent's program) of every LIST of the JobFlows of ``namespace`` so far."""
        found = []
        for line in self.audit_log.read_text(errors="replace").splitlines():
            entry = json.loads(line)
            if entry.get("stage") != "ResponseComplete" or entry.get("verb") != "list" \
                    or (entry.get("objectRef") or {}).get("namespace") != namespace:
                continue
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(entry["requestURI"]).query)
            found.append(((query.get("labelSelector") or [""])[0], (entry.get("userAgent") or "?").split("/")[0]))
        return found


def waiting_jobflow(name: str, *, awaits: str, flow: str) -> dict:
    """The one flow ``flow``; the whole JobFlow waits for the JobFlow ``awaits`` to succeed."""
    return {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind, "metadata": {"name": name},
            "spec": {"jobRetainPolicy": "retain", "dependsOn": {"jobFlows": [{"name": awaits}]},
                     "flows": [{"name": flow}]}}


Reconciled = tuple[float, str, str, list[str], bool]
"""A handler log's ``reconciled`` line: (wall time, JobFlow, phase, created, status written)."""


def parse_handler_log(path: Path, namespace: str) -> tuple[list[Reconciled], dict[str, list[float]]]:
    """The ``reconciled`` lines of ``namespace`` in order, and the wall times events about each of its JobFlows
    reached the handler."""
    reconciled, arrivals = [], {}
    for line in path.read_text(errors="replace").splitlines():
        if (match := EVENT.match(line)) and match.group(5) == namespace and match.group(4) == JOBFLOW.kind:
            arrivals.setdefault(match.group(6), []).append(wall_time(*match.group(1, 2)))
        elif (match := RECONCILED.match(line)) and match.group(3) == namespace:
            stamp, millis, _, name, _, phase, made, written = match.groups()
            reconciled.append((wall_time(stamp, millis), name, phase,
                               [n.strip(" '") for n in made.split(",") if n.strip()], written == "True"))
    return reconciled, arrivals


def woken(reconciled: list[Reconciled], arrivals: dict[str, list[float]], a: str, b: str) -> float | None:
    """When the event about ``b`` that started the reconcile creating ``b``'s first vcjob reached the handler, if
    it came after the line of ``a``'s ``Succeed`` write (the wake hands ``b`` back after that line is logged); None
    when it came before, or ``b`` was not created after ``a``'s ``Succeed`` was written."""
    ended = next((r[0] for r in reconciled if r[1] == a and r[2] == "Succeed" and r[4]), None)
    made = next((r[0] for r in reconciled if r[1] == b and f"{b}-b" in r[3]), None)
    if ended is None or made is None:
        return None
    times = arrivals.get(b, [])
    i = bisect_right(times, made)
    return times[i - 1] if i and times[i - 1] >= ended else None


def handed_back(url: str) -> float | None:
    """The event source's count of JobFlows the handler handed back (``jobflow_eventsource_answers_total``)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            text = reply.read().decode()
    except OSError:
        return None
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("jobflow_eventsource_answers_total{") and 'what="handed"' in line)


def run(*, pairs: int = 10, rounds: int = 3, run_for: str = "200ms", audit: bool = True, late: float = 5.0,
        timeout: float = 300) -> dict:
    local = connect()
    before, tests_before, commit = machine(), other_test_runs(), head()
    namespace = new_namespace(local, "bench-awaits")
    log_dir = Path(tempfile.mkdtemp(prefix="bench-awaits-"))
    server = AuditedApiServer(local, log_dir) if audit else None
    port, metrics_port = free_port(), free_port()
    env = {"PORT": str(port), "KUBECONFIG": str(server.kubeconfig if server else local.state.kubeconfig)}
    web = spawn("web", procfile_command("web"), log_dir=log_dir, env=env)
    names = [[(f"r{k}a{i:02d}", f"r{k}b{i:02d}") for i in range(pairs)] for k in range(rounds)]
    source = jobs = jobflows = None
    round_seconds, lists, handed = [], [], None
    try:
        wait_healthy(f"http://127.0.0.1:{port}/", web)
        for name in ("a", "b"):
            create(local, namespace, job_template(name, run_for=run_for))
        jobs, jobflows = VcJobWatch(local, namespace), VcJobWatch(local, namespace, JOBFLOW)
        source = spawn("eventsource", procfile_command("eventsource"), log_dir=log_dir,
                       env={**env, "NAMESPACES": namespace, "METRICS_PORT": str(metrics_port),
                            "METRICS_ADDRESS": "127.0.0.1"})
        time.sleep(2)  # its first lists and watches are open; the template announcements are through
        for k in range(rounds):
            started = time.monotonic()
            for a, b in names[k]:
                create(local, namespace, chain_jobflow(a, ["a"]))
                create(local, namespace, waiting_jobflow(b, awaits=a, flow="b"))
            jobs.wait_for([f"{b}-b" for _, b in names[k]], "Completed", timeout=timeout)
            round_seconds.append(round(time.monotonic() - started, 1))
        time.sleep(1)  # let the last log lines reach the file, and B's own end its wake LIST
        lists = server.jobflow_lists(namespace) if server else []
        handed = handed_back(f"http://127.0.0.1:{metrics_port}/metrics")
    finally:
        for component in (source, web):
            if component is not None:
                component.stop()
        for watcher in (jobs, jobflows):
            if watcher is not None:
                watcher.stop()
        local.delete_namespace(namespace)
        if server is not None:
            server.stop()

    reconciled, arrivals = parse_handler_log(log_dir / "web.log", namespace)
    wake, own, whole, to_event, from_event = [], [], [], [], []
    for a, b in sum(names, []):
        succeed, completed = jobflows.seen(a, "Succeed"), jobs.seen(f"{a}-a", "Completed")
        added = jobs.seen(f"{b}-b", "ADDED")
        wake.append(added[0] - succeed[0])
        own.append(succeed[0] - completed[0])
        whole.append(added[0] - completed[0])
        if (arrived := woken(reconciled, arrivals, a, b)) is not None:
            to_event.append(max(0.0, arrived - succeed[1]))
            from_event.append(added[1] - arrived)
    n = len(wake)
    waking = Counter(selector for selector, _ in lists if selector.startswith((WAITS_FOR_JOBFLOW, WAITS_FOR_TEMPLATE)))
    per_a = Counter(waking.get(WAITS_FOR_JOBFLOW + a, 0) for a, _ in sum(names, []))
    per_b = Counter(waking.get(WAITS_FOR_JOBFLOW + b, 0) for _, b in sum(names, []))
    ended = sum(1 for _, _, phase, _, written in reconciled if written and phase in ("Succeed", "Failed"))
    return {
        "benchmark": "awaits_latency",
        "parameters": {"pairs": pairs, "rounds": rounds, "run_for": run_for, "late_seconds": late,
                       "engine_api_server": "its own, audited" if audit else "the cluster's",
                       "web": procfile_command("web"), "eventsource": procfile_command("eventsource")},
        "head": commit if commit == head() else f"{commit}, then {head()}",
        "machine_before": before, "machine_after": machine(),
        "a_succeed_to_b_vcjob_added_ms": summary_ms(wake),
        "a_vcjob_completed_to_a_succeed_ms": summary_ms(own),
        "a_vcjob_completed_to_b_vcjob_added_ms": summary_ms(whole),
        "a_succeed_to_b_event_at_handler_ms": summary_ms(to_event),
        "b_event_at_handler_to_b_vcjob_added_ms": summary_ms(from_event),
        "pairs_measured": n,
        "b_started_later_than_late_seconds": sum(1 for s in wake if s > late),
        "b_woken_by_an_event_after_a_succeed_was_written": len(to_event),
        "jobflows_handed_back_to_the_event_source": handed,
        "requests": {
            "jobflow_lists_by_kind": dict(Counter(
                "waiters (" + s.split("/")[0] + ")" if s.startswith((WAITS_FOR_JOBFLOW, WAITS_FOR_TEMPLATE))
                else (f"selector {s}" if s else "no selector") + f" by {agent}" for s, agent in lists)),
            "waiter_lists_per_a_end": {str(k): v for k, v in sorted(per_a.items())},
            "waiter_lists_per_b_end": {str(k): v for k, v in sorted(per_b.items())},
            "waiter_lists": sum(waking.values()),
            "status_writes_of_an_ended_jobflow": ended,
        } if audit else None,
        "other_test_runs": {"before": tests_before, "after": other_test_runs()},
        "round_seconds": round_seconds,
        "handler_log": str(log_dir / "web.log"),
    }


def report(result: dict) -> str:
    fields = ("n", "p50", "p90", "p99", "max", "min")
    rows = [[label, *(result[key].get(f, "-") for f in fields)] for label, key in (
        ("A Succeed -> B's first vcjob ADDED (the wake)", "a_succeed_to_b_vcjob_added_ms"),
        ("  A Succeed -> the event about B at the handler", "a_succeed_to_b_event_at_handler_ms"),
        ("  that event at the handler -> B's vcjob ADDED", "b_event_at_handler_to_b_vcjob_added_ms"),
        ("A's vcjob Completed -> A Succeed", "a_vcjob_completed_to_a_succeed_ms"),
        ("A's vcjob Completed -> B's first vcjob ADDED", "a_vcjob_completed_to_b_vcjob_added_ms"))]
    parameters, requests = result["parameters"], result["requests"]
    cost = (f"\nwaiter LISTs: {requests['waiter_lists']} for {requests['status_writes_of_an_ended_jobflow']} status "
            f"writes of an ended JobFlow; per A's end {requests['waiter_lists_per_a_end']}, per B's end "
            f"{requests['waiter_lists_per_b_end']} (count: JobFlows); JobFlow LISTs by kind "
            f"{requests['jobflow_lists_by_kind']}") if requests else ""
    return (table(["ms", *fields], rows) +
            f"\n{parameters['rounds']} rounds of {parameters['pairs']} pairs at once, "
            f"{result['round_seconds']} s each; "
            f"B started more than {parameters['late_seconds']:g} s after A's Succeed: "
            f"{result['b_started_later_than_late_seconds']}/{result['pairs_measured']}; B woken by an event that "
            f"came after A's Succeed was written: {result['b_woken_by_an_event_after_a_succeed_was_written']}/"
            f"{result['pairs_measured']}; JobFlows handed back to the event source: "
            f"{result['jobflows_handed_back_to_the_event_source']}" + cost +
            f"\nload {result['machine_before']['loadavg']} -> {result['machine_after']['loadavg']}, head "
            f"{result['head']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10, help="pairs A, B (B waits for A) created at once per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, one after another")
    parser.add_argument("--run-for", default="200ms", help="how long each pod runs (Go duration)")
    parser.add_argument("--late", type=float, default=5.0, help="count the B's started later than this (seconds)")
    parser.add_argument("--no-audit", dest="audit", action="store_false",
                        help="the engine on the cluster's API server (as child_latency), no request count")
    args = parser.parse_args()
    result = run(pairs=args.pairs, rounds=args.rounds, run_for=args.run_for, audit=args.audit, late=args.late)
    print(report(result))
    suffix = "" if args.audit else "-no-audit"
    print(f"-> {write_result(f'awaits_latency-{args.pairs}x{args.rounds}{suffix}', result)}")


if __name__ == "__main__":
    main()
