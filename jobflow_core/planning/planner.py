"""The planner: one observed JobFlow in, the list of actions that move it forward out.

``plan_observation`` is a pure function in the style of a Metacontroller hook: it reads no clock, talks to no API
server, draws no random numbers and changes none of its inputs. Planning the same inputs twice gives the same
plan, so the shell may re-plan whenever anything happens. The shell's part, per attempt:

1. list the vcjobs and :func:`~jobflow_core.planning.observation.observe` (the spec is validated once, there);
2. read what :func:`~jobflow_core.planning.needs.needs` says, stage by stage: the probes' and results' answers
   (``observation.with_answers``), then the JobTemplates and memoized runs (usually none), then the queues;
3. :func:`plan_observation`, then carry out ``Plan.actions`` in order, deciding nothing of its own.

:func:`plan` does 1 to 3 for callers that have everything at hand (the command line, tests).

Where each decision lives: the JobFlow phase in :mod:`jobflow_core.vocabulary.phase` (one table); whether each flow
starts, waits or is blocked in :mod:`jobflow_core.planning.starts` (one table); the status in
:mod:`jobflow_core.planning.status`; the events in :mod:`jobflow_core.vocabulary.kube_events`. This module only puts
them together:

* JobFlow-level blockers come first (why it failed, from :mod:`jobflow_core.planning.failures`), then each blocked
  flow's reason, grouped in the order of the start table; the first blocker's reason is ``status.state.reason``, all
  messages joined its ``message``;
* the actions, in the order the shell carries them out: :class:`Relabel` (the labels by which the end of another
  JobFlow it waits for finds this one, :mod:`jobflow_core.dag.awaits`), :class:`UpdateTemplate` with the runs that
  ended (counted
  in their JobTemplates' statistics before the status records the end, so none is lost), :class:`WriteStatus`
  (only when the status changed, with the events of what is new), :class:`Create` (each with upstream's
  ``Created`` event, recorded once the create succeeded), :class:`Abort` (a vcjob past the deadline or its flow's
  timeout), :class:`Delete` (``jobRetainPolicy: delete`` once the JobFlow is Succeed), :class:`Release` (vcjobs
  being deleted whose record is now in the status, and orphans), and :class:`UpdateTemplate` with the vcjobs that
  came or went (JobTemplates' ``jobDependsOnList``).

**A vcjob is created, deleted, or let go to its deletion, only after the status write that records it**
(:class:`Create`, :class:`Delete` and :class:`Release` come after :class:`WriteStatus`, which the shell guards with
the resourceVersion it read; when the write is lost, nothing after it happens). The status a plan writes names the
vcjobs it is about to create, so that write is the guard of the creates too: a plan made from a JobFlow older than
the record of a vcjob's end cannot write, hence cannot create that vcjob again. When the status does not change,
the shell makes sure its JobFlow read is newer than its vcjob list before it creates anything
(``handlers/jobflows.py``; docs/architecture.md, "A finished step never runs twice").
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from jobflow_core.dag.awaits import declared, describe, is_key, outcome_of, relabel, wait_labels
from jobflow_core.dag.probes import DEFAULT_RECHECK_SECONDS, CheckResult, NetworkCheck
from jobflow_core.flows.children import (ChildJob, output_targets, outputs_of, rerun_patch, shutdown_patch,
                                         suspend_patch)
from jobflow_core.flows.deadlines import attempt_deadline, passed
from jobflow_core.flows.deadlines import recheck_seconds as deadline_recheck
from jobflow_core.flows.gates import Answer
from jobflow_core.flows.memo import Entry, newly_memoized
from jobflow_core.flows.units import FlowView
from jobflow_core.flows.vcjobs import abort_command
from jobflow_core.insight.eta import Forecast, estimates_of, forecast
from jobflow_core.insight.template_stats import EndedJob, expected_seconds, newly_ended, record_runs
from jobflow_core.models import (
    ApprovalRecord,
    AwaitedJobFlow,
    Estimate,
    Flow,
    FlowState,
    JobFlow,
    JobFlowPhase,
    JobFlowStatus,
    JobTemplate,
    JobTemplateStatus,
    QueueStatus,
    Rerun,
    RetainPolicy,
    Shutdown,
    SkippedFlow,
    VcJob,
    VcJobPhase,
    WaitingFlow,
)
from jobflow_core.planning import notifications
from jobflow_core.planning.failures import why_failed
from jobflow_core.planning.observation import Observation, observe
from jobflow_core.planning.starts import START_RULES, FlowDecision, Verdict, decide_all
from jobflow_core.planning.status import build_status
from jobflow_core.planning.template_status import template_status_with
from jobflow_core.queueing import deadline
from jobflow_core.queueing.line import WAITING, QueueView
from jobflow_core.queueing.status import consult
from jobflow_core.vocabulary.kube_events import (SHUTDOWN_REASON, Event, EventType, Reason, child_created, ended_by,
                                                 job_created, phase_changed)
from jobflow_core.vocabulary.api import RERUN
from jobflow_core.vocabulary.naming import has_record_finalizer, template_name, template_of

if TYPE_CHECKING:
    from jobflow_core.models import JobFlowTemplate
from jobflow_core.vocabulary.phase import JobCategory, category_of, is_final


@dataclass(frozen=True)
class Create:
    """POST the vcjob ``manifest`` of ``flow``; once it is created, record ``event``."""

    flow: str
    manifest: dict[str, Any]
    event: Event
    ready_since: datetime | None = None
    """When the last of the flow's targets ended (for the dependency-latency metric); None: no targets, or not
    known."""

    @property
    def job_name(self) -> str:
        return self.manifest["metadata"]["name"]


@dataclass(frozen=True)
class Abort:
    """Create the Volcano ``command`` that aborts vcjob ``job_name`` (it then ends Aborted); record ``event``."""

    job_name: str
    command: dict[str, Any]
    event: Event


@dataclass(frozen=True)
class Delete:
    """DELETE the vcjob ``job_name`` of the JobFlow's namespace (a child JobFlow, with ``child``)."""

    job_name: str
    child: bool = False


