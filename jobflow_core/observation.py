"""What the planner knows, gathered once per attempt: each flow of the spec next to its vcjob and its previous record.

The shell builds one :class:`Observation` per attempt with :func:`observe` (the JobFlow, spec and previous status,
and the vcjobs it listed), adds the answers of the HTTP/TCP probes the observation asked for
(:meth:`Observation.with_probe_results`), and hands it to :func:`jobflow_core.planner.plan_observation`. The
spec is validated once, here; everything below is derived from this one value.

One :class:`FlowView` per flow (the first flow of each name, in spec order):

* ``job``: the live vcjob named ``<jobflow>-<flow>`` that this JobFlow controls (owner reference UID);
* ``foreign``: a live vcjob with that name that someone else owns, which blocks the flow (a name conflict);
* ``record`` and ``condition``: what the previous status recorded about that vcjob. The status is the record of
  vcjobs that are gone, for instance deleted by ``ttlSecondsAfterFinished``.

From these follow each flow's *effective job phase* (:attr:`FlowView.phase`), and from those each flow's outcome
and, for each flow that still needs a vcjob, its :class:`~jobflow_core.dependencies.Readiness`
(:mod:`jobflow_core.outcomes`), and the JobFlow phase (:mod:`jobflow_core.phase`).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from jobflow_core.conditions import reads_results
from jobflow_core.deadlines import jobflow_deadline, passed
from jobflow_core.dependencies import Readiness
from jobflow_core.models import (
    FailurePolicy,
    Flow,
    FlowCondition,
    FlowJobStatus,
    JobFlow,
    JobFlowPhase,
    JobFlowStatus,
    Rerun,
    VcJob,
    VcJobPhase,
)
from jobflow_core.naming import attempt_job_name, has_record_finalizer, is_owned_by
from jobflow_core.outcomes import FlowFate, Outcomes, decide_outcomes
from jobflow_core.phase import FlowOutcome, JobCategory, category_of, decide_flow_phase, is_final
from jobflow_core.probes import CheckResult, NetworkCheck, network_checks
from jobflow_core.reruns import new_request, record, rerun_from
from jobflow_core.retries import retries

MAX_ATTEMPTS = 1000
"""Attempts of one flow looked for (retries and reruns together); far more than any JobFlow's status could hold."""
from jobflow_core.validation import SpecError, validate


@dataclass(frozen=True)
class Attempt:
    """One attempt of a flow: its vcjob (live, or only recorded in the previous status). A flow without
    ``retry`` has one attempt; with ``retry``, attempt ``n`` is named by :func:`~jobflow_core.naming.attempt_job_name`."""

    number: int
    job_name: str
    job: VcJob | None
    record: FlowJobStatus | None
    condition: FlowCondition | None

    @property
    def phase(self) -> VcJobPhase | None:
        """The live vcjob's phase; else the recorded one; ``None`` if it never had a vcjob."""
        if self.job is not None:
            return self.job.phase
        return self.record.state if self.record else None

    @property
    def ended_at(self) -> datetime | None:
        """When its vcjob reached a final phase, if it did and the time is known."""
        if self.job is not None:
            state = self.job.status.state if self.job.status else None
            return state.last_transition_time if state and is_final(self.job.phase) else None
        return self.record.end_timestamp if self.record else None


