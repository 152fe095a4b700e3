"""What each page shows, as JSON: pure functions of the objects the store holds and the clock.

The facts are the command line's (:mod:`display.facts` for a JobFlow's flows, waits, forecasts and fan-out
counts; :mod:`display.timeline` for the Gantt chart and its critical path), so the page and
``kubectl jobflow status`` never disagree. What is added here is where things go: :mod:`display.layout`
places the nodes, and a state's colour, glyph and words come from :data:`STATES` (colour is never the only sign).
Whether an action's button can do anything (a Stop, an approval gate's answer) is :mod:`apiclient.steering`'s to say,
the same checks the action makes, so a button is enabled exactly when its action would not be refused for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from apiclient.steering import answer_words, gate_of, stoppable
from display import drawing
from display import timeline
from display.facts import FlowRow, JobFlowFacts, cost_text, parent_of, queue_line, take, tasks_text
from display.family import children_of
from display.layout import place
from display.times import age, expected, parse_time
from jobflow_core.dag.graph import flow_graph
from jobflow_core.models import JobFlow, JobTemplate
from jobflow_core.vocabulary import label_selectors
from jobflow_core.vocabulary.api import CHILD_TEMPLATE, RUN_OF
from jobflow_core.vocabulary.naming import template_name

STATES: Mapping[str, tuple[str, str]] = {
    "Completed": ("done", "✓"), "Cached": ("done", "✓"),
    "Running": ("running", "▶"), "Completing": ("running", "▶"),
    "Pending": ("pending", "…"), "Created": ("pending", "…"),
    "Restarting": ("trouble", "↻"), "Aborting": ("trouble", "!"), "Terminating": ("trouble", "!"),
    "Failed": ("failed", "✗"), "Terminated": ("failed", "✗"), "Aborted": ("failed", "✗"),
    "Waiting": ("waiting", "○"), "Skipped": ("skipped", "–"),
}
"""A shown phase -> its colour class (``dashboard/static/dashboard.css``, Okabe-Ito hues, safe for colour-blind
eyes) and a glyph; the phase's own word is always printed next to them."""


