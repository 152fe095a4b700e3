"""What the planner knows, gathered once per attempt: each flow of the spec next to its vcjob and its previous record.

The shell builds one :class:`Observation` per attempt with :func:`observe` (the JobFlow, spec and previous status,
and the vcjobs it listed), adds the live answers it asked for (:func:`jobflow_core.planning.needs.needs`,
:meth:`Observation.with_answers`), and hands it to :func:`jobflow_core.planning.planner.plan_observation`. The
spec is validated once, here; everything below is derived from this one value.

Each flow of the spec (the first of each name, in spec order) becomes a :class:`~jobflow_core.flows.units.FlowNode`
with its *units* (:mod:`jobflow_core.flows.units`): one per plain flow, one per item of a ``forEach`` flow
(:mod:`jobflow_core.flows.items`), one per iteration so far of a ``repeat`` flow (:mod:`jobflow_core.flows.loops`). Each
unit pairs its attempts' live vcjobs (those this JobFlow controls, by owner reference UID) with what the previous status
recorded about them; a live vcjob someone else owns under a unit's next name blocks it (a name conflict).

From these follow each flow's effective phase, its outcome and, for each flow that still needs a vcjob, its
:class:`~jobflow_core.dag.dependencies.Readiness` (:mod:`jobflow_core.dag.outcomes`), and the JobFlow phase
(:mod:`jobflow_core.vocabulary.phase`).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Final
from datetime import datetime

from jobflow_core.dag.awaits import Seen, outcome_of, settle
from jobflow_core.dag.dependencies import Readiness
from jobflow_core.dag.outcomes import FlowFate, Outcomes, decide_outcomes
from jobflow_core.dag.probes import CheckResult, NetworkCheck, network_checks
from jobflow_core.dag.reruns import new_request, record, rerun_from
from jobflow_core.flows.children import ChildJob, output_targets, pending_rerun
from jobflow_core.flows.conditions import reads_results
from jobflow_core.flows.deadlines import jobflow_deadline, passed
from jobflow_core.flows.items import expand
from jobflow_core.flows.loops import iterate
from jobflow_core.flows.memo import memo_results_needed
from jobflow_core.flows.outputs import ancestors, results_read
from jobflow_core.flows.parameters import Item, values
from jobflow_core.flows.retries import due, with_retry_policies
from jobflow_core.flows.units import Attempt, FlowNode, FlowView, unit_key
from jobflow_core.models import (
    AwaitedJobFlow,
    FailurePolicy,
    Flow,
    FlowJobStatus,
    JobFlow,
    JobFlowPhase,
    JobFlowStatus,
    Rerun,
    Shutdown,
    VcJob,
    VcJobPhase,
)
from jobflow_core.validation.jobflows import SpecError, validate
from jobflow_core.vocabulary.api import PARENT, PARENT_STARTED
from jobflow_core.vocabulary.kube_events import SHUTDOWN_REASON, strongest
from jobflow_core.vocabulary.naming import attempt_job_name, has_record_finalizer, is_owned_by
from jobflow_core.vocabulary.phase import (FlowOutcome, JobCategory, category_of, decide_flow_phase, is_final,
                                outdated_by_record)

MAX_ATTEMPTS = 1000
"""Attempts of one flow looked for (retries and reruns together); far more than any JobFlow's status could hold."""