@dataclass(frozen=True)
class FlowView:
    jobflow: str
    """The JobFlow's name."""
    flow: Flow
    attempts: tuple[Attempt, ...]
    """Every attempt so far, in order; at least the first, which may have no vcjob yet."""
    foreign: VcJob | None
    """A live vcjob this JobFlow does not control, holding the name :attr:`next_job_name` needs."""
    first: int = 1
    """The first attempt that counts: a rerun from failure (:mod:`jobflow_core.reruns`) makes the ones before it
    history, kept in the status but no longer the flow's outcome."""

    @property
    def name(self) -> str:
        return self.flow.name

    @property
    def current(self) -> Attempt:
        return self.attempts[-1]

    @property
    def superseded(self) -> bool:
        """A rerun asked for a new attempt, not created yet: the last one is history."""
        return self.current.number < self.first

    @property
    def job_name(self) -> str:
        return self.next_job_name if self.superseded else self.current.job_name

    @property
    def job(self) -> VcJob | None:
        return None if self.superseded else self.current.job

    @property
    def record(self) -> FlowJobStatus | None:
        return None if self.superseded else self.current.record

    @property
    def condition(self) -> FlowCondition | None:
        return None if self.superseded else self.current.condition

    @property
    def phase(self) -> VcJobPhase | None:
        """The current attempt's phase: its live vcjob's, else the recorded one; ``None`` without any vcjob (or
        when a rerun made it history)."""
        return None if self.superseded else self.current.phase

    @property
    def retrying(self) -> bool:
        """The current attempt ended in a way ``retry`` runs again, and attempts of this run are left."""
        return not self.superseded and retries(self.flow, attempt=self.current.number - self.first + 1,
                                               phase=self.phase)

    @property
    def needs_job(self) -> bool:
        """A retry is due, or there is no live vcjob and none that finished: a vcjob that vanished before it
        finished is needed again."""
        return self.retrying or (self.job is None and not is_final(self.phase))

    @property
    def next_attempt(self) -> int:
        """The attempt a vcjob created now would be."""
        if self.superseded:
            return self.first
        return self.current.number + 1 if self.retrying else self.current.number

    @property
    def next_job_name(self) -> str:
        return attempt_job_name(jobflow=self.jobflow, flow=self.name, attempt=self.next_attempt)


@dataclass(frozen=True)
class Observation:
    jobflow: JobFlow
    views: tuple[FlowView, ...]
    """One per distinct flow name, in spec order."""
    owned: tuple[VcJob, ...]
    """Every live vcjob this JobFlow controls, by name, including jobs of flows no longer in the spec."""
    orphans: tuple[VcJob, ...]
    """Listed vcjobs being deleted and held by our finalizer that this JobFlow does not control (for instance
    those of an earlier JobFlow of the same name): nobody else will record them, so they are let go."""
    previous: JobFlowStatus
    errors: tuple[SpecError, ...]
    outcomes: Outcomes
    phase: JobFlowPhase
    """The JobFlow phase as observed, before anything this plan starts."""
    probe_results: Mapping[NetworkCheck, CheckResult]
    """What the shell found for the HTTP and TCP checks it was asked for (:meth:`network_checks`)."""
    now: datetime | None = None
    """When the observation was made (the shell's clock); None: unknown, so no backoff or deadline has passed."""
    deadline_exceeded: bool = False
    """``spec.activeDeadlineSeconds`` passed before every flow ended (:mod:`jobflow_core.deadlines`)."""
    rerun: Rerun | None = None
    """``status.rerun`` as it should be written: the previous one, or the rerun request just handled."""
    results: Mapping[str, str] = field(default_factory=dict)
    """Known vcjob results (termination messages), by vcjob name: recorded in the status, or read by the shell."""

    @property
    def readiness(self) -> Mapping[str, Readiness]:
        """For each flow that needs a vcjob: whether its dependencies (or probe) let it start."""
        return self.outcomes.readiness

    @property
    def starts_nothing(self) -> bool:
        """The JobFlow is being deleted or its spec is invalid: no flow starts."""
        return self.jobflow.metadata.deletion_timestamp is not None or bool(self.errors)

    def stopped_for(self, view: FlowView) -> bool:
        """The JobFlow failed fast, so ``view`` never starts (``finally`` flows still do)."""
        return self.outcomes.stopped and not view.flow.final

    @property
    def candidates(self) -> list[FlowView]:
        """Flows that need a vcjob and may still start: their dependencies decide."""
        if self.starts_nothing or self.jobflow.spec.suspend or self.deadline_exceeded:
            return []
        return [view for view in self.views if view.needs_job and not self.stopped_for(view)
                and self.outcomes.of.get(view.name) is not FlowOutcome.SKIPPED]

    def network_checks(self) -> list[NetworkCheck]:
        """The HTTP/TCP checks the probes of the candidates need now, against the targets that have a live vcjob."""
        live = {view.name: view.job for view in self.views}
        checks: dict[NetworkCheck, None] = {}
        for view in self.candidates:
            probe = view.flow.depends_on.probe if view.flow.depends_on else None
            for target in (view.flow.depends_on.targets or ()) if probe else ():
                job = live.get(target)
                if job is not None:
                    checks.update(dict.fromkeys(network_checks(probe, job)))
        return list(checks)

    def results_needed(self) -> list[str]:
        """The vcjobs whose result (their pods' termination message) a ``when`` condition needs now: the ended,
        live vcjobs of the targets of the flows that may start, whose result is not known yet."""
        views = {view.name: view for view in self.views}
        needed: dict[str, None] = {}
        for view in self.candidates:
            reads = view.flow.when is not None and reads_results(view.flow.when)
            for target in (view.flow.depends_on.targets or ()) if reads and view.flow.depends_on else ():
                job = views[target].job if target in views else None
                if job is not None and is_final(job.phase) and job.name not in self.results:
                    needed[job.name] = None
        return list(needed)

    def with_probe_results(self, results: Mapping[NetworkCheck, CheckResult]) -> "Observation":
        """The same observation, with the answers of :meth:`network_checks` (the spec is not validated again)."""
        return self._recomputed(probe_results=dict(results), results=self.results)

    def with_results(self, results: Mapping[str, str]) -> "Observation":
        """The same observation, with the vcjob results :meth:`results_needed` asked for (vcjob name -> text)."""
        return self._recomputed(probe_results=self.probe_results, results={**self.results, **results})

    def _recomputed(self, *, probe_results: Mapping[NetworkCheck, CheckResult],
                    results: Mapping[str, str]) -> "Observation":
        outcomes = _outcomes(self.jobflow, self.views, probe_results=probe_results, now=self.now, results=results)
        exceeded = _deadline_exceeded(self.jobflow, self.views, outcomes, now=self.now)
        return replace(self, probe_results=probe_results, results=results, outcomes=outcomes,
                       deadline_exceeded=exceeded,
                       phase=_phase(self.jobflow, self.views, outcomes, valid=not self.errors, creating=set(),
                                    deadline_exceeded=exceeded))

    def flow_phase(self, *, creating: Iterable[str] = ()) -> JobFlowPhase:
        """The JobFlow phase, counting the flows in ``creating`` as vcjobs just created (phase ``""``)."""
        created = set(creating)
        if not created:
            return self.phase
        return _phase(self.jobflow, self.views, self.outcomes, valid=not self.errors, creating=created,
                      deadline_exceeded=self.deadline_exceeded)