def when(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def jobflow_row(obj: Mapping[str, Any], *, now: datetime) -> dict[str, Any]:
    """One line of the list page, from the JobFlow's own status (no vcjob needed)."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    state = status.get("state") or {}
    flows = (obj.get("spec") or {}).get("flows") or []
    ended, total = status.get("flowsEnded"), status.get("flowsTotal")
    created = meta.get("creationTimestamp")
    return {
        "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
        "phase": state.get("phase") or "", "reason": state.get("reason"),
        "progress": status.get("progress") or f"0/{len(flows)}",
        "done": (ended / total) if isinstance(ended, int) and total else 0.0,
        "created": created, "age": age(created, now=now) if created else "-",
        "expectedCompletion": status.get("expectedCompletion"),
        "expected": expected(parse_time(status.get("expectedCompletion")), now=now)
        if status.get("expectedCompletion") and state.get("phase") not in ("Succeed", "Failed") else "",
        "failureRate": status.get("failureRate"),
        "suspended": bool((obj.get("spec") or {}).get("suspend")),
        "schedule": (meta.get("labels") or {}).get(RUN_OF),
    }


def list_view(jobflows: Iterable[Mapping[str, Any]], templates: Iterable[Mapping[str, Any]], *,
              now: datetime, loading: bool, namespace: str | None = None, labels: str = "") -> dict[str, Any]:
    """The list page: the JobFlows of ``namespace`` (None: all) whose labels match the selector ``labels``
    (kubectl's ``-l``), newest first, and the JobFlowTemplates of that namespace. The namespaces to choose from are
    every namespace with a JobFlow or a JobFlowTemplate, whatever is chosen. A selector that is not kubectl's syntax
    selects nothing and says why (``selectorError``), so a typo never reads as "no JobFlow"."""
    jobflows, templates = list(jobflows), list(templates)
    namespaces = sorted({(obj.get("metadata") or {}).get("namespace", "") for obj in [*jobflows, *templates]})
    try:
        selector, error = label_selectors.parse(labels), None
    except label_selectors.BadSelector as bad:
        selector, error = None, str(bad)
    chosen = [obj for obj in jobflows if _in(obj, namespace) and selector is not None
              and selector.matches((obj.get("metadata") or {}).get("labels"))]
    rows = sorted((jobflow_row(obj, now=now) for obj in chosen),
                  key=lambda row: (row["created"] or "", row["namespace"], row["name"]), reverse=True)
    schedules = [{"namespace": t["metadata"].get("namespace", ""), "name": t["metadata"].get("name", ""),
                  "schedule": (t.get("spec") or {}).get("schedule"),
                  "suspended": bool((t.get("spec") or {}).get("suspend"))} for t in templates if _in(t, namespace)]
    return {"loading": loading, "jobflows": rows, "total": len(jobflows), "namespaces": namespaces,
            "namespace": namespace, "labels": labels, "selectorError": error,
            "schedules": sorted(schedules, key=lambda s: (s["namespace"], s["name"]))}


def _in(obj: Mapping[str, Any], namespace: str | None) -> bool:
    return namespace is None or (obj.get("metadata") or {}).get("namespace") == namespace


def jobflow_view(jobflow: dict[str, Any], jobs: list[dict[str, Any]], events: list[dict[str, Any]], *,
                 now: datetime, children: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """The JobFlow page: its header, every flow as a placed node (started or not), its edges, timeline, events.
    A fan-out's items are not in it (a 1,000-item fan-out would dominate it): the page asks for them
    (:func:`items_view`) when the user opens the node. A flow that made a child JobFlow (among ``children``, the
    JobFlows it controls) is one node, with the child's phase and progress (its list line, :func:`jobflow_row`)
    and the way to its own page; a child's page names its parent (``parent``)."""
    flow = JobFlow.model_validate(jobflow)
    graph = flow_graph(flow)
    children = children_of(jobflow, children)
    snap = take(jobflow, jobs, now=now, children=children)
    kin = {(child.get("metadata") or {}).get("name"): jobflow_row(child, now=now) for child in children}
    chart = timeline.build(jobflow, jobs, now=now)
    # The forecast's path (status.criticalPath) needs earlier runs' statistics; a first run has none, and then
    # the path the vcjobs took so far (the timeline's) is starred, so the DAG and the header never show none.
    critical_path = snap.critical_path or chart.critical
    critical = set(critical_path)
    templates = {f.name: template_name(f) if f.approval is None and f.job_flow is None else None
                 for f in flow.spec.flows or ()}
    positions, size = place(graph)
    estimates = {e.flow: e.seconds for e in (flow.status.estimates if flow.status else None) or ()}
    nodes = [_node(row, now=now, critical=row.name in critical, template=templates.get(row.name, row.name),
                   note=drawing.label(graph, {}, row.name), estimate=estimates.get(row.name),
                   position=positions[row.name], gate=_gate(flow, row.name), child=kin.get(row.job))
             for row in snap.rows]
    nodes += [{"name": name, "state": word, "tone": "failed", "glyph": "✗", "label": f"✗ {word}",
               "detail": detail, "x": positions[name][0], "y": positions[name][1], "level": 0, "items": None,
               "after": graph.targets(name) if name in graph.blocked else []}
              for names, word, detail in ((graph.undefined, drawing.UNDEFINED, "no flow has this name"),
                                          (graph.blocked, drawing.NOT_DAG, "on or after a cycle: cannot run"))
              for name in sorted(names)]
    edges = [{"from": source, "to": dependent, "label": drawing.edge_label(graph, source, dependent)}
             for source, dependent in graph.edges if source in positions and dependent in positions]
    meta = jobflow.get("metadata") or {}
    return {
        "namespace": snap.namespace, "name": snap.name, "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
        "header": _header(snap, flow, critical_path=critical_path, now=now),
        "width": size[0], "height": size[1], "nodes": nodes, "edges": edges,
        "timeline": {
            "start": when(chart.start), "end": when(chart.end),
            "seconds": max((chart.end - chart.start).total_seconds(), 1.0),
            "critical": chart.critical,
            "bars": [{"flow": bar.flow, "job": bar.job, "phase": bar.phase, "tone": STATES.get(bar.phase, ("", ""))[0],
                      "created": (bar.created - chart.start).total_seconds(),
                      "running": (bar.running - chart.start).total_seconds() if bar.running else None,
                      "end": (bar.end - chart.start).total_seconds(), "ended": bar.ended,
                      "critical": bar.flow in chart.critical} for bar in chart.bars],
        },
        "events": [_event(event, now=now) for event in sorted(events, key=_event_time, reverse=True)],
        "schedule": (meta.get("labels") or {}).get(RUN_OF),
        "parent": _parent(jobflow),
    }


def _parent(jobflow: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where a child JobFlow comes from, for its page's breadcrumb: its parent JobFlow and the flow that made it."""
    found = parent_of(jobflow)
    if found is None:
        return None
    meta = jobflow.get("metadata") or {}
    return {"namespace": meta.get("namespace", ""), "name": found[0], "flow": found[1],
            "template": (meta.get("labels") or {}).get(CHILD_TEMPLATE)}


def _header(snap: JobFlowFacts, flow: JobFlow, *, critical_path: list[str], now: datetime) -> dict[str, Any]:
    return {
        "phase": snap.phase or "", "progress": snap.progress, "reason": snap.reason, "message": snap.message,
        "age": age(snap.created, now=now) if snap.created else "-", "created": when(snap.created),
        "expected": expected(snap.expected_completion, now=now) if snap.expected_completion and not snap.ended
        else None,
        "criticalPath": critical_path,
        "queue": queue_line(snap.queue) if snap.queue is not None and not snap.ended else None,
        "cost": cost_text(snap.cost) if snap.cost is not None else None,
        "suspended": bool(flow.spec.suspend), "ended": snap.ended,
        "shutdown": flow.spec.shutdown.value if flow.spec.shutdown else None, "stoppable": stoppable(flow),
        "failureRate": flow.status.failure_rate if flow.status else None,
    }


def _gate(flow: JobFlow, name: str) -> dict[str, Any] | None:
    """An approval gate's part of its node: what it asks, its answer, and whether it takes one now (``open``; else
    ``why`` not)."""
    gate = gate_of(flow, name)
    if gate is None:
        return None
    answer = gate.answer or gate.written
    return {"question": gate.approval.message, "open": gate.refusal is None, "why": gate.refusal,
            "answer": answer_words(answer) if answer is not None else None}


def _node(row: FlowRow, *, now: datetime, critical: bool, template: str | None, note: str | None,
          estimate: int | None, position: tuple[float, float], gate: dict[str, Any] | None,
          child: dict[str, Any] | None) -> dict[str, Any]:
    """One flow's node. A child JobFlow's (``childTemplate`` set) has no vcjob: its ``job`` is the child JobFlow's
    name, and ``child`` the child's list line (phase, progress) once it exists."""
    tone, glyph = STATES.get(row.phase, ("waiting", "○"))
    total = sum(row.items.values()) if row.items else 0
    return {
        # A gate has a record but never a vcjob: no "vcjob ... (deleted)" line for it.
        "name": row.name, "level": row.level, "after": row.after, "job": row.job if gate is None else None,
        "jobExists": row.live,
        "state": row.phase, "tone": tone, "glyph": glyph, "label": f"{glyph} {row.phase}",
        "detail": _detail(row, note=note, now=now, child=child),
        "waitingFor": row.waiting_for, "message": row.message,
        "expectedStart": expected(row.expected_start, now=now) if row.expected_start else None,
        "estimateSeconds": estimate, "attempts": row.attempts, "restarts": row.restarts,
        "ran": row.ran, "result": row.result, "tasks": tasks_text(row) or None,
        "started": when(row.created), "age": age(row.created, now=now) if row.created else None,
        "since": when(row.created) if _running(row) and child is None else None,
        "template": template, "critical": critical, "note": note, "gate": gate,
        "items": ({"total": total, "counts": row.items, "iterations": row.iterations} if row.items else None),
        "childTemplate": row.child_template,
        "child": {key: child[key] for key in ("name", "phase", "progress", "done")} if child else None,
        "x": position[0], "y": position[1],
    }


def _running(row: FlowRow) -> bool:
    """It has a vcjob that has not ended: the page counts its age up by itself (``since``)."""
    return bool(row.created) and not row.ran and not row.items and row.phase not in ("Waiting", "Skipped")


def _detail(row: FlowRow, *, note: str | None, now: datetime, child: dict[str, Any] | None = None) -> str:
    """The node's third line: what it waits for, how it runs, or how it ended; short (the panel has the rest). A
    child JobFlow's: its own phase (Suspended, say, where its flow's run is Running)."""
    if child is not None and not row.items:
        return f"JobFlow {child['phase'] or '(no status yet)'}"
    if row.items:
        total = sum(row.items.values())
        done = row.items.get("Completed", 0)
        return f"{done}/{total} {'iterations' if row.iterations else 'items'} done"
    if row.phase == "Waiting":
        start = f" · starts {expected(row.expected_start, now=now)}" if row.expected_start else ""
        if row.waiting_for:
            return "waits for " + ", ".join(row.waiting_for) + start
        return (note or "waits") + start
    if row.phase == "Skipped":
        return "will not run"
    if row.ran:
        return f"ran {row.ran}" + (f", attempt {row.attempts}" if row.attempts > 1 else "") + \
            (f" · {row.result}" if row.result else "")
    if row.created:
        return f"since {age(row.created, now=now)}" + (f", attempt {row.attempts}" if row.attempts > 1 else "")
    return ""


def items_view(jobflow: dict[str, Any], jobs: list[dict[str, Any]], flow: str, *, now: datetime,
               children: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """A fan-out's (or loop's) items, one by one: asked for when the user opens the node. The items of a flow of
    child JobFlows are JobFlows (``jobFlows``: each ``job`` is one, with its own page)."""
    snap = take(jobflow, jobs, now=now, children=children)
    row = next((row for row in snap.rows if row.name == flow), None)
    if row is None:
        raise KeyError(flow)
    return {"flow": flow, "iterations": row.iterations, "jobFlows": row.child_template is not None,
            "items": [{"index": index, "job": job, "state": phase, "tone": STATES.get(phase, ("waiting", ""))[0],
                       "label": f"{STATES.get(phase, ('', '○'))[1]} {phase}"} for index, job, phase in row.each]}


def template_view(template: dict[str, Any], runs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The JobTemplate page: its statistics (kept in its status by the engine) and the JobFlows that use it."""
    model = JobTemplate.model_validate(template)
    status = model.status
    recent = [run.to_wire() for run in reversed((status.recent_runs if status else None) or ())]
    return {
        "namespace": model.namespace, "name": model.name,
        "runs": status.runs if status else None, "succeeded": status.succeeded if status else None,
        "failed": status.failed if status else None, "failureRate": status.failure_rate if status else None,
        "p50": status.duration_p50_seconds if status else None, "p90": status.duration_p90_seconds if status else None,
        "lastFailure": status.last_failure.to_wire() if status and status.last_failure else None,
        "cost": cost_text(status.cost) if status and status.cost else None,
        "recentRuns": recent,
        "usedBy": sorted({(r["metadata"]["namespace"], r["metadata"]["name"]) for r in runs}),
    }


def schedule_view(template: dict[str, Any], runs: Iterable[Mapping[str, Any]], *, now: datetime) -> dict[str, Any]:
    """The JobFlowTemplate page: its schedule and triggers, the parameters a run sets (with their defaults, for Run
    now's form), and its runs (the JobFlows it started), newest first."""
    spec = template.get("spec") or {}
    meta = template.get("metadata") or {}
    return {"namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
            "schedule": spec.get("schedule"), "timeZone": spec.get("timeZone"),
            "suspended": bool(spec.get("suspend")), "concurrencyPolicy": spec.get("concurrencyPolicy"),
            "triggers": len(spec.get("triggers") or ()),
            "parameters": [{"name": p.get("name"), "value": p.get("value"), "description": p.get("description")}
                           for p in ((spec.get("jobFlow") or {}).get("spec") or {}).get("parameters") or ()
                           if isinstance(p, dict) and p.get("name")],
            "runs": sorted((jobflow_row(run, now=now) for run in runs), key=lambda row: row["created"] or "",
                           reverse=True)}


def _event(event: Mapping[str, Any], *, now: datetime) -> dict[str, Any]:
    stamp = _event_time(event)
    return {"type": event.get("type"), "reason": event.get("reason"), "message": event.get("message"),
            "count": event.get("count") or 1, "time": stamp, "age": age(stamp, now=now) if stamp else "-"}


def _event_time(event: Mapping[str, Any]) -> str:
    return event.get("lastTimestamp") or event.get("eventTime") or \
        (event.get("metadata") or {}).get("creationTimestamp") or ""