@dataclass(frozen=True)
class Observation:
    jobflow: JobFlow
    views: tuple[FlowView, ...]
    """Every unit (:mod:`jobflow_core.flows.units`): one per plain flow, one per item of a ``forEach`` flow (or its
    placeholder), in spec order, items in index order."""
    nodes: tuple[FlowNode, ...]
    """One per distinct flow name, in spec order."""
    owned: tuple[VcJob, ...]
    """Every live vcjob this JobFlow controls, by name, including jobs of flows no longer in the spec."""
    foreign: Mapping[str, VcJob]
    """Live vcjobs of the namespace this JobFlow does not control, by name."""
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
    """``spec.activeDeadlineSeconds`` passed before every flow ended (:mod:`jobflow_core.flows.deadlines`)."""
    rerun: Rerun | None = None
    """``status.rerun`` as it should be written: the previous one, or the rerun request just handled."""
    results: Mapping[str, str] = field(default_factory=dict)
    """Known vcjob results (termination messages), by vcjob name: recorded in the status, or read by the shell."""
    first: Mapping[str, int] = field(default_factory=dict)
    """The first attempt that counts, per flow (a rerun's), as :func:`observe` decided."""
    recorded_phase: JobFlowPhase | None = None
    """The phase the status records, for the phase table's memory of an ended JobFlow
    (:mod:`jobflow_core.vocabulary.phase`);
    None when a rerun was just accepted (the one way out of Succeed or Failed)."""
    no_free_slot: Mapping[str, str] = field(default_factory=dict)
    """Units (by :attr:`FlowView.next_job_name`) of ``forEach`` flows that would start now but for ``parallelism``,
    and why (worked out once per flow: a fan-out of thousands must not count its running items per item)."""
    awaits: Mapping[str, AwaitedJobFlow] = field(default_factory=dict)
    """The other JobFlows it waits for, by key, bound and decided (:mod:`jobflow_core.dag.awaits`): the next
    ``status.awaitedJobFlows``."""
    seen: Seen | None = None
    """What the shell read of those JobFlows (None: nothing)."""

    @property
    def readiness(self) -> Mapping[str, Readiness]:
        """For each flow that needs a vcjob: whether its dependencies (or probe) let it start."""
        return self.outcomes.readiness

    def node(self, name: str) -> FlowNode:
        return self._nodes_by_name[name]

    @cached_property
    def _nodes_by_name(self) -> Mapping[str, FlowNode]:
        return {node.name: node for node in self.nodes}

    @property
    def started(self) -> bool:
        """The JobFlow has created a vcjob (or a child) before (one is live, or recorded), or it is the child of a
        parent that had (:data:`~jobflow_core.vocabulary.api.PARENT_STARTED`): its next ones go first in its queue."""
        return bool(self.owned) or bool(self.previous.job_status_list) or bool(self.previous.completed_jobs) \
            or (self.jobflow.metadata.annotations or {}).get(PARENT_STARTED) == "true"

    @property
    def starts_nothing(self) -> bool:
        """The JobFlow is being deleted or its spec is invalid: no flow starts."""
        return self.jobflow.metadata.deletion_timestamp is not None or bool(self.errors)

    @property
    def shutdown(self) -> Shutdown | None:
        """``spec.shutdown``: the JobFlow was asked to stop or terminate."""
        return self.jobflow.spec.shutdown

    def stopped_for(self, view: FlowView) -> bool:
        """The JobFlow failed fast or was stopped, so ``view`` never starts (``finally`` flows still do); or it was
        terminated, and nothing starts. A flow already Skipped stays so (a stop after the JobFlow ended changes
        nothing)."""
        if self.shutdown is not None and self.outcomes.of.get(view.name) is FlowOutcome.SKIPPED:
            return False
        return self.shutdown is Shutdown.TERMINATE or (self.outcomes.stopped and not view.flow.final)

    def suspended_for(self, view: FlowView) -> bool:
        """``spec.suspend`` holds ``view``: any flow, except a ``finally`` flow of a stopped JobFlow (a stop ends a
        suspended JobFlow: its ``finally`` flows run, as ``argo stop`` does)."""
        return bool(self.jobflow.spec.suspend) and not (self.shutdown is Shutdown.STOP and view.flow.final)

    @property
    def undecided(self) -> list[FlowView]:
        """Units that need a vcjob and whose flow has no outcome yet, or is Skipped (the start table says why);
        a ``forEach`` flow with no items succeeds without any."""
        return [view for view in self.views if view.needs_job
                and self.outcomes.of.get(view.name) in (None, FlowOutcome.SKIPPED)]

    @property
    def candidates(self) -> list[FlowView]:
        """Units that need a vcjob and may still start: their dependencies decide."""
        if self.starts_nothing or self.succeeded or self.deadline_exceeded:
            return []
        return [view for view in self.undecided if not self.stopped_for(view) and not self.suspended_for(view)
                and self.outcomes.of.get(view.name) is not FlowOutcome.SKIPPED]

    def network_checks(self) -> list[NetworkCheck]:
        """The HTTP/TCP checks the probes of the candidates need now, against the targets that have a live vcjob."""
        live = {node.name: node.job for node in self.nodes}
        checks: dict[NetworkCheck, None] = {}
        for name in dict.fromkeys(view.name for view in self.candidates):
            flow = self.node(name).flow
            probe = flow.depends_on.probe if flow.depends_on else None
            for target in (flow.depends_on.targets or ()) if probe else ():
                job = live.get(target)
                if job is not None:
                    checks.update(dict.fromkeys(network_checks(probe, job)))
        return list(checks)

    def results_needed(self) -> list[str]:
        """The vcjobs whose result (their pods' termination message) is needed now and not known yet: the ended,
        live vcjobs of the targets of candidates whose ``when`` condition reads results, of the flows whose results
        their patch reads (:mod:`jobflow_core.flows.outputs`), of the targets a ``forEach`` takes its items from, the
        last iteration of a ``repeat`` flow, whose ``until`` reads it, and the Completed vcjobs of memoized flows, whose
        result is stored with them (:mod:`jobflow_core.flows.memo`)."""
        nodes = {node.name: node for node in self.nodes}
        needed: dict[str, None] = {}
        for name in dict.fromkeys(view.name for view in self.candidates):
            flow = nodes[name].flow
            targets = list(flow.depends_on.targets or ()) if flow.when and reads_results(flow.when) \
                and flow.depends_on else []
            if flow.for_each is not None and flow.for_each.result:
                targets.append(flow.for_each.result)
            targets += results_read(flow)
            for target in targets:
                for unit in nodes[target].units if target in nodes else ():
                    job = unit.job
                    if job is not None and is_final(job.phase) and job.name not in self.results:
                        needed[job.name] = None
        for target in output_targets(self.jobflow):  # spec.outputs, worked out once the JobFlow succeeds
            for unit in nodes[target].units if target in nodes else ():
                job = unit.job
                if job is not None and job.phase is VcJobPhase.COMPLETED and job.name not in self.results:
                    needed[job.name] = None
        if not self.starts_nothing:
            needed.update(dict.fromkeys(node.unread for node in self.nodes if node.unread))
        needed.update(dict.fromkeys(memo_results_needed(self)))
        return list(needed)

    def estimates_needed(self) -> list[str]:
        """The flows whose run time the status does not estimate yet (:mod:`jobflow_core.insight.eta`): their
        JobTemplates are read once, on the first reconcile of a JobFlow that is not over."""
        if self.starts_nothing or self.phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
            return []
        known = {entry.flow for entry in self.previous.estimates or ()}
        return [node.name for node in self.nodes if node.name not in known and node.flow.approval is None
                and node.flow.job_flow is None]

    def with_answers(self, *, probe_results: Mapping[NetworkCheck, CheckResult] | None = None,
                     results: Mapping[str, str] | None = None) -> "Observation":
        """The same observation with the live answers :func:`~jobflow_core.planning.needs.needs` asked for, added
        to those it has: the probes' (:meth:`network_checks`) and the vcjobs' results (:meth:`results_needed`,
        vcjob name -> text). One pass of :func:`_observe` for both; the spec is not validated again."""
        return _observe(self.jobflow, owned={job.name: job for job in self.owned}, foreign=self.foreign,
                        first=self.first, now=self.now, probe_results={**self.probe_results, **(probe_results or {})},
                        results={**self.results, **(results or {})}, errors=self.errors, rerun=self.rerun,
                        recorded=self.recorded_phase, seen=self.seen)

    def with_records(self, records: Iterable[FlowJobStatus]) -> "Observation":
        """The same observation, as if the previous status also recorded ``records`` (the flows a memoized run
        stands for, :mod:`jobflow_core.flows.memo`): they count as ended as recorded, with their results."""
        added = list(records)
        previous = self.previous.model_copy(update={"job_status_list": [*(self.previous.job_status_list or ()),
                                                                        *added]})
        jobflow = self.jobflow.model_copy(update={"status": previous})
        return _observe(jobflow, owned={job.name: job for job in self.owned}, foreign=self.foreign,
                        first=self.first, now=self.now, probe_results=self.probe_results,
                        results={**self.results, **{r.name: r.result or "" for r in added if r.name}},
                        errors=self.errors, rerun=self.rerun, recorded=self.recorded_phase, seen=self.seen)

    def flow_phase(self, *, creating: Iterable[str] = ()) -> JobFlowPhase:
        """The JobFlow phase, counting the units whose vcjobs are named in ``creating`` as just created."""
        created = set(creating)
        if not created:
            return self.phase
        return _phase(self.jobflow, self.nodes, self.outcomes, valid=not self.errors, creating=created,
                      deadline_exceeded=self.deadline_exceeded, recorded=self.recorded_phase)

    @property
    def rerun_accepted(self) -> bool:
        """A rerun request was accepted by this observation: the one way out of Succeed or Failed."""
        return self.recorded_phase is None and self.previous.state is not None and \
            self.previous.state.phase is not None

    @property
    def succeeded(self) -> bool:
        """The status already records Succeed: the JobFlow is over, and nothing starts any more (a vcjob listed
        without its end, or a spec edited since, cannot make it run again)."""
        return self.recorded_phase is JobFlowPhase.SUCCEED


