"""Where a JobFlow spent its time, vcjob by vcjob, on one time axis: ``kubectl jobflow timeline``'s chart, and
the dashboard's.

Every vcjob the JobFlow made (each attempt, item and iteration) is one row, in the order they were created: its
*pending* span (created, not running yet: waiting for Volcano's scheduler and its pods) and its *running* span
(from its first ``Running`` to its end, or to now). Times come from the vcjobs themselves while they exist
(``status.conditions``), else from the JobFlow's records of them (``jobStatusList[].runningHistories``); an item
only named in ``completedJobs`` has no times left and is not drawn.

The **critical path** is marked (``*`` in text, a red outline in SVG): from the flow that ended last, back through
the target whose end each flow's start waited for. Text needs no terminal features; the SVG is drawn here, no
Graphviz or browser needed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Any

from display.times import human_duration
from jobflow_core.dag.graph import flow_graph
from jobflow_core.models import JobFlow, VcJob, VcJobPhase
from jobflow_core.vocabulary.naming import is_owned_by, template_of
from jobflow_core.vocabulary.phase import is_final

WIDTH = 60
"""Characters of the text chart's time axis."""
RUNNING = (VcJobPhase.RUNNING, VcJobPhase.COMPLETING, VcJobPhase.TERMINATING, VcJobPhase.ABORTING)


@dataclass(frozen=True)
class Bar:
    flow: str
    job: str
    created: datetime
    running: datetime | None
    """First seen Running (None: it never ran)."""
    end: datetime
    """When it ended, or now for a vcjob that has not."""
    phase: str
    ended: bool


@dataclass(frozen=True)
class Timeline:
    title: str
    start: datetime
    end: datetime
    bars: list[Bar]
    critical: list[str]
    """The flows on the critical path, first to last."""


def build(jobflow: dict[str, Any], jobs: list[dict[str, Any]], *, now: datetime) -> Timeline:
    """The timeline of a JobFlow as read from the cluster (pure: ``now`` closes the spans still open)."""
    flow = JobFlow.model_validate(jobflow)
    live = {job.name: job for job in map(VcJob.model_validate, jobs) if is_owned_by(job, flow)}
    bars = [_live_bar(job, now=now) for job in live.values()]
    for record in (flow.status.job_status_list if flow.status else None) or ():
        if record.name and record.name not in live and record.start_timestamp and record.end_timestamp:
            running = next((h.start_timestamp for h in record.running_histories or () if h.state in RUNNING), None)
            bars.append(Bar(_flow_of(record.name, flow), record.name, record.start_timestamp, running,
                            record.end_timestamp, "Cached" if record.cached_from else
                            (record.state or VcJobPhase.NEW).value, True))
    bars = sorted((bar for bar in bars if bar is not None), key=lambda bar: (bar.created, bar.job))
    start = min((bar.created for bar in bars), default=flow.metadata.creation_timestamp or now)
    end = max((bar.end for bar in bars), default=start)
    return Timeline(f"{flow.namespace}/{flow.name}", start, max(end, start), bars, _critical(flow, bars))


def _live_bar(job: VcJob, *, now: datetime) -> Bar | None:
    created = job.metadata.creation_timestamp
    if created is None:
        return None
    conditions = (job.status.conditions if job.status else None) or []
    running = next((c.last_transition_time for c in conditions if c.status in RUNNING), None)
    state = job.status.state if job.status else None
    ended = is_final(job.phase)
    end = state.last_transition_time if ended and state and state.last_transition_time else now
    return Bar(template_of(job) or job.name, job.name, created, running, end, (job.phase or VcJobPhase.NEW).value,
               ended)


def _flow_of(job: str, flow: JobFlow) -> str:
    """The flow a recorded vcjob belongs to: the longest flow name it starts with (``<jobflow>-<flow>...``)."""
    names = sorted((f.name for f in flow.spec.flows or ()), key=len, reverse=True)
    return next((name for name in names if job.startswith(f"{flow.name}-{name}")), job)


def _critical(flow: JobFlow, bars: list[Bar]) -> list[str]:
    graph = flow_graph(flow)
    starts: dict[str, datetime] = {}
    ends: dict[str, datetime] = {}
    for bar in bars:
        starts[bar.flow] = min(starts.get(bar.flow, bar.created), bar.created)
        ends[bar.flow] = max(ends.get(bar.flow, bar.end), bar.end)
    if not ends:
        return []
    current: str | None = max(ends, key=lambda name: ends[name])
    path = []
    while current is not None and current not in path:
        path.append(current)
        before = [t for t in graph.targets(current) if t in ends and ends[t] <= starts[current]]
        current = max(before, key=lambda t: ends[t]) if before else None
    return list(reversed(path))