def observe(jobflow: JobFlow, *, jobs: Iterable[VcJob], now: datetime | None = None,
            probe_results: Mapping[NetworkCheck, CheckResult] | None = None) -> Observation:
    """Pair each flow of ``jobflow`` with its vcjobs among ``jobs`` and its records in the previous status, as of
    ``now``; with a rerun request the JobFlow has not handled yet, as if that rerun was accepted
    (:mod:`jobflow_core.reruns`)."""
    previous = jobflow.status or JobFlowStatus()
    owned: dict[str, VcJob] = {}
    foreign: dict[str, VcJob] = {}
    for job in jobs:
        if job.namespace == jobflow.namespace:
            (owned if is_owned_by(job, jobflow) else foreign)[job.name] = job
    counted = dict(previous.rerun.from_attempt or {}) if previous.rerun else {}
    observation = _observe(jobflow, owned=owned, foreign=foreign, first=counted, now=now,
                           probe_results=probe_results or {})
    request = new_request(jobflow)
    if request is None:
        return observation
    if observation.phase is not JobFlowPhase.FAILED or observation.errors or observation.deadline_exceeded:
        why = f"nothing run again: the JobFlow is {observation.phase}, and only a Failed JobFlow is rerun" \
            if not observation.deadline_exceeded else "nothing run again: its activeDeadlineSeconds passed"
        return replace(observation, rerun=record(request, accepted=None, previous=previous.rerun, why_not=why))
    accepted = rerun_from(jobflow, request, outcomes=observation.outcomes.of,
                          attempts={view.name: view.current.number if view.current.phase is not None else 0
                                    for view in observation.views})
    rerun = record(request, accepted=accepted, previous=previous.rerun)
    return replace(_observe(jobflow, owned=owned, foreign=foreign, first=dict(rerun.from_attempt or {}), now=now,
                            probe_results=probe_results or {}), rerun=rerun)