def observe(jobflow: JobFlow, *, jobs: Iterable[VcJob], now: datetime | None = None,
            probe_results: Mapping[NetworkCheck, CheckResult] | None = None,
            awaited: Seen | None = None) -> Observation:
    """Pair each flow of ``jobflow`` with its vcjobs among ``jobs`` and its records in the previous status, as of
    ``now``; with a rerun request the JobFlow has not handled yet, as if that rerun was accepted
    (:mod:`jobflow_core.dag.reruns`). ``awaited``: what the shell read of the other JobFlows it waits for
    (:func:`jobflow_core.dag.awaits.to_read`). A ``retryPolicy`` is read into each flow's ``retry`` first
    (:func:`~jobflow_core.flows.retries.with_retry_policies`).

    A JobFlow stopped or terminated is seen so until a rerun is accepted (:func:`_shut_down_as_recorded`): the rerun
    is decided on that view, so what the stop aborted counts as failed and runs again with its retries afresh."""
    asked = with_retry_policies(jobflow)
    previous = jobflow.status or JobFlowStatus()
    jobflow = _shut_down_as_recorded(asked, previous)
    owned: dict[str, VcJob] = {}
    foreign: dict[str, VcJob] = {}
    for job in jobs:
        if job.namespace == jobflow.namespace:
            (owned if is_owned_by(job, jobflow) else foreign)[job.name] = job
    counted = dict(previous.rerun.from_attempt or {}) if previous.rerun else {}
    errors = tuple(validate(jobflow))
    results = {job.name: job.result for job in owned.values()
               if isinstance(job, ChildJob) and job.result is not None}  # a child's outputs (flows.children)
    results.update({record.name: record.result for record in previous.job_status_list or ()
                    if record.name and record.result is not None})
    recorded = previous.state.phase if previous.state else None
    observation = _observe(jobflow, owned=owned, foreign=foreign, first=counted, now=now,
                           probe_results=probe_results or {}, results=results, errors=errors, rerun=previous.rerun,
                           recorded=recorded, seen=awaited)
    request = new_request(jobflow)
    if request is None:
        return observation
    if observation.phase is not JobFlowPhase.FAILED or observation.errors or observation.deadline_exceeded \
            or asked.spec.shutdown is not None:
        why = f"nothing run again: the JobFlow is {observation.phase}, and only a Failed JobFlow is rerun"
        if observation.deadline_exceeded:
            why = "nothing run again: its activeDeadlineSeconds passed"
        elif asked.spec.shutdown is not None and observation.phase is JobFlowPhase.FAILED:
            why = (f"nothing run again: spec.shutdown is {asked.spec.shutdown.value}; remove it with the request "
                   "(kubectl jobflow retry does both)")
        return replace(observation, rerun=record(request, accepted=None, previous=previous.rerun, why_not=why))
    accepted = rerun_from(jobflow, request, outcomes=observation.outcomes.of,
                          units={node.name: [(unit.key, unit.current.number if unit.phase is not None else 0,
                                              category_of(unit.phase) is JobCategory.FAILED)
                                             for unit in node.units if not unit.placeholder]
                                 for node in observation.nodes})
    accepted, children = _children_rerun(observation, accepted)
    rerun = record(request, accepted=accepted, previous=previous.rerun, now=now, children=children)
    return _observe(asked, owned=owned, foreign=foreign, first=dict(rerun.from_attempt or {}), now=now,
                    probe_results=probe_results or {}, results=results, errors=errors, rerun=rerun, recorded=None,
                    seen=awaited)


