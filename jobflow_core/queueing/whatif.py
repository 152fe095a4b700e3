"""What if: a JobFlow of a file, created now, on today's queue (``kubectl jobflow plan -f FILE --queue``).

Each answer is the engine's own rule, asked of the JobFlow as if created at ``now``, on its first stage's queue:

* **place**: ``line.admit`` for its first stage (with ``wholeFlowAdmission``, room for its widest stage too); a gang
  or ``wholeFlowAdmission`` stage wider than the queue (``line.unschedulable``) blocks it: it never starts;
* **start**: ``outlook.expected_start``; **end**: that plus its critical path (``insight.eta``) from its
  JobTemplates' median runs; **cost**: each flow's gang requests times that median (``insight.cost``; not for a
  ``forEach`` flow, whose items may each ask differently);
* **deadline**: ``deadline.judge`` on that end, and where steering would put it when at risk; ``Missed`` when even
  starting now cannot make it. Unknown is an answer too, with its reason.

Pure: the shell reads the queue and its line, and observes the JobFlow with no vcjobs (the planner's observation).
"""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from jobflow_core.flows.vcjobs import build_job
from jobflow_core.insight import cost
from jobflow_core.insight.eta import Forecast, forecast
from jobflow_core.insight.template_stats import expected_seconds
from jobflow_core.models import Cost, JobTemplate, format_time
from jobflow_core.queueing.deadline import DeadlineState, Reading, judge
from jobflow_core.queueing.line import DEFAULT_QUEUE, InLine, QueueView, Stage, admit, ordinal, stages, unschedulable
from jobflow_core.queueing.outlook import ahead_of, expected_start
from jobflow_core.vocabulary import resources
from jobflow_core.vocabulary.durations import go_duration
from jobflow_core.vocabulary.naming import template_name
from jobflow_core.vocabulary.resources import Resources

if TYPE_CHECKING:  # the planner's value, taken as an argument: planning is the room above this one
    from jobflow_core.planning.observation import Observation


@dataclass(frozen=True)
class DeadlineVerdict:
    at: datetime
    state: DeadlineState
    why: str
    overtakes: int = 0
    """At risk: how many JobFlows waiting ahead of it steering would put it before."""
    steered_position: int | None = None
    steered_end: datetime | None = None


@dataclass(frozen=True)
class WhatIf:
    view: QueueView
    now: datetime
    needs: Resources
    """What its first stages need on the queue (and room for its widest stage, with ``wholeFlowAdmission``)."""
    position: int | None
    """1: first in line; 0: it would start now; None: it would never start (``never_runs`` says why)."""
    never_runs: tuple[str, ...]
    widest: Stage | None
    whole: bool  # wholeFlowAdmission: its widest stage must fit at once
    start: datetime | None
    end: datetime | None
    critical_path: tuple[str, ...]
    unknown: str | None
    """Why its run, so its end (and cost), is not known."""
    cost: Cost | None
    cost_unknown: str | None
    deadline: DeadlineVerdict | None

    def lines(self) -> list[str]:
        """What a person reads, one fact a line."""
        view, now, widest = self.view, self.now, self.widest
        of = f"its capacity is not known: {view.capacity_source}; nothing is held back" if view.capacity is None \
            else f"{resources.describe(self.needs)} of {resources.describe(view.capacity)}, its {view.capacity_source}"
        place = {None: "would never start: Unschedulable", 0: "would start now"}.get(
            self.position, f"{ordinal(self.position or 0)} in line")
        lines = [f"Queue {view.name}: {place} ({of})", *(f"  {why}" for why in self.never_runs)]
        if widest is not None:
            over = resources.exceeding(widest.needs, view.capacity or {})
            fits = "not checked (the queue's capacity is not known)" if view.capacity is None else "fits" \
                if not over else "can never be held at once (wholeFlowAdmission waits for that)" if self.whole \
                else f"more {' and '.join(over)} than the queue holds at once: its vcjobs run as room frees"
            lines.append(f"Widest stage: {resources.describe(widest.needs)} ({', '.join(widest.flows)}): {fits}")
        never, ahead = self.position is None, f"the JobFlows ahead have no expected end, nor has it: {self.unknown}"
        lines.append(f"Expected start: {'never' if never else _when(self.start, now, ahead)}")
        lines.append(f"Expected end: {'never' if never else _when(self.end, now, self.unknown)}"
                     + (f", critical path {' -> '.join(self.critical_path)}" if self.end else ""))
        lines.append(f"Expected cost: {_cost(self.cost) if self.cost else ('nothing' if never else 'unknown')}"
                     + ("" if self.cost else f": {self.cost_unknown}"))
        return lines + ([f"Deadline {format_time(self.deadline.at)}: {self.deadline.why}"] if self.deadline else [])


