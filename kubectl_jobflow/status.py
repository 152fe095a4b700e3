"""``status NAME [--watch]``: a JobFlow as a tree of its flows, in DAG order, and live if asked.

::

    JobFlow default/test   Running   2/5   age 10s
    FLOW         AFTER   JOB      PHASE       AGE   RESTARTS   DETAIL
    a                    test-a   Completed   10s   0          ran 4s
    └─ b         a       test-b   Completed   6s    0          ran 4s
       └─ c      b       test-c   Running     2s    0          main: 1/1 Running
       └─ d      b       test-d   Running     2s    0          main: 1/1 Running
          └─ e   c, d    test-e   Waiting     -     -          waiting for "c", "d" to be Completed

A ``forEach`` flow is one line, its vcjobs ``<jobflow>-<flow>-[0-<n-1>]``, its items counted by phase
(``items: 4/6 Completed, 2/6 Running``); ``--items`` adds a table per such flow, one line per item (iteration):
index, vcjob, phase. A flow is indented by its level in the DAG (the longest chain of flows before it) and ``AFTER``
names what it depends on. ``DETAIL`` is the vcjob's pods per task and phase (``taskStatusCount``), how long a finished
vcjob ran (Volcano drops its pod counts), or, for a flow without a vcjob, what it waits for, in the engine's words
(``status.waitingFlows``), with when it is expected to start; a line under the header says when the JobFlow is expected
to end and its critical path, when earlier runs of its JobTemplates tell (``status.expectedCompletion``). A line under
the header gives the JobFlow's ``state.reason`` and ``message`` when there is one, one each other JobFlow it waits for
(``status.awaitedJobFlows``: the run it is bound to and how it ended), and another its Volcano queue
(``status.queue``): Waiting with its place in line and what its first stages need, or Admitted with what its unfinished
vcjobs reserve; another its deadline (``status.deadline``: OnTime, AtRisk, Missed or Met, and why); another the
cost of its ended vcjobs (``status.cost``: requests x seconds run), and then a ``COST``
column gives each flow's (``jobStatusList[].cost``, a ``forEach`` or ``repeat`` flow's items added up; ``-`` while
nothing is charged); a vcjob that no longer exists (``jobRetainPolicy: delete``) is marked ``(deleted)``.

A flow that makes a child JobFlow (``flows[].jobFlow``) names it in ``JOB``, its phase as its flow's run in
``PHASE``, and in ``DETAIL`` its JobFlowTemplate and the child's own phase and progress; the child's flows follow,
their names under the flow's and marked ``┆`` (inside a child JobFlow), and so on down for its children::

    FLOW          AFTER   JOB                    PHASE       AGE     RESTARTS   DETAIL
    prep                  train-prep             Running     5m59s   -          child JobFlow from prepare: Running 1/2
    ┆  fetch              train-prep-fetch       Completed   5m59s   -          child JobFlow from download: Succeed 1/1
    ┆  ┆  get             train-prep-fetch-get   Completed   5m57s   0          pods: 1/1 Succeeded
    ┆  └─ clean   fetch   train-prep-clean       Running     4m      0          main: 1/1 Running
    └─ fit        prep    train-fit              Waiting     -       -          waiting for "prep" to be Completed

The children are found with one LIST of the namespace's JobFlows labelled ``flow.volcano.sh/parent`` (every level at
once; :mod:`display.family` keeps those each parent controls, by UID) and their vcjobs with one more (per 100
children); a JobFlow without a child flow costs neither. A ``forEach`` or ``repeat`` flow of children stays one line
(``--items`` lists them; ``-o json`` has each child's view). A child's own status says whose it is, under its
header (``Child of JobFlow train, flow prep``).

``--watch`` reads the JobFlow and its vcjobs once (and its namespace's child JobFlows and JobFlows' vcjobs, when it
has child flows), then follows them through the watch API
(:mod:`kubectl_jobflow.watching`: no polling; a dropped watch, 410 Gone and an API-server restart are survived)
until it is Succeed (exit 0) or Failed (exit 1), ``--timeout`` passes (exit 4) or the API server stays unreachable
too long (exit 5). On a terminal the view is redrawn in place (each second, for the ages); otherwise a new view is
printed only when something other than an age changed, so a log stays short.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from apiclient.cluster import KubeError
from display.facts import FlowRow, JobFlowFacts, awaited_line, cost_text, deadline_line, queue_line, tasks_text
from display.family import descendants, take_family
from jobflow_core.flows.children import makes_children
from display.times import age, expected
from jobflow_core.vocabulary.api import CREATED_BY_JOBFLOW, JOBFLOW, PARENT, VCJOB
from jobflow_core.vocabulary.naming import FLOW_JOBS_SELECTOR, jobflow_label_value, jobs_of_jobflow_selector
from kubectl_jobflow import exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import columns, formatted, resource_of, utc_now

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context

NAMES_PER_LIST = 100
"""Child JobFlows whose vcjobs one LIST asks for (``createdByJobFlow in (...)``): a URL stays well under the 8 KiB
that proxies in front of API servers commonly accept, even with long names."""
HEADERS = ("FLOW", "AFTER", "JOB", "PHASE", "AGE", "RESTARTS", "DETAIL")
REDRAW = "\x1b[H\x1b[2J"
"""Cursor home, clear screen."""


def render(snap: JobFlowFacts, *, now: datetime, items: bool = False) -> str:
    head = f"JobFlow {snap.namespace}/{snap.name}   {snap.phase or '(no status yet)'}   {snap.progress}   " \
           f"age {age(snap.created, now=now)}\n"
    if snap.parent is not None:
        head += f"Child of JobFlow {snap.parent[0]}" + (f", flow {snap.parent[1]}" if snap.parent[1] else "") + "\n"
    if snap.reason or snap.message:
        head += f"{snap.reason or 'Message'}: {snap.message or ''}\n"
    for entry in snap.awaited:
        head += awaited_line(entry) + "\n"
    if snap.queue is not None and not snap.ended:
        head += queue_line(snap.queue) + "\n"
    if snap.deadline is not None:
        head += deadline_line(snap.deadline) + "\n"
    if snap.cost is not None:
        head += f"Cost: {cost_text(snap.cost)} (requests x seconds run, ended vcjobs)\n"
    if snap.expected_completion:
        head += f"Expected to end {expected(snap.expected_completion, now=now)}, critical path " \
                f"{' -> '.join(snap.critical_path)} (from earlier runs of its JobTemplates)\n"
    if not snap.rows:
        return head + "(no flows)\n"
    lines = _lines(snap, now=now)
    rows = [row for row, _, _ in lines]
    cells = [line for _, line, _ in lines]
    if any(row.cost is not None for row in rows):
        # Only then: a JobFlow with nothing charged (or an engine that charges nothing) keeps its table.
        view = head + columns((*HEADERS[:-1], "COST", HEADERS[-1]),
                              [[*line[:-1], cost_text(row.cost) if row.cost else "-", line[-1]]
                               for row, line in zip(rows, cells, strict=True)])
    else:
        view = head + columns(HEADERS, cells)
    for row, _, owner in lines if items else ():
        if row.each:
            title = "ITERATION" if row.iterations else "ITEM"
            name = row.name if owner is snap else f"{row.name} (JobFlow {owner.name})"
            view += f"\n{name}:\n" + columns((title, "JOB", "PHASE"),
                                              [[str(index), job, phase] for index, job, phase in row.each])
    return view


def _lines(snap: JobFlowFacts, *, now: datetime, base: str = "") -> list[tuple[FlowRow, list[str], JobFlowFacts]]:
    """Each row of ``snap`` with its cells and the JobFlow it is of; under a flow whose child JobFlow is known, that
    child's rows (and theirs), their names indented below the flow's and marked ``┆`` (inside a child JobFlow)."""
    lines = []
    for row in snap.rows:
        lines.append((row, _cells(row, now=now, base=base, child=snap.children.get(row.job)), snap))
        if row.job in snap.children and not row.items:
            lines += _lines(snap.children[row.job], now=now, base=base + "   " * row.level + "┆  ")
    return lines


def _cells(row: FlowRow, *, now: datetime, base: str = "", child: JobFlowFacts | None = None) -> list[str]:
    tree = base + ("   " * (row.level - 1) + "└─ " if row.level else "")
    job = row.job if row.live or row.phase == "Waiting" or row.items else f"{row.job} (deleted)"
    if row.items:
        total = sum(row.items.values())
        detail = ("iterations: " if row.iterations else "items: ") + ", ".join(
            f"{count}/{total} {phase}" for phase, count in row.items.items())
        detail += f"; {row.message}" if row.message else ""
    elif row.phase == "Waiting":
        detail = (row.message or "") + (f"; expected to start {expected(row.expected_start, now=now)}"
                                        if row.expected_start else "")
    elif row.child_template:
        detail = f"child JobFlow from {row.child_template}" + (
            f": {child.phase or '(no status yet)'} {child.progress}" if child else "")
    else:
        detail = tasks_text(row) or (f"ran {row.ran}" if row.ran else "")
    return [tree + row.name, ", ".join(row.after), job, row.phase,
            age(row.created, now=now) if row.created else "-",
            "-" if row.restarts is None else str(row.restarts), detail]


def as_data(snap: JobFlowFacts, *, now: datetime) -> dict[str, Any]:
    """The view for scripts (``-o json|yaml``): the same facts, with times in RFC 3339 and ages in seconds. A flow
    that makes child JobFlows names their JobFlowTemplate (``childTemplate``) and holds each child's own view: its
    JobFlow's (``child``), or, for a ``forEach`` or ``repeat`` flow, its items' (``children``)."""
    def when(value: datetime | None) -> str | None:
        return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None

    return {
        "namespace": snap.namespace, "name": snap.name, "phase": snap.phase, "progress": snap.progress,
        "reason": snap.reason, "message": snap.message, "creationTimestamp": when(snap.created),
        "queue": snap.queue.to_wire() if snap.queue else None,
        **({"deadline": snap.deadline.to_wire()} if snap.deadline else {}),
        "cost": snap.cost.to_wire() if snap.cost else None,
        **({"awaitedJobFlows": [entry.to_wire() for entry in snap.awaited]} if snap.awaited else {}),
        "expectedCompletion": when(snap.expected_completion), "criticalPath": snap.critical_path,
        **({"parent": {"name": snap.parent[0], "flow": snap.parent[1]}} if snap.parent else {}),
        "flows": [
            {"name": row.name, "level": row.level, "after": row.after, "job": row.job, "phase": row.phase,
             "jobExists": row.live, "startTimestamp": when(row.created),
             "ageSeconds": int((now - row.created).total_seconds()) if row.created else None,
             "restarts": row.restarts, "tasks": row.tasks, "replicas": row.replicas,
             "waitingFor": row.waiting_for, "message": row.message, "runningDuration": row.ran,
             "expectedStart": when(row.expected_start),
             **({"items": row.items} if row.items else {}),
             **({"cost": row.cost.to_wire()} if row.cost else {}),
             **_children_data(row, snap, now=now)}
            for row in snap.rows
        ],
    }


def _children_data(row: FlowRow, snap: JobFlowFacts, *, now: datetime) -> dict[str, Any]:
    if not row.child_template:
        return {}
    if row.items:
        return {"childTemplate": row.child_template,
                "children": [as_data(snap.children[job], now=now) for _, job, _ in row.each if job in snap.children]}
    child = snap.children.get(row.job)
    return {"childTemplate": row.child_template, **({"child": as_data(child, now=now)} if child else {})}


def fetch(ctx: Context, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The JobFlow and the vcjobs it created, as the API server has them."""
    jobflow = _jobflow(ctx, name)
    return jobflow, ctx.cluster.jobs_of(jobflow)