def _children_rerun(observation: Observation, accepted: dict[str, int]) -> tuple[dict[str, int], list[str]]:
    """A rerun's units split: a failed child JobFlow that nothing running again comes before is asked to rerun its
    own failed flows (by its name), not replaced (:mod:`jobflow_core.flows.children`); every other unit runs a new
    attempt (a child downstream of a flow run again is made anew: what it was made from changes)."""
    again = {node.name for node in observation.nodes for unit in node.units if unit.key in accepted}
    flows = {node.name: node.flow for node in observation.nodes}
    asked = []
    for node in observation.nodes:
        if again & ancestors(node.name, flows):
            continue
        for unit in node.units:
            job = unit.job
            if unit.key in accepted and isinstance(job, ChildJob) and category_of(job.phase) is JobCategory.FAILED:
                asked.append(job.name)
                del accepted[unit.key]
    return accepted, asked


def _observe(jobflow: JobFlow, *, owned: Mapping[str, VcJob], foreign: Mapping[str, VcJob],
             first: Mapping[str, int], now: datetime | None, probe_results: Mapping[NetworkCheck, CheckResult],
             results: Mapping[str, str], errors: tuple[SpecError, ...], rerun: Rerun | None,
             recorded: JobFlowPhase | None, seen: Seen | None = None) -> Observation:
    previous = jobflow.status or JobFlowStatus()
    records = {record.name: record for record in previous.job_status_list or () if record.name}
    # A forEach item that Completed is only named in completedJobs (jobflow_core.planning.status): that is its record.
    records.update({name: FlowJobStatus(name=name, state=VcJobPhase.COMPLETED)
                    for name in previous.completed_jobs or () if name not in records})
    conditions = previous.conditions or {}
    reruns = (rerun.child_reruns if rerun else None) or {}

    def unit(flow: Flow, item: Item | None = None, *, placeholder: bool = False) -> FlowView:
        attempts = []
        index = item.index if item else None
        for number in range(1, MAX_ATTEMPTS + 1):
            name = attempt_job_name(jobflow=jobflow.name, flow=flow.name, attempt=number, index=index)
            if number > 1 and name not in owned and name not in records:
                break
            if placeholder:
                attempts.append(Attempt(number, name, None, None, None))
                break
            job, kept = owned.get(name), records.get(name)
            if job is not None and kept is not None and outdated_by_record(job.phase, kept.state):
                job = None  # listed before the status write that recorded its end: the record is newer
            if isinstance(job, ChildJob) and name in reruns and job.accepted_rerun != reruns[name]:
                job, kept = pending_rerun(job), None  # asked to rerun its failed flows, not accepted yet
            attempts.append(Attempt(number, name, job, kept, conditions.get(name)))
        view = FlowView(jobflow=jobflow.name, flow=flow, attempts=tuple(attempts), foreign=None,
                        first=first.get(unit_key(flow.name, item), 1), item=item, placeholder=placeholder)
        wanted = view.next_job_name
        return view if placeholder else replace(view, foreign=None if wanted in owned else foreign.get(wanted))

    spec_flows: dict[str, Flow] = {}
    for flow in jobflow.spec.flows or ():
        spec_flows.setdefault(flow.name, flow)
    nodes = {name: FlowNode(flow, (unit(flow),)) for name, flow in spec_flows.items() if flow.for_each is None}
    params = values(jobflow)
    for name, flow in spec_flows.items():
        if flow.repeat is not None:
            loop = iterate(flow, unit_of=lambda item, flow=flow: unit(flow, item), results=results, params=params)
            nodes[name] = FlowNode(flow, loop.units, items_error=loop.error, done=loop.done, unread=loop.unread)
        elif flow.for_each is not None:  # after the plain flows: the one its items may come from is among them
            expansion = expand(flow, params=params, result_of=lambda target: _source(nodes.get(target), results))
            items = expansion.items
            units = tuple(unit(flow, item) for item in items) if items else (unit(flow, placeholder=True),)
            nodes[name] = FlowNode(flow, units, items=items, items_error=expansion.error)
    flows = tuple(nodes[name] for name in spec_flows)
    rerun_now = recorded is None and previous.state is not None and previous.state.phase is not None
    awaits = settle(jobflow, seen, now=now, forget_ends=rerun_now,
                    since=rerun.accepted_at if rerun is not None else None)
    outcomes = _outcomes(jobflow, flows, probe_results=probe_results, now=now, results=results,
                         awaited={key: outcome_of(entry) for key, entry in awaits.items()})
    exceeded = _deadline_exceeded(jobflow, flows, outcomes, now=now)
    views = tuple(view for node in flows for view in node.units)
    return Observation(
        jobflow=jobflow,
        views=views,
        nodes=flows,
        owned=tuple(owned[name] for name in sorted(owned)),
        foreign=foreign,
        orphans=tuple(foreign[name] for name in sorted(foreign)
                      if foreign[name].metadata.deletion_timestamp is not None
                      and has_record_finalizer(foreign[name])),
        previous=previous,
        errors=errors,
        outcomes=outcomes,
        phase=_phase(jobflow, flows, outcomes, valid=not errors, creating=set(), deadline_exceeded=exceeded,
                     recorded=recorded),
        probe_results=dict(probe_results),
        now=now,
        deadline_exceeded=exceeded,
        rerun=rerun,
        results=dict(results),
        first=dict(first),
        recorded_phase=recorded,
        no_free_slot=_no_free_slot(flows, now=now),
        awaits=awaits,
        seen=seen,
    )