def queue_name(observation: "Observation", templates: Mapping[str, JobTemplate]) -> str:
    """The Volcano queue :func:`what_if` speaks of, the view to read: the one its first stage joins."""
    return next((stage.queue for stage in stages(observation.jobflow, templates)), DEFAULT_QUEUE)


def what_if(observation: "Observation", *, templates: Mapping[str, JobTemplate], view: QueueView | None,
            now: datetime) -> WhatIf:
    """What the queue ``view`` (None: not known) would make of the observed JobFlow were it created ``now``."""
    jobflow = observation.jobflow
    view = view or QueueView(name=queue_name(observation, templates), capacity=None, capacity_source="it was not read")
    mine = [stage for stage in stages(jobflow, templates) if stage.queue == view.name]
    whole = bool(jobflow.spec.whole_flow_admission)
    needs = resources.most(*(s.needs for s in (mine if whole else mine[:1])))
    never = tuple(unschedulable(jobflow, templates=templates, queues={view.name: view}))
    estimates = {node.name: None if node.flow.approval or node.flow.job_flow or template is None
                 else expected_seconds(template.status)
                 for node in observation.nodes for template in [templates.get(template_name(node.flow))]}
    created = jobflow.model_copy(update={"metadata": jobflow.metadata.model_copy(update={"creation_timestamp": now})})
    expected = forecast(created, {node.name: node for node in observation.nodes}, observation.outcomes.of, estimates)
    run = expected.completion - now if expected.completion is not None else None
    unknown = None if run is not None else _unknown(observation, expected, templates)
    me = InLine(namespace=jobflow.namespace, name=jobflow.name, created=now, queue=view.name, started=False,
                ended=False, requests=needs)
    position = None if never else admit(view, namespace=me.namespace, name=me.name, created=now, needs=needs).position
    seconds = int(run.total_seconds()) if run is not None else None
    start = None if never else expected_start(view, me, needs=needs, seconds=seconds, now=now)
    end = start + run if start is not None and run is not None else None
    spent, cost_unknown = (None, "it would never start") if never else (None, unknown) if run is None else \
        _spent(observation, expected, templates, estimates)
    verdict = None if jobflow.spec.deadline is None else _deadline(
        jobflow.spec.deadline, view=view, me=me, never=bool(never), end=end, run=run, now=now, unknown=unknown)
    widest = max(mine, default=None, key=lambda stage: max(  # its largest share of the queue (else its CPU)
        (stage.needs.get(name, 0) / room for name, room in (view.capacity or {}).items() if room),
        default=stage.needs.get(resources.CPU, 0)))
    return WhatIf(view=view, now=now, needs=needs, position=position, never_runs=never, widest=widest, whole=whole,
                  start=start, end=end, critical_path=expected.critical_path if end else (), unknown=unknown,
                  cost=spent, cost_unknown=cost_unknown, deadline=verdict)


