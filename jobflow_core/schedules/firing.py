"""When a JobFlowTemplate's schedule starts a run: Kubernetes CronJob's rules, as one table.

The engine has no timer of its own. Its clock is the resync tick (the PingSource every minute, or our event
source's ``RESYNC_SECONDS``) and the template's own events; on each, the shell reads the template and its runs and
asks :func:`plan_schedule` what to do *now* (``now`` is handed in: nothing here reads a clock, so tests move time
at will).

What is due. The scheduled times not yet considered are those after the latest of ``status.lastScheduleTime``,
``status.lastMissedTime`` and the template's creation, up to ``now``. Only the most recent of them can start a
run (CronJob's rule: a handler that was down for an hour starts one run, not sixty); the others are *missed*,
counted in ``status.missedRuns`` and told by a ``MissSchedule`` Warning. The first rule that holds decides:

==========================================================  ============  ==========================================
when                                                        verdict       so
==========================================================  ============  ==========================================
``spec.schedule`` is unset                                  unscheduled   runs start only by event or by hand
the schedule or time zone cannot be used                    invalid       message says why (admission refuses it)
``spec.suspend`` is true                                    suspended     no run starts; active runs go on
no scheduled time has come since the last one considered    idle          only ``nextScheduleTime`` is refreshed
the due time's run exists already (a replayed tick)         started       recorded, nothing created
the due time is more than ``startingDeadlineSeconds`` old   missed        ``lastMissedTime`` moves on; counted
``Forbid``, and a run is active                             forbidden     held: may start later within the deadline
``Replace``, and runs are active                            replace       the active runs are deleted, then start
otherwise                                                   start         the run ``<template>-<minutes>`` starts
==========================================================  ============  ==========================================

A replayed, duplicated or reordered tick is harmless: the due time's run has a name of its own
(:func:`jobflow_core.schedules.runs.scheduled_run_name`), so it is created once whatever the ticks do, and a tick older
than the status finds nothing due. The history limits (``successfulJobsHistoryLimit``, default 3;
``failedJobsHistoryLimit``, default 1) delete the oldest finished runs of any cause beyond them.

A run the API server refuses (its JobFlow holds a field the CRD does not have, or a webhook says no) is no run: the
shell writes why in ``status.message`` (:func:`refused`), with a ``RunRejected`` Warning, and the message stands, on
every later look, until the spec changes (``metadata.generation``) or a run starts: a template whose runs cannot be
created says so for as long as that is true, not once.

Every look also tells, by a ``RunStarted`` Event, the runs created since the one ``status.lastRun`` names
(:func:`unseen`): runs by hand (``kubectl jobflow run`` records nothing itself), runs by an event (the handler
looks at the template right after starting one), and runs whose Event was lost with a lost status write. So the
template's Events show each run's start once, whatever started it.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Final

from jobflow_core.models import ConcurrencyPolicy, JobFlowPhase, JobFlowTemplate, JobFlowTemplateStatus, LastRun
from jobflow_core.schedules.cron import CronError, Schedule, parse
from jobflow_core.schedules.runs import Cause, Run, Start, scheduled_run_name
from jobflow_core.vocabulary.kube_events import Event, EventType, Reason

REFUSED: Final = "the API server refused run "
"""How :func:`refused` begins: the message of a refused run, which stands until the spec changes."""
DEFAULT_SUCCESSFUL_HISTORY = 3
DEFAULT_FAILED_HISTORY = 1
MISSED_COUNT_CAP = 100
"""Scheduled times counted per look (Kubernetes CronJob warns ``TooManyMissedTimes`` past 100 too)."""


class Verdict(StrEnum):
    UNSCHEDULED = "unscheduled"
    INVALID = "invalid"
    SUSPENDED = "suspended"
    IDLE = "idle"
    STARTED = "started"
    MISSED = "missed"
    FORBIDDEN = "forbidden"
    REPLACE = "replace"
    START = "start"


@dataclass(frozen=True)
class Facts:
    """What the rules may ask about a template at ``now``."""

    template: JobFlowTemplate
    now: datetime
    schedule: Schedule | None
    error: str | None
    due: datetime | None
    """The most recent scheduled time not considered yet, at or before ``now``."""
    passed: int
    """How many scheduled times not considered yet there are (the due one included), up to the cap."""
    runs: Sequence[Run]

    @property
    def active(self) -> list[Run]:
        return [run for run in self.runs if not run.finished and not run.deleting]

    @property
    def due_name(self) -> str:
        assert self.due is not None
        return scheduled_run_name(self.template.name, self.due)

    @property
    def too_late(self) -> bool:
        deadline = self.template.spec.starting_deadline_seconds
        return deadline is not None and self.due is not None and self.due + timedelta(seconds=deadline) < self.now

    @property
    def policy(self) -> ConcurrencyPolicy:
        return self.template.spec.concurrency_policy or ConcurrencyPolicy.ALLOW


@dataclass(frozen=True)
class Rule:
    verdict: Verdict
    holds: Callable[[Facts], bool]


SCHEDULE_RULES: tuple[Rule, ...] = (
    Rule(Verdict.UNSCHEDULED, lambda f: not f.template.spec.schedule),
    Rule(Verdict.INVALID, lambda f: f.error is not None),
    Rule(Verdict.SUSPENDED, lambda f: bool(f.template.spec.suspend)),
    Rule(Verdict.IDLE, lambda f: f.due is None),
    Rule(Verdict.STARTED, lambda f: any(run.name == f.due_name for run in f.runs)),
    Rule(Verdict.MISSED, lambda f: f.too_late),
    Rule(Verdict.FORBIDDEN, lambda f: f.policy is ConcurrencyPolicy.FORBID and bool(f.active)),
    Rule(Verdict.REPLACE, lambda f: f.policy is ConcurrencyPolicy.REPLACE and bool(f.active)),
    Rule(Verdict.START, lambda f: True),
)


@dataclass(frozen=True)
class ScheduleDecision:
    """What to do for a template now, in this order: delete ``replace`` (the runs ``Replace`` stops), create
    ``start``, write ``status`` (when it differs from the one read), delete ``prune`` (history limits)."""

    verdict: Verdict
    status: JobFlowTemplateStatus
    start: Start | None = None
    replace: tuple[str, ...] = ()
    prune: tuple[str, ...] = ()
    events: tuple[Event, ...] = field(default_factory=tuple)


def facts(template: JobFlowTemplate, *, runs: Sequence[Run], now: datetime) -> Facts:
    schedule, error = None, None
    if template.spec.schedule:
        try:
            schedule = parse(template.spec.schedule, time_zone=template.spec.time_zone)
        except CronError as problem:
            error = str(problem)
    considered = _considered(template)
    due, passed = None, 0
    if schedule is not None and considered:
        since = max(considered)
        due = schedule.latest_at_or_before(now)
        if due is not None and due <= since:
            due = None
        if due is not None:
            passed = schedule.count_between(after=since, until=now, cap=MISSED_COUNT_CAP)
    return Facts(template=template, now=now, schedule=schedule, error=error, due=due, passed=passed, runs=runs)


def decide(f: Facts) -> Verdict:
    return next(rule.verdict for rule in SCHEDULE_RULES if rule.holds(f))


def _prune(runs: Sequence[Run], *, keep_succeeded: int, keep_failed: int, spare: frozenset[str]) -> tuple[str, ...]:
    """The finished runs beyond the history limits, oldest first (by scheduled time, else creation)."""
    def age(run: Run) -> datetime:
        return run.scheduled or run.created or datetime.min.replace(tzinfo=UTC)

    pruned: list[str] = []
    for phase, keep in ((JobFlowPhase.SUCCEED, keep_succeeded), (JobFlowPhase.FAILED, keep_failed)):
        ended = sorted((run for run in runs if run.phase is phase and not run.deleting and run.name not in spare),
                       key=age)
        pruned += [run.name for run in ended[:max(0, len(ended) - keep)]]
    return tuple(pruned)


def plan_schedule(template: JobFlowTemplate, *, runs: Sequence[Run], now: datetime) -> ScheduleDecision:
    """What the schedule does at ``now``, given the template and its runs as just read."""
    f = facts(template, runs=runs, now=now)
    verdict = decide(f)
    old = template.status or JobFlowTemplateStatus()
    start, replace, events = None, (), []
    last_schedule, last_missed, last_run = old.last_schedule_time, old.last_missed_time, old.last_run
    missed, message = old.missed_runs or 0, None
    passed_over = max(0, f.passed - 1)
    if verdict is Verdict.INVALID:
        message = f"{f.error}; fix spec.schedule or spec.timeZone: no run is scheduled until then"
    elif verdict is Verdict.SUSPENDED:
        message = "suspended (spec.suspend): no scheduled run starts until it is resumed"
    elif verdict is Verdict.STARTED:  # by an earlier look whose status write was lost, or a racing one
        last_schedule = f.due
        missed += passed_over
        last_run = last_run or LastRun(name=f.due_name, cause=Cause.SCHEDULE.value, scheduled_time=f.due)
    elif verdict is Verdict.MISSED:
        last_missed, missed = f.due, missed + f.passed
        events.append(Event(EventType.WARNING, Reason.MISS_SCHEDULE,
                            f"missed {f.passed} scheduled time(s), the last at {_text(f.due)}, more than "
                            f"startingDeadlineSeconds={template.spec.starting_deadline_seconds} ago: no run started; "
                            f"the next is at {_text(f.schedule.next_after(now)) if f.schedule else '-'}"))
    elif verdict is Verdict.FORBIDDEN:
        holders = ", ".join(run.name for run in f.active)
        message = (f"the run for {_text(f.due)} waits: {holders} is still active (concurrencyPolicy Forbid); it "
                   "starts when that ends" + (f", if within startingDeadlineSeconds="
                                              f"{template.spec.starting_deadline_seconds}"
                                              if template.spec.starting_deadline_seconds is not None else ""))
    elif verdict in (Verdict.START, Verdict.REPLACE):
        start = Start(name=f.due_name, cause=Cause.SCHEDULE, scheduled=f.due)
        last_schedule, missed = f.due, missed + passed_over
        last_run = LastRun(name=start.name, cause=Cause.SCHEDULE.value, scheduled_time=f.due)
        if verdict is Verdict.REPLACE:
            replace = tuple(run.name for run in f.active)
            events.append(Event(EventType.NORMAL, Reason.RUN_REPLACED,
                                f"deleted active run(s) {', '.join(replace)} (concurrencyPolicy Replace)"))
        events.append(run_started(last_run))
        if passed_over:
            events.append(Event(EventType.WARNING, Reason.MISS_SCHEDULE,
                                f"{passed_over} earlier scheduled time(s) since {_text(max(_considered(template)))} "
                                "passed without a run (only the most recent one starts, as for a CronJob)"))
    gone = set(replace)
    remaining = [run for run in runs if run.name not in gone]
    events[:0] = [run_started(_last_run(run)) for run in unseen(runs, old, starting=start)]
    if start is None:
        last_run = _newest(remaining) or last_run
    active = sorted({run.name for run in remaining if not run.finished and not run.deleting}
                    | ({start.name} if start else set()))
    succeeded = [run.ended for run in runs if run.phase is JobFlowPhase.SUCCEED and run.ended is not None]
    last_success = max([t for t in (old.last_successful_time, *succeeded) if t is not None], default=None)
    status = with_active(old, active).model_copy(update={
        "last_schedule_time": last_schedule,
        "last_missed_time": last_missed,
        "next_schedule_time": (f.schedule.next_after(now) if f.schedule is not None and not template.spec.suspend
                               else None),
        "last_successful_time": last_success,
        "missed_runs": missed or None,
        "last_run": last_run,
        "message": message,
        "observed_generation": template.metadata.generation,
    })
    prune = _prune(remaining, keep_succeeded=_limit(template.spec.successful_jobs_history_limit,
                                                    DEFAULT_SUCCESSFUL_HISTORY),
                   keep_failed=_limit(template.spec.failed_jobs_history_limit, DEFAULT_FAILED_HISTORY),
                   spare=frozenset({start.name} if start else ()))
    if message is None and start is None and old.message and old.message.startswith(REFUSED) \
            and old.observed_generation == template.metadata.generation:
        status = status.model_copy(update={"message": old.message})  # a refusal stands until the spec changes
    if message and message != old.message:
        reason = Reason.INVALID_SCHEDULE if verdict is Verdict.INVALID else Reason.RUN_HELD
        events.append(Event(EventType.WARNING if verdict is Verdict.INVALID else EventType.NORMAL, reason, message))
    return ScheduleDecision(verdict=verdict, status=status, start=start, replace=replace, prune=prune,
                            events=tuple(events))


def refused(run: str, why: str) -> str:
    """``status.message`` of a template whose run ``run`` the API server refused, saying ``why``."""
    return f"{REFUSED}{run}: {why}; fix spec.jobFlow"


def resume_outlook(template: JobFlowTemplate, *, now: datetime) -> str:
    """What the schedule of ``template`` does next once it is resumed at ``now``, in a sentence (for ``kubectl
    jobflow resume jft/NAME``). While suspended, ``status.nextScheduleTime`` is left out and the times that pass stay
    unconsidered: resuming makes the most recent of them due, as for a CronJob, unless it is too late. The runs
    ``status.active`` names stand for the active runs, and the verdict is :data:`SCHEDULE_RULES`' own, so what this
    says a ``Forbid`` or ``Replace`` does is what :func:`plan_schedule` will do at the engine's next look."""
    resumed = template.model_copy(update={"spec": template.spec.model_copy(update={"suspend": False})})
    active = [Run(name=name, phase=None, created=None, ended=None, cause=None, scheduled=None)
              for name in (template.status.active if template.status else None) or ()]
    f = facts(resumed, runs=active, now=now)
    verdict = decide(f)
    deadline = template.spec.starting_deadline_seconds
    if verdict is Verdict.UNSCHEDULED:
        return "it has no schedule: its runs start by event or by hand"
    if verdict is Verdict.INVALID or f.schedule is None:
        return f"{f.error}; fix spec.schedule or spec.timeZone: no run is scheduled until then"
    upcoming = f"the next scheduled time is {_text(f.schedule.next_after(now))}"
    if verdict is Verdict.IDLE:
        return upcoming
    if verdict is Verdict.MISSED:
        return (f"{f.passed} scheduled time(s) passed while it was suspended, the last at {_text(f.due)}, more than "
                f"startingDeadlineSeconds={deadline} ago: no run starts for them (counted as missed); {upcoming}")
    due = f"the run for {_text(f.due)}, the last scheduled time that passed while it was suspended,"
    if verdict is Verdict.STARTED:
        return f"{due} exists already ({f.due_name}); then {upcoming}"
    within = f", if that is within startingDeadlineSeconds={deadline} of it" if deadline is not None else ""
    holders = ", ".join(run.name for run in f.active)
    if verdict is Verdict.FORBIDDEN:
        return (f"{due} waits: {holders} is still active (concurrencyPolicy Forbid); it starts when that ends"
                f"{within}; then {upcoming}")
    if verdict is Verdict.REPLACE:
        return (f"{due} starts at the engine's next look{within}, which first deletes the active run(s) {holders} "
                f"(concurrencyPolicy Replace); then {upcoming}")
    return f"{due} starts at the engine's next look{within}; then {upcoming}"