RECORDED_SHUTDOWN: Final = {reason.value: shutdown for shutdown, reason in SHUTDOWN_REASON.items()}
"""The ``state.reason`` of a JobFlow that ended stopped or terminated, and the shutdown it records."""


def _shut_down_as_recorded(jobflow: JobFlow, previous: JobFlowStatus) -> JobFlow:
    """The JobFlow as the planner sees it once it was asked to stop or terminate: its ``spec.shutdown``, else the
    one its status records (Failed, reason ``Stopped`` or ``Terminated``: taking ``spec.shutdown`` away by hand
    undoes nothing; a rerun does), and without retries: nothing a stop aborted, nor anything that ends afterwards,
    runs again."""
    state = previous.state
    recorded = RECORDED_SHUTDOWN.get(state.reason or "") if state and state.phase is JobFlowPhase.FAILED else None
    shutdown = strongest(jobflow.spec.shutdown, recorded)
    if shutdown is None:
        return jobflow
    flows = [flow.model_copy(update={"retry": None}) if flow.retry else flow for flow in jobflow.spec.flows or ()]
    return jobflow.model_copy(update={"spec": jobflow.spec.model_copy(update={"flows": flows, "shutdown": shutdown})})


def _no_free_slot(nodes: Iterable[FlowNode], *, now: datetime | None) -> dict[str, str]:
    """For each ``forEach`` flow with ``parallelism``: the units, in index order, beyond the free slots (the
    limit minus the items whose vcjob runs), and the message they wait with. A unit whose retry backoff has not
    passed takes no slot."""
    held: dict[str, str] = {}
    for node in nodes:
        limit = node.flow.for_each.parallelism if node.flow.for_each else None
        if limit is None:
            continue
        running = sum(unit.running for unit in node.units)
        ready = [unit for unit in node.units if unit.needs_job and not unit.placeholder and not _backing_off(unit, now)]
        message = f"waiting for a free slot: {running} of its items run (parallelism {limit})"
        held.update(dict.fromkeys((unit.next_job_name for unit in ready[max(0, limit - running):]), message))
    return held