def _deadline(at: datetime, *, view: QueueView, me: InLine, never: bool, end: datetime | None,
              run: timedelta | None, now: datetime, unknown: str | None) -> DeadlineVerdict:
    """The deadline's rules, and one more for a JobFlow not created yet: missed when even starting now is late."""
    _, state = judge(Reading(deadline=at, now=now, previous=None, expected=end))
    missed = "it would never start" if never else "it has passed" if state is DeadlineState.MISSED else \
        f"even starting now it would end {_span(now + run - at)} after it" if run and now + run > at else None
    if missed:
        return DeadlineVerdict(at, DeadlineState.MISSED, f"missed: {missed}")
    if end is None or run is None:
        return DeadlineVerdict(at, DeadlineState.UNKNOWN, f"unknown: {unknown}")
    if state is DeadlineState.ON_TIME:
        return DeadlineVerdict(at, state, f"on time: expected to end {_span(at - end)} before it")
    steered, risky = replace(view, at_risk=at), replace(me, at_risk=at)  # where steering puts it
    overtakes = len(ahead_of(view, risky)) - len(ahead_of(view, risky, steered=True))
    position = admit(steered, namespace=me.namespace, name=me.name, created=now, needs=me.requests or {}).position
    start = expected_start(steered, risky, needs=me.requests or {}, seconds=int(run.total_seconds()), now=now,
                           steered=True)
    ahead, place = start and start + run, f"{ordinal(position)} in line" if position else "its vcjobs created at once"
    return DeadlineVerdict(at, state, (
        f"at risk: expected to end {_span(end - at)} after it; it would go ahead of {overtakes} JobFlow"
        f"{'' if overtakes == 1 else 's'} ({place}), expected end then {format_time(ahead) if ahead else 'unknown'}"
        + (" (still late)" if ahead and ahead > at else "")), overtakes=overtakes, steered_position=position,
        steered_end=ahead)


def _unknown(observation: "Observation", expected: Forecast, templates: Mapping[str, JobTemplate]) -> str:
    """Why the run is not known: the first flow whose start is known but whose own run is not."""
    name = next((name for name in expected.starts if name not in expected.ends), None)
    if name is None:
        return "no flow of it is expected to run"
    node = observation.node(name)
    template = template_name(node.flow)
    return (f'flow "{name}" waits for a person\'s approval' if node.flow.approval is not None
            else f'flow "{name}" runs a child JobFlow, whose run is not estimated' if node.flow.job_flow
            else f'flow "{name}" repeats until its condition holds: how often is not known' if node.repeats
            else f'JobTemplate "{template}" not found' if template not in templates
            else f'no JobTemplate statistics yet for "{template}": it never ran'
            if expected_seconds(templates[template].status) is None
            else f'the items of forEach flow "{name}" are not known before it runs')


def _spent(observation: "Observation", expected: Forecast, templates: Mapping[str, JobTemplate],
           estimates: Mapping[str, int | None]) -> tuple[Cost | None, str | None]:
    """Each flow expected to run: its gang's requests for its JobTemplate's median run."""
    costs = []
    for name in expected.ends:
        node, template = observation.node(name), template_name(observation.node(name).flow)
        if node.fan_out:
            return None, f'forEach flow "{name}" is not costed: each item\'s vcjob may ask differently'
        try:
            gang = resources.gang_requests(build_job(observation.jobflow, flow=name,
                                                     template=templates[template])["spec"])
        except (ValueError, TypeError, KeyError):
            return None, f'JobTemplate "{template}" makes no valid vcjob (kubectl jobflow validate -f says why)'
        costs.append(cost.of(gang, seconds=estimates.get(name) or 0))
    return cost.total(costs) or Cost(cpu_seconds=0, memory_gib_seconds=0, gpu_seconds=0), None


def _when(at: datetime | None, now: datetime, why: str | None) -> str:
    return f"unknown: {why}" if at is None else "now" if at <= now else f"{format_time(at)} (in {_span(at - now)})"


def _span(delta: timedelta) -> str:
    return go_duration(timedelta(seconds=max(0, round(delta.total_seconds()))))


def _cost(spent: Cost) -> str:
    parts = [(spent.cpu_seconds, "CPU·s"), (spent.memory_gib_seconds, "GiB·s memory"), (spent.gpu_seconds, "GPU·s")]
    return ", ".join(f"{value:g} {unit}" for value, unit in parts if value) or "nothing (no resources requested)"
