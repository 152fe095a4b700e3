"""What the planner knows, gathered once: each flow of the spec next to its vcjob and its previous record.

The planner is called with a JobFlow (spec and previous status) and the vcjobs the shell listed. From those this
module builds one :class:`FlowView` per flow (the first flow of each name, in spec order):

* ``job``: the live vcjob named ``<jobflow>-<flow>`` that this JobFlow controls (owner reference UID);
* ``foreign``: a live vcjob with that name that someone else owns, which blocks the flow (a name conflict);
* ``record`` and ``condition``: what the previous status recorded about that vcjob. The status is the record of
  vcjobs that are gone, for instance deleted by ``ttlSecondsAfterFinished``.

From these follows each flow's *effective job phase* (:attr:`FlowView.phase`), which drives the JobFlow phase
(:mod:`jobflow_core.phase`), dependencies (:mod:`jobflow_core.dependencies`) and the status lists.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from jobflow_core.dependencies import Readiness, check_dependencies, check_probe
from jobflow_core.models import (
    Flow,
    FlowCondition,
    FlowJobStatus,
    JobFlow,
    JobFlowPhase,
    JobFlowStatus,
    VcJob,
    VcJobPhase,
)
from jobflow_core.naming import is_owned_by, job_name
from jobflow_core.phase import decide_flow_phase, is_final
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
    previous: JobFlowStatus
    errors: tuple[SpecError, ...]
    phases: Mapping[str, VcJobPhase | None]
    """Effective job phase by flow name."""
    probe_results: Mapping[NetworkCheck, CheckResult]
    """What the shell found for the HTTP and TCP checks it was asked for (:meth:`network_checks`)."""

    def phase_of(self, flow: str) -> VcJobPhase | None:
        return self.phases.get(flow)

    def live_job(self, flow: str) -> VcJob | None:
        view = next((v for v in self.views if v.flow.name == flow), None)
        return view.job if view is not None else None

    def readiness(self, view: FlowView) -> Readiness:
        if view.flow.depends_on is not None and view.flow.depends_on.probe is not None:
            return check_probe(view.flow, live_job=self.live_job, results=self.probe_results)
        return check_dependencies(view.flow, phase_of=self.phase_of)

    def network_checks(self, views: Iterable[FlowView]) -> list[NetworkCheck]:
        """The HTTP/TCP checks the probes of ``views`` need now, against the targets that have a live vcjob."""
        checks: dict[NetworkCheck, None] = {}
        for view in views:
            probe = view.flow.depends_on.probe if view.flow.depends_on else None
            for target in (view.flow.depends_on.targets or ()) if probe else ():
                job = self.live_job(target)
                if job is not None:
                    checks.update(dict.fromkeys(network_checks(probe, job)))
        return list(checks)

    def flow_phase(self, *, creating: Iterable[str] = ()) -> JobFlowPhase:
        """The JobFlow phase, counting the flows in ``creating`` as vcjobs just created (phase ``""``)."""
        created = set(creating)
        return decide_flow_phase(
            deleting=self.jobflow.metadata.deletion_timestamp is not None,
            spec_valid=not self.errors,
            job_phases=(VcJobPhase.NEW if view.flow.name in created else view.phase for view in self.views),
        )


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
    return Observation(
        jobflow=jobflow,
        views=tuple(views.values()),
        owned=tuple(owned[name] for name in sorted(owned)),
        previous=previous,
        errors=tuple(validate(jobflow)),
        phases={flow: view.phase for flow, view in views.items()},
        probe_results=dict(probe_results or {}),
    )