def _jobflow(ctx: Context, name: str) -> dict[str, Any]:
    try:
        return ctx.cluster.get(JOBFLOW, ctx.namespace, name)
    except KubeError as error:
        if error.status == 404:
            raise CommandError(f'JobFlow "{ctx.namespace}/{name}" not found: check the name and the namespace '
                               "(kubectl jobflow list -A lists them all)") from error
        raise


def read(ctx: Context, name: str) -> JobFlowFacts:
    jobflow, jobs = fetch(ctx, name)
    family, their_jobs = _family(ctx, jobflow)
    return take_family(jobflow, jobflows=family, jobs=[*jobs, *their_jobs], now=utc_now())


def _family(ctx: Context, jobflow: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The child JobFlows below ``jobflow`` (at every level: one LIST of the namespace's JobFlows labelled as some
    JobFlow's child, the tree built in memory) and their vcjobs (one LIST per :data:`NAMES_PER_LIST` of them). A
    JobFlow none of whose flows makes a child JobFlow costs no request."""
    if not makes_children(jobflow):
        return [], []
    listing = ctx.cluster.list(JOBFLOW, ctx.namespace, label_selector=PARENT)["items"]
    below = descendants(jobflow, listing)
    values = [jobflow_label_value(namespace=ctx.namespace, jobflow=child["metadata"]["name"]) for child in below]
    jobs: list[dict[str, Any]] = []
    for start in range(0, len(values), NAMES_PER_LIST):
        selector = f"{CREATED_BY_JOBFLOW} in ({','.join(values[start:start + NAMES_PER_LIST])})"
        jobs += ctx.cluster.list(VCJOB, ctx.namespace, label_selector=selector)["items"]
    return below, jobs


def run(ctx: Context) -> int:
    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError("name the JobFlow: kubectl jobflow status NAME", code=exits.USAGE)
    if not ctx.args.watch:
        _show(ctx, read(ctx, name), redraw=False)
        return exits.OK
    return _watch(ctx, name)


def _watch(ctx: Context, name: str) -> int:
    """Show the JobFlow, then again on each change the watch API reports of it or of its vcjobs (no polling), until
    it ends (exit 0 when it Succeeds, 1 otherwise), ``--timeout`` passes (exit 4) or the watch is lost (exit 5)."""
    from apiclient.follow import follow, merged

    jobflow = _jobflow(ctx, name)
    # A JobFlow that makes child JobFlows is shown with their flows: then the namespace's child JobFlows and every
    # vcjob some JobFlow made are followed (the children, and so their vcjobs' labels, are not known in advance),
    # each listed once, with the list's version, so its watch starts from it without listing again.
    family = makes_children(jobflow)
    selector = FLOW_JOBS_SELECTOR if family else \
        jobs_of_jobflow_selector(namespace=jobflow["metadata"]["namespace"], jobflow=name)
    listing = ctx.cluster.list(VCJOB, ctx.namespace, label_selector=selector)
    jobs = {job["metadata"]["name"]: job for job in listing["items"]}
    stop = threading.Event()
    follows = [
        follow(ctx.cluster, JOBFLOW, ctx.namespace, field_selector=f"metadata.name={name}",
               since=jobflow["metadata"]["resourceVersion"], seen=(jobflow,), stop=stop),
        follow(ctx.cluster, VCJOB, ctx.namespace, label_selector=selector,
               since=listing["metadata"]["resourceVersion"], seen=tuple(listing["items"]), stop=stop)]
    children: dict[str, dict[str, Any]] = {}
    if family:
        kin = ctx.cluster.list(JOBFLOW, ctx.namespace, label_selector=PARENT)
        children = {child["metadata"]["name"]: child for child in kin["items"]}
        follows.append(follow(ctx.cluster, JOBFLOW, ctx.namespace, label_selector=PARENT,
                              since=kin["metadata"]["resourceVersion"], seen=tuple(kin["items"]), stop=stop))
    streams = merged(*follows, timeout=1.0, stop=stop)
    deadline = time.monotonic() + ctx.args.timeout if ctx.args.timeout > 0 else None
    redraw = ctx.out.isatty() and not ctx.args.output
    shown: JobFlowFacts | None = None
    changed = True
    while True:
        if changed:
            snap = take_family(jobflow, jobflows=children.values(), jobs=jobs.values(), now=utc_now())
            if redraw or snap != shown:
                if shown is not None and not redraw:
                    ctx.write({"": "\n", "yaml": "---\n"}.get(ctx.args.output.format if ctx.args.output else "", ""))
                _show(ctx, snap, redraw=redraw)
                shown = snap
            if snap.ended:
                return exits.OK if snap.phase == "Succeed" else exits.FAILED
        if deadline is not None and time.monotonic() > deadline:
            raise CommandError(f"JobFlow {snap.namespace}/{name} is still {snap.phase or 'without status'} after "
                               f"{ctx.args.timeout:g}s (raise --timeout, or 0 to wait for ever)", code=exits.TIMED_OUT)
        event = next(streams)
        changed = event is not None or redraw  # nothing for a second: a terminal is redrawn (its ages move on)
        if event is None:
            continue
        which, kind, obj = event
        if which == 0 and kind == "DELETED":
            raise CommandError(f"JobFlow {snap.namespace}/{name} was deleted")
        if which == 0:
            jobflow = obj
            continue
        known = jobs if which == 1 else children
        if kind == "DELETED":
            known.pop(obj["metadata"]["name"], None)
        else:
            known[obj["metadata"]["name"]] = obj


def _show(ctx: Context, snap: JobFlowFacts, *, redraw: bool) -> None:
    now = utc_now()
    if ctx.args.output and ctx.args.output.format == "name":
        ctx.write(f"{resource_of(JOBFLOW)}/{snap.name}\n")
    elif ctx.args.output:
        ctx.write(formatted(as_data(snap, now=now), ctx.args.output))
    else:
        ctx.write((REDRAW if redraw else "") + render(snap, now=now, items=getattr(ctx.args, "items", False)))
