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
from dataclasses import dataclass, replace

from jobflow_core.dependencies import Readiness
from jobflow_core.models import (
    FailurePolicy,
    Flow,
    FlowCondition,
    FlowJobStatus,
    JobFlow,
    JobFlowPhase,
    JobFlowStatus,
    VcJob,
    VcJobPhase,
)
from jobflow_core.naming import has_record_finalizer, is_owned_by, job_name
from jobflow_core.outcomes import FlowFate, Outcomes, decide_outcomes
from jobflow_core.phase import FlowOutcome, JobCategory, category_of, decide_flow_phase, is_final
from jobflow_core.probes import CheckResult, NetworkCheck, network_checks
from jobflow_core.validation import SpecError, validate


@dataclass(frozen=True)
class FlowView:
    flow: Flow
    job_name: str
    job: VcJob | None
    foreign: VcJob | None
    record: FlowJobStatus | None
    condition: FlowCondition | None

    @property
    def name(self) -> str:
        return self.flow.name

    @property
    def phase(self) -> VcJobPhase | None:
        """The live vcjob's phase; else the recorded one; ``None`` if the flow never had a vcjob."""
        if self.job is not None:
            return self.job.phase
        return self.record.state if self.record else None

    @property
    def needs_job(self) -> bool:
        """No live vcjob, and none that finished: a vcjob that vanished before it finished is needed again."""
        return self.job is None and not is_final(self.phase)


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
        if self.starts_nothing or self.jobflow.spec.suspend:
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

    def with_probe_results(self, results: Mapping[NetworkCheck, CheckResult]) -> "Observation":
        """The same observation, with the answers of :meth:`network_checks` (the spec is not validated again)."""
        outcomes = _outcomes(self.jobflow, self.views, probe_results=results)
        return replace(self, probe_results=dict(results), outcomes=outcomes,
                       phase=_phase(self.jobflow, self.views, outcomes, valid=not self.errors, creating=set()))

    def flow_phase(self, *, creating: Iterable[str] = ()) -> JobFlowPhase:
        """The JobFlow phase, counting the flows in ``creating`` as vcjobs just created (phase ``""``)."""
        created = set(creating)
        if not created:
            return self.phase
        return _phase(self.jobflow, self.views, self.outcomes, valid=not self.errors, creating=created)


def observe(jobflow: JobFlow, *, jobs: Iterable[VcJob],
            probe_results: Mapping[NetworkCheck, CheckResult] | None = None) -> Observation:
    """Pair each flow of ``jobflow`` with its vcjob among ``jobs`` and its record in the previous status."""
    previous = jobflow.status or JobFlowStatus()
    records = {record.name: record for record in previous.job_status_list or () if record.name}
    conditions = previous.conditions or {}
    owned: dict[str, VcJob] = {}
    foreign: dict[str, VcJob] = {}
    for job in jobs:
        if job.namespace == jobflow.namespace:
            (owned if is_owned_by(job, jobflow) else foreign)[job.name] = job
    views: dict[str, FlowView] = {}
    for flow in jobflow.spec.flows or ():
        if flow.name in views:
            continue
        name = job_name(jobflow=jobflow.name, flow=flow.name)
        views[flow.name] = FlowView(
            flow=flow,
            job_name=name,
            job=owned.get(name),
            foreign=None if name in owned else foreign.get(name),
            record=records.get(name),
            condition=conditions.get(name),
        )
    errors = tuple(validate(jobflow))
    flows = tuple(views.values())
    outcomes = _outcomes(jobflow, flows, probe_results=probe_results or {})
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
        phase=_phase(jobflow, flows, outcomes, valid=not errors, creating=set()),
        probe_results=dict(probe_results or {}),
    )


def _phase(jobflow: JobFlow, views: Iterable[FlowView], outcomes: Outcomes, *, valid: bool,
           creating: set[str]) -> JobFlowPhase:
    return decide_flow_phase(
        deleting=jobflow.metadata.deletion_timestamp is not None,
        spec_valid=valid,
        categories=(JobCategory.SKIPPED if outcomes.of.get(view.name) is FlowOutcome.SKIPPED
                    else category_of(VcJobPhase.NEW if view.name in creating else view.phase) for view in views),
        unhandled_failure=outcomes.unhandled_failure,
        fail_fast=jobflow.spec.failure_policy is not FailurePolicy.KEEP_GOING,
        suspended=bool(jobflow.spec.suspend),
    )


def _outcomes(jobflow: JobFlow, views: Iterable[FlowView], *,
              probe_results: Mapping[NetworkCheck, CheckResult]) -> Outcomes:
    fates = {view.name: FlowFate(flow=view.flow, phase=view.phase, job=view.job, needs_job=view.needs_job)
             for view in views}
    return decide_outcomes(jobflow, fates, probe_results=probe_results)
