"""Deadlines that steer: whether a JobFlow will succeed by ``spec.deadline``, and what the engine does about it.

**The state** (``status.deadline.state``) is the first row of :data:`DEADLINE_RULES` that holds, read from the
state written before, the JobFlow's end, ``now`` and its expected completion:

* a JobFlow that has not started and waits in its queue's line is expected to start when the line played forward
  says (:mod:`jobflow_core.queueing.outlook`, from its place *were it not at risk*, so that steering it ahead never
  argues it back on time), then to run its critical path (:mod:`jobflow_core.insight.eta`);
* any other is expected to end as its own forecast with the clock says: nothing starts before now, a flow that
  overran its estimate ends any moment.

**Hysteresis.** An ``AtRisk`` JobFlow goes back to ``OnTime`` only once it is expected to end at least
:func:`margin` before its deadline (a tenth of the time from creation to deadline, between 5 s and 10 min, and at
least a turn, its longest flow's estimate, for each stage of its critical path not begun yet). Between
two changes of the JobFlow or of the line ahead of it (a vcjob created or ended, a JobFlow ahead started or gone)
its expected completion only moves later as time passes, so the state moves at most one way (``OnTime`` ->
``AtRisk`` -> ``Missed``); back to ``OnTime`` only at a change that brings the completion forward by the margin.
``Missed`` and ``Met`` are final: a phase never goes back.

**A missed deadline fails nothing** (``activeDeadlineSeconds`` does that): it is a state, a Warning event and a
CloudEvent. Each change of state is said once, against the state the API server has (:func:`deadline_events`).

**Noticed without an event**: while the deadline has not passed and the JobFlow has not ended, its status asks to
be looked at again (``status.recheckSeconds``, a tenth of the deadline's window, 1 to 30 s): our event source
re-announces it that often, and behind Knative's ApiServerSource the PingSource's resync (every minute) does.

**Steering** (:func:`steer`): an at-risk JobFlow that has not started stands in line by its deadline
(:func:`jobflow_core.queueing.line.line_key`: earliest deadline first, never more than
:data:`~jobflow_core.queueing.line.OVERTAKE_SECONDS` ahead of its creation), and the vcjobs an at-risk JobFlow
creates once started get PriorityClass ``volcano-jobflow-at-risk`` (above ``volcano-jobflow-started``,
``preemptionPolicy: Never``). A vcjob's priority is fixed once it exists: only the stages created while at risk gain.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from jobflow_core.dag.awaits import outcome_of
from jobflow_core.flows.deadlines import recheck_seconds
from jobflow_core.insight.eta import began, estimates_of, forecast
from jobflow_core.models import DeadlineStatus, Estimate, JobFlow, JobFlowPhase, JobTemplate, format_time
from jobflow_core.queueing.line import InLine, QueueView, Stage, stages
from jobflow_core.queueing.outlook import expected_start
from jobflow_core.vocabulary import resources
from jobflow_core.vocabulary.kube_events import Event, EventType, Reason
from jobflow_core.vocabulary.resources import Resources

if TYPE_CHECKING:  # the planner's value, taken as an argument: planning is the room above this one
    from jobflow_core.planning.observation import Observation


class DeadlineState(StrEnum):
    ON_TIME = "OnTime"
    AT_RISK = "AtRisk"
    MISSED = "Missed"
    MET = "Met"
    UNKNOWN = "Unknown"
    """No forecast: a JobTemplate that never ran, a ``repeat`` loop, another JobFlow's end pending."""


MIN_MARGIN: Final = timedelta(seconds=5)
MAX_MARGIN: Final = timedelta(minutes=10)


def margin(created: datetime | None, deadline: datetime, *, longest: int = 0, turns: int = 1) -> timedelta:
    """How far before its deadline an at-risk JobFlow must be expected to end to be on time again: a tenth of its
    window (5 s to 10 min), and at least a turn for each stage of its critical path not begun yet (``turns`` times its
    longest flow's estimate, ``longest`` seconds). Its forecast starts each stage the moment the one before ends;
    back on time, its stages lose the at-risk PriorityClass and the room steering kept, and each may wait a turn
    behind other JobFlows' vcjobs: on time means on time even then."""
    window = deadline - created if created is not None else MAX_MARGIN * 10
    return max(min(MAX_MARGIN, max(MIN_MARGIN, window / 10)), timedelta(seconds=longest * turns))


@dataclass(frozen=True)
class Reading:
    """What the rules read."""

    deadline: datetime
    now: datetime
    previous: DeadlineState | None
    expected: datetime | None
    """Expected completion (None: not known)."""
    ended: datetime | None = None
    """When it ended (None: not ended)."""
    succeeded: bool = False
    margin: timedelta = MIN_MARGIN