def _backing_off(unit: FlowView, now: datetime | None) -> bool:
    if not unit.retrying:
        return False
    when = due(unit.flow, after=unit.current.number, ended=unit.current.ended_at)
    return when is not None and (now is None or now < when)


def _deadline_exceeded(jobflow: JobFlow, nodes: Iterable[FlowNode], outcomes: Outcomes, *,
                       now: datetime | None) -> bool:
    deadline = jobflow_deadline(jobflow)
    if deadline is None or not passed(deadline, now):
        return False
    # Times have one-second precision: a vcjob recorded as ended in the deadline's second ended at or after it.
    return any(outcomes.of.get(node.name) is None or (node.ended_at is not None and node.ended_at >= deadline)
               for node in nodes)


def _ended_child(jobflow: JobFlow, recorded: JobFlowPhase | None) -> bool:
    """A child JobFlow (:mod:`jobflow_core.flows.children`) whose status records its end keeps it while it is
    deleted: its parent reads that phase as its flow's run, and must not take a finished child for one that never
    finished (and make it again) because it was deleted before the parent looked."""
    return PARENT in (jobflow.metadata.labels or {}) and recorded in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED)


def _phase(jobflow: JobFlow, nodes: Iterable[FlowNode], outcomes: Outcomes, *, valid: bool,
           creating: set[str], deadline_exceeded: bool, recorded: JobFlowPhase | None) -> JobFlowPhase:
    return decide_flow_phase(
        deleting=jobflow.metadata.deletion_timestamp is not None and not _ended_child(jobflow, recorded),
        spec_valid=valid,
        deadline_exceeded=deadline_exceeded,
        categories=(_category(node, outcomes, creating=creating) for node in nodes),
        unhandled_failure=outcomes.unhandled_failure,
        fail_fast=jobflow.spec.failure_policy is not FailurePolicy.KEEP_GOING,
        suspended=bool(jobflow.spec.suspend),
        shut_down=jobflow.spec.shutdown is not None,
        recorded=recorded,
    )