def _observe(jobflow: JobFlow, *, owned: Mapping[str, VcJob], foreign: Mapping[str, VcJob],
             first: Mapping[str, int], now: datetime | None,
             probe_results: Mapping[NetworkCheck, CheckResult]) -> Observation:
    previous = jobflow.status or JobFlowStatus()
    records = {record.name: record for record in previous.job_status_list or () if record.name}
    conditions = previous.conditions or {}
    views: dict[str, FlowView] = {}
    for flow in jobflow.spec.flows or ():
        if flow.name in views:
            continue
        attempts = []
        for number in range(1, MAX_ATTEMPTS + 1):
            name = attempt_job_name(jobflow=jobflow.name, flow=flow.name, attempt=number)
            if number > 1 and name not in owned and name not in records:
                break
            attempts.append(Attempt(number, name, owned.get(name), records.get(name), conditions.get(name)))
        view = FlowView(jobflow=jobflow.name, flow=flow, attempts=tuple(attempts), foreign=None,
                        first=first.get(flow.name, 1))
        wanted = view.next_job_name
        views[flow.name] = replace(view, foreign=None if wanted in owned else foreign.get(wanted))
    errors = tuple(validate(jobflow))
    flows = tuple(views.values())
    results = {record.name: record.result for record in previous.job_status_list or ()
               if record.name and record.result is not None}
    outcomes = _outcomes(jobflow, flows, probe_results=probe_results, now=now, results=results)
    exceeded = _deadline_exceeded(jobflow, flows, outcomes, now=now)
    return Observation(
        jobflow=jobflow,
        views=flows,
        owned=tuple(owned[name] for name in sorted(owned)),
        orphans=tuple(foreign[name] for name in sorted(foreign)
                      if foreign[name].metadata.deletion_timestamp is not None
                      and has_record_finalizer(foreign[name])),
        previous=previous,
        errors=errors,
        outcomes=outcomes,
        phase=_phase(jobflow, flows, outcomes, valid=not errors, creating=set(), deadline_exceeded=exceeded),
        probe_results=dict(probe_results),
        now=now,
        deadline_exceeded=exceeded,
        rerun=previous.rerun,
        results=results,
    )


def _deadline_exceeded(jobflow: JobFlow, views: Iterable[FlowView], outcomes: Outcomes, *,
                       now: datetime | None) -> bool:
    deadline = jobflow_deadline(jobflow)
    if deadline is None or not passed(deadline, now):
        return False
    # Times have one-second precision: a vcjob recorded as ended in the deadline's second ended at or after it.
    return any(outcomes.of.get(view.name) is None or (view.current.ended_at is not None
                                                      and view.current.ended_at >= deadline) for view in views)


def _phase(jobflow: JobFlow, views: Iterable[FlowView], outcomes: Outcomes, *, valid: bool,
           creating: set[str], deadline_exceeded: bool) -> JobFlowPhase:
    return decide_flow_phase(
        deleting=jobflow.metadata.deletion_timestamp is not None,
        spec_valid=valid,
        deadline_exceeded=deadline_exceeded,
        categories=(_category(view, outcomes, creating=view.name in creating) for view in views),
        unhandled_failure=outcomes.unhandled_failure,
        fail_fast=jobflow.spec.failure_policy is not FailurePolicy.KEEP_GOING,
        suspended=bool(jobflow.spec.suspend),
    )


def _category(view: FlowView, outcomes: Outcomes, *, creating: bool) -> JobCategory:
    """A flow's category for the phase table: that of its current attempt; a flow being created is pending, one
    waiting for a retry is still active, one that will never run is skipped."""
    if creating:
        return JobCategory.PENDING
    if view.retrying:
        return JobCategory.ACTIVE
    if outcomes.of.get(view.name) is FlowOutcome.SKIPPED:
        return JobCategory.SKIPPED
    return category_of(view.phase)


def _outcomes(jobflow: JobFlow, views: Iterable[FlowView], *, probe_results: Mapping[NetworkCheck, CheckResult],
              now: datetime | None, results: Mapping[str, str]) -> Outcomes:
    fates = {view.name: FlowFate(flow=view.flow, phase=view.phase, job=view.job, needs_job=view.needs_job,
                                 running=view.job is not None and not is_final(view.phase),
                                 attempts=view.current.number if view.phase is not None else 0,
                                 status=view.job.status.to_wire() if view.job is not None and view.job.status else None,
                                 result=_result(view, results))
             for view in views}
    return decide_outcomes(jobflow, fates, probe_results=probe_results, now=now)


def _result(view: FlowView, results: Mapping[str, str]) -> str | None:
    """A flow's current result: known, else unknown (None) while its live vcjob's pods can still be read."""
    known = results.get(view.job_name)
    if known is not None:
        return known
    return None if view.job is not None and is_final(view.job.phase) else ""