@dataclass(frozen=True)
class DeadlineRule:
    when: str
    holds: Callable[[Reading], bool]
    state: DeadlineState | None
    """None: the state stays what it was (``Unknown`` when there was none)."""


DEADLINE_RULES: Final = (
    DeadlineRule("its deadline was missed before: a missed deadline stays missed",
                 lambda r: r.previous is DeadlineState.MISSED, DeadlineState.MISSED),
    DeadlineRule("it succeeded by its deadline", lambda r: r.ended is not None and r.succeeded
                 and r.ended <= r.deadline, DeadlineState.MET),
    DeadlineRule("it ended after its deadline", lambda r: r.ended is not None and r.ended > r.deadline,
                 DeadlineState.MISSED),
    DeadlineRule("it failed before its deadline: nothing is left to steer", lambda r: r.ended is not None, None),
    DeadlineRule("its deadline passed before it ended", lambda r: r.now >= r.deadline, DeadlineState.MISSED),
    DeadlineRule("no forecast: it stays as it was", lambda r: r.expected is None, None),
    DeadlineRule("at risk, and not yet expected to end a margin before its deadline",
                 lambda r: r.previous is DeadlineState.AT_RISK and r.expected is not None
                 and r.expected > r.deadline - r.margin, DeadlineState.AT_RISK),
    DeadlineRule("expected to end after its deadline", lambda r: r.expected is not None and r.expected > r.deadline,
                 DeadlineState.AT_RISK),
    DeadlineRule("expected to end by its deadline", lambda r: True, DeadlineState.ON_TIME),
)


def judge(reading: Reading) -> tuple[DeadlineRule, DeadlineState]:
    """The first rule of :data:`DEADLINE_RULES` that holds, and the state it gives."""
    rule = next(rule for rule in DEADLINE_RULES if rule.holds(reading))
    return rule, rule.state or reading.previous or DeadlineState.UNKNOWN


@dataclass(frozen=True)
class Assessment:
    """One plan's look at a JobFlow's deadline."""

    deadline: datetime
    state: DeadlineState
    rule: DeadlineRule
    expected: datetime | None
    line_start: datetime | None = None
    """When the line played forward starts it (a JobFlow waiting in line), else None."""

    @property
    def at_risk(self) -> bool:
        return self.state is DeadlineState.AT_RISK


def look(observation: "Observation", *, estimates: list[Estimate], queues: Mapping[str, QueueView],
         templates: Mapping[str, JobTemplate], ended: datetime | None = None,
         succeeded: bool = False) -> Assessment | None:
    """:func:`assess` for the planner's observation: its first stage (only read for a JobFlow not started that has a
    deadline and a queue), what it recorded it needs while waiting."""
    jobflow = observation.jobflow
    if jobflow.spec.deadline is None:
        return None
    started = observation.started
    stage = None
    if not started and ended is None and queues:
        stage = next(iter(stages(jobflow, templates)), None)
    written = observation.previous.queue
    return assess(jobflow, nodes={node.name: node for node in observation.nodes}, outcomes=observation.outcomes.of,
                  estimates=estimates_of(estimates), now=observation.now, started=started, queues=queues,
                  stage=stage, waiting_needs=needs_of(written.requests) if written and not started else None,
                  ended=ended, succeeded=succeeded,
                  awaiting=any(outcome_of(entry) is None for entry in observation.awaits.values()))


def assess(jobflow: JobFlow, *, nodes, outcomes: Mapping, estimates: Mapping[str, int | None], now: datetime | None,
           started: bool, queues: Mapping[str, QueueView], stage: Stage | None, waiting_needs: Resources | None,
           ended: datetime | None = None, succeeded: bool = False, awaiting: bool = False) -> Assessment | None:
    """The deadline's state for one plan (None: no ``spec.deadline``, or no clock). ``stage``: its first stage, and
    ``waiting_needs`` what it recorded it needs while waiting (either says what it needs in line); ``awaiting``:
    another JobFlow's end is pending (:mod:`jobflow_core.dag.awaits`), which nobody forecasts."""
    deadline = jobflow.spec.deadline
    if deadline is None or now is None:
        return None
    written = (jobflow.status.deadline if jobflow.status else None)
    previous = DeadlineState(written.state) if written and written.state in DeadlineState.__members__.values() \
        else None
    line_start = None
    clock = forecast(jobflow, nodes, outcomes, estimates, now=now)
    if awaiting:
        expected = None
    elif not started and ended is None and stage is not None and stage.queue in queues:
        own = clock.completion
        seconds = int((own - now).total_seconds()) if own is not None else None
        needs = waiting_needs if waiting_needs is not None else stage.needs
        me = InLine(namespace=jobflow.namespace, name=jobflow.name, created=jobflow.metadata.creation_timestamp,
                    queue=stage.queue, started=False, ended=False, requests=needs)
        line_start = expected_start(queues[stage.queue], me, needs=needs, seconds=seconds, now=now)
        expected = None if line_start is None or seconds is None else line_start + timedelta(seconds=seconds)
    else:
        expected = clock.completion
    if ended is not None:  # as the status writes it: whole seconds, so the next plan judges the same end
        ended = ended.replace(microsecond=0)
    reading = Reading(deadline=deadline, now=now, previous=previous, expected=expected, ended=ended,
                      succeeded=succeeded, margin=margin(
                          jobflow.metadata.creation_timestamp, deadline,
                          longest=max((v for v in estimates.values() if v), default=0),
                          turns=sum(1 for name in clock.critical_path if name in nodes and not began(nodes[name]))))
    rule, state = judge(reading)
    return Assessment(deadline=deadline, state=state, rule=rule, expected=expected, line_start=line_start)