@dataclass(frozen=True)
class PatchChild:
    """Merge-patch the child JobFlow ``name`` (:mod:`jobflow_core.flows.children`): stop it where a vcjob is aborted,
    suspend or resume it with its parent, ask it to rerun its failed flows; then record ``event`` (if any)."""

    name: str
    patch: dict[str, Any]
    event: Event | None = None


@dataclass(frozen=True)
class Relabel:
    """Merge-patch the JobFlow's own ``metadata.labels`` with ``labels`` (a None value removes one), guarded by the
    resourceVersion read: the labels by which another JobFlow's end finds this one (:mod:`jobflow_core.dag.awaits`).
    First of all actions: the status write that follows is guarded by the patched JobFlow's resourceVersion."""

    labels: dict[str, str | None]


@dataclass(frozen=True)
class UpdateTemplate:
    """A change to JobTemplate ``name``'s status, applied to whatever that status is when written (on a fresh read
    after a lost race; changes of several reconciles to one template may be written together): ``runs`` (vcjobs
    that ended) counted in its statistics (:mod:`jobflow_core.insight.template_stats`), each once per UID; vcjobs just
    created (``added``) and deleted now (``removed``) applied to ``jobDependsOnList``. The list change is applied to the
    list as stored (no LIST of the template's vcjobs: with N JobFlows sharing a template, that would cost N objects
    per vcjob created)."""

    name: str
    runs: tuple[EndedJob, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()

    def apply(self, template: JobTemplate) -> JobTemplateStatus:
        status = record_runs(template.status, self.runs) if self.runs else template.status
        if not (self.added or self.removed):
            return status or JobTemplateStatus()
        return template_status_with(template.model_copy(update={"status": status}), added=self.added,
                                    removed=self.removed)


@dataclass(frozen=True)
class WriteStatus:
    """PUT ``status`` (with the resourceVersion read), then record ``events``."""

    status: JobFlowStatus
    events: tuple[Event, ...]
    rerun_accepted: bool = False
    """The status records a rerun accepted just now: the one write that may take an ended JobFlow's phase back
    (:func:`jobflow_core.vocabulary.phase.regresses`)."""


@dataclass(frozen=True)
class Release:
    """Take our finalizer off ``job``, which ended or is being deleted: its record is safe in the written status."""

    job: VcJob


@dataclass(frozen=True)
class Memoize:
    """Store ``entry`` under ``key`` in the namespace's cache ConfigMap (:mod:`jobflow_core.flows.memo`): a memoized
    flow's vcjob Completed. Carried out before the status write that records its end, so none is lost."""

    key: str
    entry: Entry


Action = Create | Abort | Delete | UpdateTemplate | WriteStatus | Release | Memoize | PatchChild | Relabel
A = TypeVar("A", Create, Abort, Delete, UpdateTemplate, WriteStatus, Release, Memoize, PatchChild, Relabel)


@dataclass(frozen=True)
class Blocker:
    """Why the JobFlow cannot go on as it should: a reason word and a message saying what to do."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...]
    """What the shell should do, in this order."""
    status: JobFlowStatus
    """The status the JobFlow should have (written only when it changed: see :class:`WriteStatus`)."""
    decisions: tuple[FlowDecision, ...]
    """For each flow that needs a vcjob, what happens to it and why."""

    def of(self, kind: type[A]) -> list[A]:
        """The actions of one kind, in order."""
        return [action for action in self.actions if isinstance(action, kind)]

    @property
    def creates(self) -> list[Create]:
        return self.of(Create)

    @property
    def deletes(self) -> list[str]:
        return [action.job_name for action in self.of(Delete)]

    @property
    def status_changed(self) -> bool:
        return bool(self.of(WriteStatus))

    @property
    def events(self) -> list[Event]:
        """The events recorded with the status write (creation events come with each :class:`Create`)."""
        return [event for write in self.of(WriteStatus) for event in write.events]


def plan(
    jobflow: JobFlow, /, *, templates: Mapping[str, JobTemplate], jobs: Sequence[VcJob], now: datetime,
    probe_results: Mapping[NetworkCheck, CheckResult] | None = None,
    recheck_seconds: int = DEFAULT_RECHECK_SECONDS,
    rejections: Mapping[str, str] | None = None, notify: bool = False, memo: Mapping[str, Entry] | None = None,
    queues: Mapping[str, QueueView] | None = None, answers: Mapping[str, Answer] | None = None,
    flow_templates: Mapping[str, "JobFlowTemplate"] | None = None,
) -> Plan:
    """Observe (as of ``now``) and plan in one call (see :func:`plan_observation` for the arguments)."""
    return plan_observation(observe(jobflow, jobs=jobs, now=now, probe_results=probe_results), templates=templates,
                            recheck_seconds=recheck_seconds, rejections=rejections, notify=notify, memo=memo,
                            queues=queues, answers=answers, flow_templates=flow_templates)


def plan_observation(
    observation: Observation, /, *, templates: Mapping[str, JobTemplate],
    recheck_seconds: int = DEFAULT_RECHECK_SECONDS, rejections: Mapping[str, str] | None = None,
    notify: bool = False, memo: Mapping[str, Entry] | None = None,
    queues: Mapping[str, QueueView] | None = None, answers: Mapping[str, Answer] | None = None,
    flow_templates: Mapping[str, "JobFlowTemplate"] | None = None,
) -> Plan:
    """Plan one step of the observed JobFlow.

    ``templates`` maps JobTemplate names (in the JobFlow's namespace) to templates; it needs at least those
    :func:`~jobflow_core.planning.needs.needs` names, and a name it lacks counts as a JobTemplate that does
    not exist. Time enters only through ``observation.now`` (retry backoffs), so planning the same observation
    twice gives the same plan. A flow still waiting for a probe tells, in
    ``waitingFlows[].recheckSeconds``, how soon to look again. ``rejections`` maps flows whose vcjob the API
    server refused (Volcano's webhook) to its message: those wait, and say why, until the template or the cluster
    is fixed. With ``notify`` (the shell has a CloudEvents sink), the status also records a notification for each
    transition it records (:mod:`jobflow_core.planning.notifications`). ``memo``: the namespace's memoized runs, when a
    memoized flow may start (:mod:`jobflow_core.flows.memo`); a flow that reuses one is recorded Completed (``reason:
    Cached``): its record is added to the observation and the start table runs again from there (no second planning
    pass), so what waits for it starts in the same plan. ``queues``
    are the Volcano queues the flows that would start join, as the shell read them (:mod:`jobflow_core.queueing.line`);
    without them nothing is held back. ``answers``: an answer to an approval gate the shell offers from a CloudEvent
    it accepted, by gate (:mod:`jobflow_core.flows.gates`); a person's answers are read from the JobFlow itself.
    ``flow_templates``: the JobFlowTemplates of the child flows that may start (:mod:`jobflow_core.flows.children`),
    as :func:`~jobflow_core.planning.starts.flow_templates_needed` names them.
    """
    previous = observation.jobflow.status  # as the API server has it: what "changed" and every event are said against
    early = _estimates(observation, templates) if observation.jobflow.spec.deadline else []
    at_risk = deadline.look(observation, estimates=early, queues=queues or {}, templates=templates)
    queues = deadline.steer(queues, at_risk) if queues else queues
    recorded: list[Event] = []
    approvals: list[ApprovalRecord] = []
    while True:
        decisions = decide_all(observation, templates=templates, rejections=rejections, memo=memo, queues=queues,
                               answers=answers, flow_templates=flow_templates)
        hits = [decision for decision in decisions if decision.resolution is not None]
        if not hits or observation.now is None:
            break
        # A flow that ends without a vcjob (a memoized run reused, a gate answered) is a record, added before the
        # start table runs again; it is written before anything that rests on it is created (the status write comes
        # before the creates).
        observation = observation.with_records([d.resolution.record for d in hits if d.resolution])
        approvals += [d.resolution.approval for d in hits if d.resolution and d.resolution.approval]
        recorded += [Event(EventType.WARNING if d.reason in WARNED else EventType.NORMAL, d.reason or Reason.CACHED,
                           d.message) for d in hits]
    starting = [decision for decision in decisions if decision.verdict is Verdict.START]
    creating = [decision.view.next_job_name for decision in starting]
    phase = observation.flow_phase(creating=creating)
    queue = consult(observation, decisions, queues=queues or {}, written=previous.queue if previous else None)
    blockers = _blockers(observation, decisions, unschedulable=queue.unschedulable)
    held = queue.held
    state = FlowState(
        phase=phase,
        reason=blockers[0].reason if blockers else (Reason.WAITING_FOR_QUEUE if held else None),
        message="; ".join(blocker.message for blocker in blockers) or (held.message if held else None),
    )
    skipped = list({decision.view.name: SkippedFlow(name=decision.view.name, job_name=decision.view.job_name,
                                                    reason=decision.reason, message=decision.message)
                    for decision in reversed(decisions) if decision.verdict is Verdict.SKIPPED}.values())[::-1]
    estimates = _estimates(observation, templates)
    expected = forecast(observation.jobflow, {node.name: node for node in observation.nodes},
                        observation.outcomes.of, estimates_of(estimates))
    if any(outcome_of(entry) is None for entry in observation.awaits.values()):
        expected = replace(expected, completion=None, critical_path=())  # another JobFlow's end: nobody's forecast
    status = build_status(observation, creating=creating, state=state,
                          waiting=_waiting_flows(decisions, recheck_seconds=recheck_seconds, expected=expected,
                                                 awaits=observation.awaits),
                          skipped=skipped, recheck_seconds=pending_recheck(observation), estimates=estimates,
                          forecast=expected)
    ended = phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED)
    if ended and at_risk is not None:  # judged again as it ends: Met or Missed
        at_risk = deadline.look(observation, estimates=estimates, queues={}, templates=templates,
                                ended=_ended_at(observation, status), succeeded=phase is JobFlowPhase.SUCCEED)
    judged = deadline.deadline_status(at_risk, previous.deadline if previous else None, now=observation.now)
    status = status.model_copy(update={"queue": _with_seconds(queue.status, observation, expected),
                                       "deadline": judged, "approvals": [
        *(observation.previous.approvals or ()), *approvals] or None,
        "outputs": _outputs(observation) if phase is JobFlowPhase.SUCCEED else None,
        "awaited_job_flows": list(observation.awaits.values()) or None,
        "end_timestamp": _ended_at(observation, status) if ended else None})
    status = notifications.record(observation.jobflow, status, now=observation.now, enabled=notify)
    changed = status.to_wire() != (previous.to_wire() if previous else {})
    deletes = _deletes(observation, phase=phase)
    children = {job.name for job in observation.owned if isinstance(job, ChildJob)}
    # Our finalizer has done its job once the vcjob's end is in the status written here (or already there):
    # being deleted, or ended. Released at once, it never holds a namespace that is deleted while no engine runs.
    releases = [*(job for job in observation.owned if has_record_finalizer(job)
                  and (job.metadata.deletion_timestamp is not None or is_final(job.phase))),
                *observation.orphans]
    added: dict[str, list[str]] = {}
    for decision in starting:
        if decision.manifest is not None and decision.view.flow.job_flow is None:
            added.setdefault(template_name(decision.view.flow), []).append(decision.view.next_job_name)
    removed: dict[str, list[str]] = {}
    for job in observation.owned:
        if job.name in deletes and (name := template_of(job)):
            removed.setdefault(name, []).append(job.name)
    creates = tuple(Create(decision.view.name, decision.manifest, _created(decision.view),
                           _ready_since(observation, decision.view.flow))
                    for decision in starting if decision.manifest is not None)
    events = (*recorded, *_events(observation.jobflow, phase=phase, state=state, skipped=skipped,
                                rerun=observation.rerun, blocker=blockers[0] if blockers else None),
              *queue.events, *deadline.deadline_events(previous.deadline if previous else None, judged))
    write = (WriteStatus(status, events, rerun_accepted=observation.rerun_accepted),) if changed else ()
    labels = relabel(observation.jobflow, {} if observation.starts_nothing or phase in (
        JobFlowPhase.SUCCEED, JobFlowPhase.FAILED) else wait_labels(observation.jobflow, observation.awaits))
    return Plan(
        actions=(
            *((Relabel(labels),) if labels else ()),
            *(UpdateTemplate(template, runs=tuple(runs)) for template, runs in sorted(newly_ended(observation).items())),
            *(Memoize(key, entry) for key, entry in newly_memoized(observation)),
            *write,
            *creates,
            *_aborts(observation),
            *_cascades(observation),
            *(Delete(name, child=name in children) for name in deletes),
            *(Release(job) for job in releases),
            *(UpdateTemplate(name, added=tuple(added.get(name, ())), removed=tuple(removed.get(name, ())))
              for name in sorted(added.keys() | removed.keys())),
        ),
        status=status,
        decisions=tuple(decisions),
    )


def _created(view: FlowView) -> Event:
    """The event of a create: upstream's for a vcjob, ours for a child JobFlow."""
    child = view.flow.job_flow
    return job_created(view.next_job_name) if child is None else child_created(view.next_job_name,
                                                                               template=child.template)


WARNED = frozenset({Reason.REJECTED, Reason.APPROVAL_TIMEOUT})
"""Reasons of flows recorded without a vcjob whose event is a Warning (a gate that did not pass)."""


def _ready_since(observation: Observation, flow: Flow) -> datetime | None:
    """When the last target of ``flow`` ended, if it has targets and every end is known."""
    targets = flow.depends_on.targets if flow.depends_on and flow.depends_on.targets else []
    ends = [observation.node(target).ended_at for target in targets]
    return max(ends) if ends and None not in ends else None  # type: ignore[type-var]


def _blockers(observation: Observation, decisions: Sequence[FlowDecision], *,
              unschedulable: list[str]) -> list[Blocker]:
    """JobFlow-level failures first, then the blocked flows, grouped by reason in the order of the start table (a
    vcjob already created that its queue can no longer ever hold counts with the flows never started for that)."""
    failure = why_failed(observation)
    blockers = [Blocker(failure.reason, failure.message)] if failure else []
    stuck = unschedulable
    by_reason: dict[Reason, list[str]] = {}
    for rule in START_RULES:
        if rule.verdict is Verdict.BLOCKED and rule.reason is not None:
            messages = by_reason.setdefault(rule.reason, [*stuck] if rule.reason is Reason.UNSCHEDULABLE else [])
            messages.extend(d.message for d in decisions if d.rule is rule)
    # A JobFlow-wide message (a whole-flow stage that never fits) is the same for each of its flows: said once.
    blockers += [Blocker(reason, "; ".join(dict.fromkeys(messages))) for reason, messages in by_reason.items()
                 if messages]
    return blockers


ENDING = frozenset({VcJobPhase.ABORTING, VcJobPhase.TERMINATING, VcJobPhase.COMPLETING})
"""Phases of a vcjob Volcano is already bringing to an end: aborting it again would change nothing."""


def _aborts(observation: Observation) -> list[Abort | PatchChild]:
    """Abort every vcjob that still runs once the deadline passed or the JobFlow was terminated (stopped: but the
    ``finally`` flows'), and each attempt that outran its timeout. Level-triggered: asked again on every plan while
    the vcjob has not ended (Volcano's Command is named after the vcjob, so a repeat changes nothing)."""
    aborts: list[Abort | PatchChild] = []
    for view in observation.views:
        job = view.job
        if job is None or category_of(job.phase) not in (JobCategory.PENDING, JobCategory.ACTIVE) \
                or job.phase in ENDING:
            continue
        if observation.deadline_exceeded:
            seconds = observation.jobflow.spec.active_deadline_seconds
            reason, message = Reason.DEADLINE_EXCEEDED, f"the JobFlow's activeDeadlineSeconds ({seconds}) passed"
        elif observation.shutdown is Shutdown.TERMINATE or (observation.shutdown is Shutdown.STOP
                                                            and not view.flow.final):
            reason = SHUTDOWN_REASON[observation.shutdown]
            message = f"the JobFlow was {ended_by(observation.shutdown)} (spec.shutdown: {observation.shutdown.value})"
        elif passed(attempt_deadline(view.flow, job), observation.now):
            reason, message = Reason.TIMEOUT, f"it ran longer than timeoutSeconds ({view.flow.timeout_seconds})"
        else:
            continue
        if isinstance(job, ChildJob):
            shutdown = Shutdown.TERMINATE if observation.shutdown is Shutdown.TERMINATE else Shutdown.STOP
            if job.shutdown not in (shutdown, Shutdown.TERMINATE):
                event = Event(EventType.WARNING, reason, f'stopping child JobFlow "{job.name}" of flow "{view.name}": '
                              f"{message}")
                aborts.append(PatchChild(job.name, shutdown_patch(shutdown), event))
            continue
        event = Event(EventType.WARNING, reason, f'aborting vcjob "{job.name}" of flow "{view.name}": {message}')
        aborts.append(Abort(job.name, abort_command(job, reason=reason, message=message), event))
    return aborts


def _cascades(observation: Observation) -> list[PatchChild]:
    """What the parent's state asks of its live children (:mod:`jobflow_core.flows.children`): a suspended parent
    suspends the children that run, a resumed one resumes those it suspended; a failed child a rerun named is asked
    to rerun its failed flows, until it has taken the request. Level-triggered: asked again until it holds."""
    patches = []
    suspend = bool(observation.jobflow.spec.suspend) and observation.shutdown is None
    asked = (observation.rerun.child_reruns if observation.rerun else None) or {}
    for job in observation.owned:
        if not isinstance(job, ChildJob) or job.metadata.deletion_timestamp is not None:
            continue
        if asked.get(job.name) and job.accepted_rerun != asked[job.name] \
                and (job.metadata.annotations or {}).get(RERUN) != asked[job.name]:
            patches.append(PatchChild(job.name, rerun_patch(asked[job.name])))
        if is_final(job.phase):
            continue
        if suspend and not job.suspended:
            patches.append(PatchChild(job.name, suspend_patch(True)))
        elif not suspend and job.suspended_by_parent:
            patches.append(PatchChild(job.name, suspend_patch(False)))
    return patches


def _ended_at(observation: Observation, status: JobFlowStatus) -> datetime | None:
    """``status.endTimestamp`` of an ended JobFlow: as recorded, else its records' last end, else now."""
    previous = observation.previous.end_timestamp
    if previous is not None and observation.previous.state and observation.previous.state.phase in (
            JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
        return previous
    ends = [record.end_timestamp for record in status.job_status_list or () if record.end_timestamp is not None]
    return max(ends, default=observation.now)


def _outputs(observation: Observation) -> dict[str, str] | None:
    """``status.outputs`` of a JobFlow that succeeded (:func:`jobflow_core.flows.children.outputs_of`)."""
    if not observation.jobflow.spec.outputs:
        return None
    outcomes = observation.outcomes
    found, _ = outputs_of(observation.jobflow, {target: outcomes.variables(target)
                                                for target in output_targets(observation.jobflow)})
    return found


def pending_recheck(observation: Observation) -> int | None:
    """How often to look again while a deadline or timeout has not run out yet (:mod:`jobflow_core.flows.deadlines`)."""
    clocks = []
    spec = observation.jobflow.spec
    if spec.active_deadline_seconds and not observation.deadline_exceeded and \
            observation.phase not in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
        clocks.append(spec.active_deadline_seconds)
    gates = {view.name for view in observation.candidates if view.flow.approval}  # those that may still open
    for view in observation.views:
        if view.flow.timeout_seconds and view.job is not None and not is_final(view.job.phase):
            clocks.append(view.flow.timeout_seconds)
        approval = view.flow.approval
        if approval and approval.timeout_seconds and view.name in gates:
            clocks.append(approval.timeout_seconds)
        probe = view.flow.depends_on.probe if view.flow.depends_on else None
        readiness = observation.readiness.get(view.name)
        if probe and probe.timeout_seconds and readiness is not None and readiness.probing:
            clocks.append(probe.timeout_seconds)
    for key, dependency in declared(observation.jobflow).items():  # a JobFlow waited for (jobflow_core.dag.awaits)
        entry = observation.awaits.get(key)
        if dependency.timeout_seconds and entry is not None and entry.phase is None and entry.reason is None:
            clocks.append(dependency.timeout_seconds)
    steering = deadline.pending(observation.jobflow, now=observation.now, phase=observation.phase)
    return min([*(deadline_recheck(seconds) for seconds in clocks), *([steering] if steering else [])], default=None)


def _with_seconds(queue: QueueStatus | None, observation: Observation, expected: Forecast) -> QueueStatus | None:
    """``status.queue`` with, while it waits, how long the JobFlow is expected to run once started: its forecast
    (without a clock: the same at every plan) from its creation (:mod:`jobflow_core.queueing.outlook`)."""
    created = observation.jobflow.metadata.creation_timestamp
    if queue is None or queue.state != WAITING or expected.completion is None or created is None:
        return queue
    return queue.model_copy(update={"expected_seconds": max(0, int((expected.completion - created).total_seconds()))})


def _estimates(observation: Observation, templates: Mapping[str, JobTemplate]) -> list[Estimate]:
    """``status.estimates``: those recorded, plus, for flows without one whose JobTemplate was read, its median
    run time (a template that never ran: unknown, recorded without seconds)."""
    entries = list(observation.previous.estimates or ())
    for name in observation.estimates_needed():
        template = templates.get(template_name(observation.node(name).flow))
        if template is not None:
            entries.append(Estimate(flow=name, seconds=expected_seconds(template.status)))
    return entries


def _waiting_flows(decisions: Sequence[FlowDecision], *, recheck_seconds: int, expected: Forecast,
                   awaits: Mapping[str, AwaitedJobFlow]) -> list[WaitingFlow]:
    """Flows that never had a vcjob and do not start now (nor are skipped): what they wait for, and why (of the
    other JobFlows they wait for, what each is bound to: :mod:`jobflow_core.dag.awaits`)."""
    waiting: dict[str, WaitingFlow] = {}
    counts: dict[str, int] = {}
    for decision in decisions:
        view = decision.view
        if (view.phase is not None and not view.retrying) or decision.verdict in (Verdict.START, Verdict.SKIPPED):
            continue
        counts[view.name] = counts.get(view.name, 0) + 1
        if view.name in waiting:  # items of one forEach flow: the first speaks for all (counted below)
            continue
        probing = decision.verdict is Verdict.WAIT and decision.readiness.probing
        message = f"{decision.message} (checked again every {recheck_seconds}s)" if probing else decision.message
        keys = [key for key in decision.readiness.waiting_for if is_key(key)]
        if keys and len(keys) == len(decision.readiness.waiting_for) and message == decision.readiness.message:
            message = describe(awaits, keys)  # only other JobFlows: what each is bound to, in words
        elif keys:
            message = f"{message} ({describe(awaits, keys)})"
        waiting[view.name] = WaitingFlow(
            name=view.name,
            job_name=view.next_job_name,
            waiting_for=list(decision.readiness.waiting_for) or None,
            message=message,
            recheck_seconds=decision.recheck_seconds or (recheck_seconds if probing else None),
            expected_start=expected.starts.get(view.name) if _expected_to_start(decision) else None,
        )
    return [entry.model_copy(update={"message": f"{counts[name]} items wait; the first: {entry.message}"})
            if counts[name] > 1 else entry for name, entry in waiting.items()]


def _expected_to_start(decision: FlowDecision) -> bool:
    """Whether a waiting flow has an expected start: not when it waits for a person (an open approval gate's
    targets are ready; when someone answers is nobody's forecast, and "any moment now" would mislead)."""
    if decision.verdict is not Verdict.WAIT or any(is_key(key) for key in decision.readiness.waiting_for):
        return False  # nor when it waits for another JobFlow (jobflow_core.dag.awaits), whose end nobody forecasts
    return decision.view.flow.approval is None or not decision.readiness.ready


def _deletes(observation: Observation, *, phase: JobFlowPhase) -> list[str]:
    policy = observation.jobflow.spec.job_retain_policy
    if policy is RetainPolicy.DELETE and phase is JobFlowPhase.SUCCEED:
        return [job.name for job in observation.owned]
    return []


def _events(jobflow: JobFlow, *, phase: JobFlowPhase, state: FlowState, skipped: Sequence[SkippedFlow],
            rerun: Rerun | None, blocker: Blocker | None) -> list[Event]:
    """Events for what is new compared with the previous status, so that re-planning never repeats one."""
    before = (jobflow.status.state if jobflow.status else None) or FlowState()
    skipped_before = {flow.name for flow in (jobflow.status.skipped_flows if jobflow.status else None) or ()}
    events = [Event(EventType.NORMAL, Reason(flow.reason or Reason.DEPENDENCY_NOT_MET),
                    f'flow "{flow.name}" skipped: {flow.message}')
              for flow in skipped if flow.name not in skipped_before]
    rerun_before = jobflow.status.rerun if jobflow.status else None
    if rerun is not None and rerun != rerun_before:
        events.append(Event(EventType.NORMAL, Reason.RERUN, f"rerun request {rerun.id}: {rerun.message}"))
    if before.phase != phase:
        events.append(phase_changed(jobflow=jobflow.name, old=before.phase, new=phase))
    if blocker and (blocker.reason, state.message) != (before.reason, before.message):
        events.append(Event(EventType.WARNING, blocker.reason, state.message or blocker.message))
    return events