def _category(node: FlowNode, outcomes: Outcomes, *, creating: set[str]) -> JobCategory:
    """A flow's category for the phase table: that of its current attempt; a flow being created is pending, one
    waiting for a retry is still active, one that will never run is skipped. A fan-out that has started is
    active until it has an outcome."""
    outcome = outcomes.of.get(node.name)
    if not node.fan_out:
        view = node.only
        if view.next_job_name in creating and view.needs_job:
            return JobCategory.PENDING
        if view.retrying:
            return JobCategory.ACTIVE
        if outcome is FlowOutcome.SKIPPED:
            return JobCategory.SKIPPED
        return category_of(view.phase)
    if outcome is not None:
        return {FlowOutcome.SUCCEEDED: JobCategory.DONE, FlowOutcome.FAILED: JobCategory.FAILED,
                FlowOutcome.SKIPPED: JobCategory.SKIPPED}[outcome]
    if node.phase is not None:
        return JobCategory.ACTIVE
    if any(unit.next_job_name in creating for unit in node.units):
        return JobCategory.PENDING
    return JobCategory.WAITING


def _outcomes(jobflow: JobFlow, nodes: Iterable[FlowNode], *, probe_results: Mapping[NetworkCheck, CheckResult],
              now: datetime | None, results: Mapping[str, str],
              awaited: Mapping[str, FlowOutcome | None]) -> Outcomes:
    fates = {node.name: FlowFate(flow=node.flow, phase=node.phase, job=node.job, needs_job=node.needs_job,
                                 running=node.running, attempts=node.attempts,
                                 status=node.job.status.to_wire() if node.job is not None and node.job.status
                                 else None,
                                 result=_result(node, results), empty=node.empty,
                                 items=_items(node, results) if node.fan_out else None)
             for node in nodes}
    return decide_outcomes(jobflow, fates, probe_results=probe_results, now=now, awaited=awaited)


def _unit_result(view: FlowView, results: Mapping[str, str]) -> str | None:
    """A unit's current result: known, else unknown (None) while its live vcjob's pods can still be read."""
    known = results.get(view.job_name)
    if known is not None:
        return known
    return None if view.job is not None and is_final(view.job.phase) else ""


def _result(node: FlowNode | None, results: Mapping[str, str]) -> str | None:
    """A plain flow's current result (see :func:`_unit_result`); a fan-out has none of its own."""
    if node is None or node.fan_out:
        return ""
    return _unit_result(node.only, results)


def _source(node: FlowNode | None, results: Mapping[str, str]) -> str | None:
    """The result a ``forEach`` reads its items from: None until the target ended and its result is read; a
    target whose vcjob is gone with no result recorded gives ``""`` (no list), which blocks the fan-out."""
    if node is None or node.fan_out or not is_final(node.phase):
        return None
    known = results.get(node.only.job_name)
    return known if known is not None or node.only.job is not None else ""


def _items(node: FlowNode, results: Mapping[str, str]) -> list[tuple[FlowView, str | None]]:
    """Each item's unit and result, for conditions on a fan-out."""
    return [(unit, _unit_result(unit, results)) for unit in node.units if not unit.placeholder]