def steer(queues: Mapping[str, QueueView], assessment: Assessment | None) -> Mapping[str, QueueView]:
    """The queues as an at-risk JobFlow's plan reads them: it stands in line by its deadline, and its vcjobs get the
    at-risk PriorityClass (the started one's when that is not installed)."""
    if assessment is None or not assessment.at_risk:
        return queues
    return {name: replace(view, at_risk=assessment.deadline,
                          priority_class=view.at_risk_priority_class or view.priority_class)
            for name, view in queues.items()}


def deadline_status(assessment: Assessment | None, written: DeadlineStatus | None, *,
                    now: datetime | None) -> DeadlineStatus | None:
    """``status.deadline``: the state, and since when and why, kept as written while the state stays (a status
    changes only when something happens)."""
    if assessment is None:
        return written
    if written is not None and written.state == assessment.state.value and written.at == assessment.deadline:
        return written
    return DeadlineStatus(at=assessment.deadline, state=assessment.state.value, since=now,
                          expected_completion=assessment.expected, message=_message(assessment))


def _message(assessment: Assessment) -> str:
    at, expected = assessment.deadline, assessment.expected
    where = " from its place in its queue's line" if assessment.line_start is not None else ""
    if assessment.state is DeadlineState.AT_RISK and expected is not None:
        return (f"expected to succeed at {format_time(expected)}{where}, {_span(expected - at)} after its deadline "
                f"{format_time(at)}: it goes ahead in its queue's line and its next vcjobs get PriorityClass "
                "volcano-jobflow-at-risk")
    if assessment.state is DeadlineState.ON_TIME and expected is not None:
        return (f"expected to succeed at {format_time(expected)}{where}, {_span(at - expected)} before its deadline "
                f"{format_time(at)}")
    if assessment.state is DeadlineState.MISSED:
        return f"its deadline {format_time(at)} passed before it succeeded ({assessment.rule.when})"
    if assessment.state is DeadlineState.MET:
        return f"succeeded by its deadline {format_time(at)}"
    return f"{assessment.rule.when} (deadline {format_time(at)})"


EVENTS: Final = {
    DeadlineState.AT_RISK: (EventType.WARNING, Reason.DEADLINE_AT_RISK),
    DeadlineState.MISSED: (EventType.WARNING, Reason.DEADLINE_MISSED),
    DeadlineState.MET: (EventType.NORMAL, Reason.DEADLINE_MET),
}
"""The event each state change raises; back to ``OnTime`` raises :data:`Reason.DEADLINE_ON_TIME` (Normal) only from
``AtRisk``."""


def deadline_events(written: DeadlineStatus | None, status: DeadlineStatus | None) -> list[Event]:
    """One event per change of state against the status the API server has (so a replayed event says nothing)."""
    if status is None or (written is not None and written.state == status.state):
        return []
    state = DeadlineState(status.state)
    if state is DeadlineState.ON_TIME and written is not None and written.state == DeadlineState.AT_RISK:
        return [Event(EventType.NORMAL, Reason.DEADLINE_ON_TIME, status.message or "")]
    if state not in EVENTS:
        return []
    kind, reason = EVENTS[state]
    return [Event(kind, reason, status.message or "")]


def pending(jobflow: JobFlow, *, now: datetime | None, phase: JobFlowPhase | None) -> int | None:
    """How often to look again while the deadline has not passed and the JobFlow has not ended (None: no need)."""
    deadline, created = jobflow.spec.deadline, jobflow.metadata.creation_timestamp
    if deadline is None or now is None or now >= deadline or phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
        return None
    window = (deadline - created).total_seconds() if created is not None else 300
    return recheck_seconds(max(1, int(window)))


def _span(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def needs_of(queue_requests: Mapping[str, str] | None) -> Resources | None:
    """What a JobFlow recorded it needs while waiting (``status.queue.requests``)."""
    return resources.of_wire(queue_requests) if queue_requests is not None else None