def with_active(status: JobFlowTemplateStatus, names: Sequence[str]) -> JobFlowTemplateStatus:
    """``status`` with ``active`` naming ``names`` (sorted, left out when none) and ``activeRuns`` counting them: the
    one place both are written, so the printer column never disagrees with the list."""
    unique = sorted(set(names))
    return status.model_copy(update={"active": unique or None, "active_runs": len(unique)})


def run_started(run: LastRun) -> Event:
    """The ``RunStarted`` Event of one run: which, and for which scheduled time or event (or by hand)."""
    if run.cause == Cause.SCHEDULE.value:
        how = f"for the scheduled time {_text(run.scheduled_time)}"
    elif run.cause == Cause.EVENT.value:
        how = f"for event {run.event_id} from {run.event_source} (trigger {run.trigger})"
    else:
        how = "by hand"
    return Event(EventType.NORMAL, Reason.RUN_STARTED, f"started run {run.name} {how}")


def unseen(runs: Sequence[Run], old: JobFlowTemplateStatus, *, starting: Start | None) -> list[Run]:
    """The runs no ``RunStarted`` Event told yet, oldest first, ``starting`` (this look's, told by its own) aside.

    The Events of a look are recorded only after its status write, which moves ``lastRun`` to the newest run it
    listed (or to the run it started, created after that list) and ``active`` to those not ended. So a run created
    after the one ``lastRun`` names is unseen. Creation times count whole seconds, so a run created in the same
    second as that one is unseen only if ``active`` does not name it and it has not ended (runs created, seen and
    ended in one second are not told twice; a run that starts and ends within the second of the last one between
    two looks goes untold). When the run ``lastRun`` names is gone (deleted, or pruned by a history limit of 0),
    which runs came after it cannot be told: only the newest is, if it is another."""
    dated = sorted((run for run in runs if run.created is not None and run.cause in _CAUSES
                    and (starting is None or run.name != starting.name)), key=lambda r: (r.created, r.name))
    last = old.last_run
    if last is None:
        return dated
    anchor = next((run for run in dated if run.name == last.name), None)
    if anchor is None:
        return [run for run in dated[-1:] if run.name != last.name]
    seen = set(old.active or ()) | {anchor.name}
    return [run for run in dated if run.created > anchor.created or (
        run.created == anchor.created and run.name not in seen and not run.finished)]


def _newest(runs: Sequence[Run]) -> LastRun | None:
    """``status.lastRun`` from the runs themselves: the one created last, whatever started it (a run by hand or by
    an event shows there at the template's next look)."""
    dated = [run for run in runs if run.created is not None and run.cause in _CAUSES]
    if not dated:
        return None
    return _last_run(max(dated, key=lambda r: (r.created, r.name)))


def _last_run(run: Run) -> LastRun:
    return LastRun(name=run.name, cause=run.cause, scheduled_time=run.scheduled, trigger=run.trigger,
                   event_id=run.event_id, event_source=run.event_source)


_CAUSES = frozenset(cause.value for cause in Cause)


def _limit(value: int | None, default: int) -> int:
    return default if value is None else max(0, value)


def _considered(template: JobFlowTemplate) -> list[datetime]:
    status = template.status or JobFlowTemplateStatus()
    return [t for t in (status.last_schedule_time, status.last_missed_time, template.metadata.creation_timestamp)
            if t is not None]


def _text(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment is not None else "-"