def text(timeline: Timeline) -> str:
    total = max((timeline.end - timeline.start).total_seconds(), 1e-9)

    def column(when: datetime) -> int:
        return min(WIDTH - 1, int((when - timeline.start).total_seconds() / total * WIDTH))

    lines = [f"JobFlow {timeline.title}   {human_duration(total)} from the first vcjob to the last end   "
             f"(. pending, # running, * critical path)"]
    name_width = max([len(bar.job) for bar in timeline.bars] + [5])
    for bar in timeline.bars:
        cells = [" "] * WIDTH
        begin, running, end = column(bar.created), column(bar.running or bar.end), column(bar.end)
        for i in range(begin, max(running, begin + 1)):
            cells[i] = "."
        for i in range(running, max(end, running + 1)) if bar.running else ():
            cells[i] = "#"
        mark = "*" if bar.flow in timeline.critical else " "
        pending = ((bar.running or bar.end) - bar.created).total_seconds()
        ran = (bar.end - bar.running).total_seconds() if bar.running else 0
        lines.append(f"{mark} {bar.job.ljust(name_width)} |{''.join(cells)}| {bar.phase}{'' if bar.ended else '...'}"
                     f"  pending {human_duration(pending)}, running {human_duration(ran)}")
    if timeline.critical:
        lines.append(f"critical path: {' -> '.join(timeline.critical)}")
    return "\n".join(lines) + "\n"


PHASE_FILL = {"Completed": "#66bb6a", "Cached": "#aed581", "Failed": "#ef5350", "Terminated": "#ef5350", "Aborted": "#ef5350"}
PENDING_FILL = "#fff176"
RUNNING_FILL = "#42a5f5"
ROW, LEFT, CHART, TOP = 22, 220, 640, 40


def svg(timeline: Timeline) -> str:
    total = max((timeline.end - timeline.start).total_seconds(), 1e-9)

    def x(when: datetime) -> float:
        return LEFT + (when - timeline.start).total_seconds() / total * CHART

    height = TOP + ROW * len(timeline.bars) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + CHART + 20}" height="{height}" '
             'font-family="Helvetica, Arial, sans-serif" font-size="12">',
             f"<title>JobFlow {escape(timeline.title)}: timeline</title>",
             '<rect width="100%" height="100%" fill="#ffffff"/>',
             f'<text x="10" y="20" font-weight="bold">JobFlow {escape(timeline.title)}</text>']
    legend = [("pending", PENDING_FILL, "none"), ("running", RUNNING_FILL, "none"),
              ("completed", PHASE_FILL["Completed"], "none"), ("failed", PHASE_FILL["Failed"], "none"),
              ("critical path", "none", "#c62828")]
    for index, (label, fill, stroke) in enumerate(legend):
        lx = LEFT + index * 110
        parts.append(f'<rect x="{lx}" y="10" width="14" height="12" fill="{fill}" stroke="{stroke}" '
                     f'stroke-width="2"/><text x="{lx + 20}" y="20" fill="#333333">{label}</text>')
    for tick in range(6):
        tx = LEFT + CHART * tick / 5
        parts.append(f'<line x1="{tx:.1f}" y1="{TOP - 8}" x2="{tx:.1f}" y2="{height - 30}" stroke="#e0e0e0"/>')
        parts.append(f'<text x="{tx:.1f}" y="{height - 14}" text-anchor="middle" fill="#555555">'
                     f"{escape(human_duration(total * tick / 5))}</text>")
    for row, bar in enumerate(timeline.bars):
        y = TOP + row * ROW
        critical = bar.flow in timeline.critical
        parts.append(f'<g class="bar" data-job="{escape(bar.job)}" data-flow="{escape(bar.flow)}" '
                     f'data-critical="{str(critical).lower()}">')
        weight = ' font-weight="bold"' if critical else ""
        parts.append(f'<text x="10" y="{y + 14}"{weight}>{escape(bar.job)}</text>')
        pending_end = bar.running or bar.end
        parts.append(f'<rect class="pending" x="{x(bar.created):.1f}" y="{y + 3}" '
                     f'width="{max(1.0, x(pending_end) - x(bar.created)):.1f}" height="14" fill="{PENDING_FILL}"/>')
        if bar.running:
            fill = PHASE_FILL.get(bar.phase, RUNNING_FILL)
            parts.append(f'<rect class="running" x="{x(bar.running):.1f}" y="{y + 3}" '
                         f'width="{max(1.0, x(bar.end) - x(bar.running)):.1f}" height="14" fill="{fill}"/>')
        if critical:
            parts.append(f'<rect class="critical" x="{x(bar.created) - 1:.1f}" y="{y + 2}" '
                         f'width="{max(2.0, x(bar.end) - x(bar.created) + 2):.1f}" height="16" fill="none" '
                         'stroke="#c62828" stroke-width="2"/>')
        parts.append("</g>")
    return "\n".join([*parts, "</svg>"]) + "\n"
