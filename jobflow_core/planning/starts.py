"""When a flow starts: one ordered table of rules, the first that holds decides.

Every flow that still needs a vcjob (none yet, or one that vanished before it finished) is put to
:data:`START_RULES`, top to bottom, the way :data:`jobflow_core.vocabulary.phase.FLOW_PHASE_RULES` decides the JobFlow
phase. The first rule that holds gives the flow's :class:`Verdict` and, for a blocker, the reason word that the status
and a Warning event carry:

======================================================================  ========  ====================
when                                                                    verdict   reason
======================================================================  ========  ====================
the JobFlow is being deleted, or its spec is invalid                    held
its deadline passed (:mod:`jobflow_core.flows.deadlines`)                     held
the JobFlow failed fast (an unhandled failure) or was stopped           held
(``spec.shutdown: Stop``), unless the flow is ``finally``; it was
terminated (``spec.shutdown: Terminate``)
its dependencies can no longer be met (:mod:`jobflow_core.dag.skips`)       skipped  DependencyNotMet
its ``when`` condition is false (:mod:`jobflow_core.flows.conditions`)         skipped  ConditionFalse
the JobFlow is suspended (``spec.suspend``), unless it was stopped     held
and the flow is ``finally``
its next attempt waits out the retry backoff (:mod:`jobflow_core.flows.retries`) wait
its probe can never pass as written (a task its target does not have)   blocked   ProbeTaskNotFound
its ``when`` condition cannot be evaluated                              blocked   ConditionError
its targets are not ready (not Completed, or a probe has not passed)    wait
it is an approval gate (:mod:`jobflow_core.flows.gates`), approved      recorded  Approved
it is an approval gate, rejected                                        recorded  Rejected
it is an approval gate whose ``timeoutSeconds`` passed                  recorded  ApprovalTimeout
it is an approval gate without an answer                                wait
the results its patch reads are not known yet (:mod:`jobflow_core.flows.outputs`) wait
its patch cannot take its targets' results (a missing key, too long)    blocked   InvalidResult
its items are not known yet (a ``forEach`` over a result not read yet)  wait
its items cannot be worked out (:mod:`jobflow_core.flows.items`)              blocked  InvalidItems
its ``forEach`` already runs ``parallelism`` items                      wait
a vcjob that this JobFlow does not control holds its vcjob name         blocked   JobNameConflict
the JobFlow already succeeded (its spec was edited since)               held
its JobTemplate does not exist                                          blocked   TemplateNotFound
its JobTemplate, with the flow's patch, would make an invalid vcjob     blocked   InvalidTemplate
its ``memoize.key`` cannot be evaluated (:mod:`jobflow_core.flows.memo`)      blocked  MemoKeyError
a Completed run of its memoize key is recent enough                     recorded  Cached
the API server refused its vcjob (e.g. Volcano's webhook)               blocked   JobRejected
its gang asks more than its Volcano queue can ever hold                 blocked   Unschedulable
its JobFlow has not started, wants whole-flow admission, and a stage    blocked   Unschedulable
of it asks more than its queue can ever hold (then not in line)
its JobFlow has not started and its queue has no room for it yet, or   wait
its JobFlow started and at-risk JobFlows that overtook it hold the queue
(:mod:`jobflow_core.queueing.line`: started JobFlows and older ones first, at-risk deadlines ahead)
otherwise                                                               start
======================================================================  ========  ====================

The rules above the JobTemplate ones (:data:`READINESS_RULES`) need nothing but the observation; only a flow
that passes them all needs its JobTemplate read (:func:`templates_needed`), so the shell fetches templates only
for flows that are about to start. A new rule (a condition, a retry, a timeout) is a new row here plus its tests.
"""

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

from jobflow_core.dag.dependencies import Readiness
from jobflow_core.dag.graph import flow_graph
from jobflow_core.dag.outcomes import unread
from jobflow_core.flows.children import child_manifest
from jobflow_core.flows.deadlines import passed
from jobflow_core.flows.deadlines import recheck_seconds as deadline_recheck
from jobflow_core.flows.gates import (Answer, describe, offered_for, opened_at, record_of, timeout_answer, timeout_at,
                                      waiting_message)
from jobflow_core.flows.memo import Entry, cached_record, declared_key, key_value, lookup, spec_key
from jobflow_core.flows.outputs import flow_references, referenced_targets, resolve, results_read
from jobflow_core.flows.parameters import values
from jobflow_core.flows.retries import delay_seconds, due, max_attempts, recheck_seconds
from jobflow_core.flows.units import FlowView
from jobflow_core.flows.vcjobs import build_job
from jobflow_core.models import (ApprovalDecision, ApprovalRecord, Flow, FlowJobStatus, JobSpec, JobTemplate,
                                 format_time)
from jobflow_core.planning.observation import Observation
from jobflow_core.queueing.line import (RECHECK_SECONDS, Admission, QueueView, first_stages_admission, never_fits,
                                   queue_of)
from jobflow_core.validation.children import child_errors
from jobflow_core.validation.jobflows import SpecError
from jobflow_core.validation.jobtemplates import validate_template
from jobflow_core.vocabulary import resources
from jobflow_core.vocabulary.api import MEMO_KEY
from jobflow_core.vocabulary.kube_events import Reason, ended_by
from jobflow_core.vocabulary.naming import template_name

if TYPE_CHECKING:
    from jobflow_core.models import JobFlowTemplate


class Verdict(StrEnum):
    HELD = "held"
    """Nothing starts while the JobFlow is being deleted or invalid, nor after it failed fast."""
    SKIPPED = "skipped"
    """The flow will never run: what it waits for can no longer happen. Not a problem: nobody needs to act."""
    WAIT = "wait"
    """The flow waits for its dependencies; nothing is wrong."""
    BLOCKED = "blocked"
    """The flow cannot start until someone fixes something; the message says what."""
    RECORDED = "recorded"
    """The flow ends without a vcjob of its own: a record stands for its run, written with the status (a memoized
    run reused, :mod:`jobflow_core.flows.memo`; an approval gate's answer, :mod:`jobflow_core.flows.gates`). What
    waits for it starts in the same plan."""
    START = "start"


class FlowFacts:
    """What the rules may ask about one flow. The JobTemplate, the vcjob manifest and the template's problems are
    worked out only when a rule first asks, so flows that wait never touch a template."""

    def __init__(self, view: FlowView, *, observation: Observation, templates: Mapping[str, JobTemplate],
                 rejections: Mapping[str, str], memo: Mapping[str, Entry] | None = None,
                 queues: Mapping[str, QueueView] | None = None, admission: Admission | None = None,
                 answers: Mapping[str, Answer] | None = None,
                 flow_templates: Mapping[str, "JobFlowTemplate"] | None = None) -> None:
        self.view, self.observation = view, observation
        self._answers = answers or {}
        self._flow_templates = flow_templates or {}
        self.readiness: Readiness = observation.readiness[view.name]
        self._templates, self._rejections = templates, rejections
        self.memo = memo or {}
        """The namespace's memoized runs by key (:mod:`jobflow_core.flows.memo`); empty when none was read."""
        self.queues = queues or {}
        self.admission = admission
        """For a JobFlow that has not started: whether its queue lets it start now (None: not asked)."""

    @property
    def namespace(self) -> str:
        return self.observation.jobflow.namespace

    @property
    def child(self) -> bool:
        """The flow's work is a child JobFlow (:mod:`jobflow_core.flows.children`), made from a JobFlowTemplate."""
        return self.view.flow.job_flow is not None

    @property
    def template_name(self) -> str:
        """The JobTemplate the flow runs, or for a child flow the JobFlowTemplate it makes its child from."""
        job_flow = self.view.flow.job_flow
        return job_flow.template if job_flow is not None else template_name(self.view.flow)

    @property
    def template(self) -> "JobTemplate | JobFlowTemplate | None":
        return (self._flow_templates if self.child else self._templates).get(self.template_name)

    @property
    def retry_due(self) -> datetime | None:
        """For a flow about to be retried, when its next attempt may start (None: at once)."""
        if not self.view.retrying:
            return None
        return due(self.view.flow, after=self.view.current.number, ended=self.view.current.ended_at)

    @cached_property
    def target_values(self) -> tuple[dict[str, str], list[str]]:
        """The values of the flow's ``{{targets...}}`` placeholders, and why some have none
        (:mod:`jobflow_core.flows.outputs`)."""
        refs = flow_references(self.view.flow)
        if not refs:
            return {}, []
        outcomes = self.observation.outcomes
        jobflow = self.observation.jobflow
        own = {"name": jobflow.name, "namespace": jobflow.namespace}
        if self.view.flow.final:
            outcome = outcomes.jobflow_outcome()
            own |= {"outcome": outcome["outcome"], "failedFlows": outcome["failedFlows"],
                    "firstError": next(iter(outcome["errors"].values()), "")}
        return resolve(refs, variables_of={ref.target: outcomes.variables(ref.target) for ref in refs
                                           if ref.target is not None}, jobflow=own)

    @cached_property
    def _built(self) -> dict[str, Any]:
        assert self.template is not None, "only rules after the template check read the manifest"
        if self.child:
            return child_manifest(self.observation.jobflow, flow=self.view.flow, template=self.template,
                                  attempt=self.view.next_attempt, item=self.view.item, targets=self.target_values[0],
                                  parent_started=self.observation.started)
        # The PriorityClass is one for the whole cluster: any queue read says whether it is installed.
        queue = next(iter(self.queues.values()), None)
        # A JobFlow at risk of missing its deadline gets its own, higher class even for its first stages: it went
        # ahead of what started JobFlows hold (jobflow_core.queueing.deadline).
        priority = queue.priority_class if queue is not None and (self.observation.started or queue.at_risk) else None
        return build_job(self.observation.jobflow, flow=self.view.name, template=self.template,
                         attempt=self.view.next_attempt, item=self.view.item, targets=self.target_values[0],
                         priority_class=priority)

    @cached_property
    def memo_key(self) -> tuple[str | None, str | None]:
        """A memoized flow's cache key, or why it has none (:mod:`jobflow_core.flows.memo`); ``(None, None)`` for a flow
        that is not memoized."""
        flow, namespace = self.view.flow, self.namespace
        if flow.memoize is None:
            return None, None
        if flow.memoize.key is None:
            return spec_key(namespace=namespace, spec=self._built["spec"]), None
        outcomes, jobflow = self.observation.outcomes, self.observation.jobflow
        targets = flow.depends_on.targets or () if flow.depends_on else ()
        value, error = key_value(flow, variables={
            "params": values(jobflow), "jobflow": {"name": jobflow.name, "namespace": namespace},
            "targets": {target: outcomes.variables(target) for target in targets}})
        if error is not None:
            return None, error
        return declared_key(namespace=namespace, template=self.template_name, value=value or ""), None

    @cached_property
    def memo_hit(self) -> Entry | None:
        key = self.memo_key[0]
        return lookup(self.memo, key, flow=self.view.flow, now=self.observation.now) if key else None

    @cached_property
    def manifest(self) -> dict[str, Any]:
        """The vcjob this flow would create (its template must exist); a memoized one carries its cache key."""
        key = self.memo_key[0]
        if key is None:
            return self._built
        manifest = copy.deepcopy(self._built)
        manifest["metadata"]["annotations"][MEMO_KEY] = key
        return manifest

    @property
    def queue(self) -> QueueView | None:
        """The queue this flow's vcjob would join, as the shell read it (None: not read)."""
        assert self.template is not None, "only rules after the template check read the queue"
        return self.queues.get(queue_of(self.manifest["spec"]))

    @cached_property
    def gang(self) -> resources.Resources:
        """What this flow's vcjob needs at once to start (its first ``minAvailable`` pods' requests)."""
        return resources.gang_requests(self.manifest["spec"])

    @cached_property
    def template_errors(self) -> list[SpecError]:
        """What Volcano would refuse in the vcjob: the template as the flow runs it, with its patch merged in. For a
        child flow, what would be wrong with the child JobFlow (:func:`jobflow_core.flows.children.child_errors`)."""
        assert self.template is not None, "only rules after the template check read the template's errors"
        if self.child:
            return child_errors(self.observation.jobflow, flow=self.view.flow, template=self.template,
                                manifest=self.manifest)
        patched = self.template.model_copy(update={"spec": JobSpec.model_validate(self.manifest["spec"])})
        return validate_template(patched)

    @property
    def rejection(self) -> str | None:
        return self._rejections.get(self.view.name)

    @cached_property
    def gate_timeout(self) -> datetime | None:
        """For an approval gate with ``timeoutSeconds``: when it times out
        (:func:`jobflow_core.flows.gates.opened_at`)."""
        flow = self.view.flow
        if flow.approval is None or flow.approval.timeout_seconds is None:
            return None
        targets = flow.depends_on.targets if flow.depends_on and flow.depends_on.targets else ()
        ends = [self.observation.node(target).ended_at for target in targets]
        rerun = self.observation.rerun
        previous = rerun.accepted_at if rerun is not None and self.view.first > 1 else None
        return timeout_at(flow, opened_at(self.observation.jobflow, ends, previous=previous))

    @cached_property
    def answer(self) -> Answer | None:
        """An approval gate's answer: the first one offered for its current record (a person's, then an event's),
        else the timeout's once it passed; None while it waits (or for a flow that is no gate)."""
        view = self.view
        if view.flow.approval is None:
            return None
        answer = offered_for(view.name, self._answers, self.observation.jobflow, job_name=view.next_job_name)
        if answer is not None:
            return answer
        if passed(self.gate_timeout, self.observation.now):
            return timeout_answer(view.flow, job_name=view.next_job_name)
        return None

    def resolution(self) -> "Resolution":
        """What stands for the run of a flow that ends without a vcjob (verdict ``recorded``)."""
        now = self.observation.now
        if self.answer is not None:
            record, approval = record_of(self.answer, flow=self.view.name, now=now)
            return Resolution(record, approval=approval)
        assert self.memo_hit is not None and now is not None
        return Resolution(cached_record(job_name=self.view.next_job_name, entry=self.memo_hit, now=now))


@dataclass(frozen=True)
class Resolution:
    """The record that stands for a flow's run without a vcjob (added to ``jobStatusList``), and for an approval
    gate, its ``status.approvals`` entry."""

    record: FlowJobStatus
    approval: ApprovalRecord | None = None


@dataclass(frozen=True)
class StartRule:
    when: str
    verdict: Verdict
    reason: Reason | None
    holds: Callable[[FlowFacts], str | None]
    """The message when the rule holds for a flow (what it waits for, or what to fix), else None."""
    recheck: Callable[[FlowFacts], int | None] | None = None
    """For a wait that no Kubernetes change ends (time passing): how often to look again, in seconds."""


def _starts_nothing(facts: FlowFacts) -> str | None:
    return f"not started: the JobFlow is {facts.observation.phase}" if facts.observation.starts_nothing else None


def _already_succeeded(facts: FlowFacts) -> str | None:
    if not facts.observation.succeeded:
        return None
    return ("not started: the JobFlow already succeeded (a finished JobFlow starts nothing; create a new JobFlow "
            "to run it again)")


def _deadline_passed(facts: FlowFacts) -> str | None:
    if not facts.observation.deadline_exceeded:
        return None
    seconds = facts.observation.jobflow.spec.active_deadline_seconds
    return f"not started: the JobFlow's activeDeadlineSeconds ({seconds}) passed"


def _stopped(facts: FlowFacts) -> str | None:
    observation = facts.observation
    if not observation.stopped_for(facts.view):
        return None
    if observation.shutdown is not None:
        return f"not started: the JobFlow was {ended_by(observation.shutdown)} (spec.shutdown: " \
               f"{observation.shutdown.value})"
    return f"not started: the JobFlow is {observation.phase}"


def _dependency_lost(facts: FlowFacts) -> str | None:
    return facts.readiness.skip if facts.readiness.skip_reason is Reason.DEPENDENCY_NOT_MET else None


def _condition_false(facts: FlowFacts) -> str | None:
    return facts.readiness.skip if facts.readiness.skip_reason is Reason.CONDITION_FALSE else None


def _condition_error(facts: FlowFacts) -> str | None:
    return facts.readiness.condition_error


def _suspended(facts: FlowFacts) -> str | None:
    jobflow = facts.observation.jobflow
    if not facts.observation.suspended_for(facts.view):
        return None
    return f"not started: the JobFlow is suspended (resume it: kubectl jobflow resume {jobflow.name})"


def _backing_off(facts: FlowFacts) -> str | None:
    when, now = facts.retry_due, facts.observation.now
    if when is None or (now is not None and now >= when):
        return None
    view = facts.view
    return (f"attempt {view.next_attempt} of {max_attempts(view.flow)} starts at {format_time(when)}: "
            f"{delay_seconds(view.flow, after=view.current.number)}s after attempt {view.current.number} "
            f"ended {view.phase}")


def _backoff_recheck(facts: FlowFacts) -> int:
    return recheck_seconds(facts.view.flow, after=facts.view.current.number)


def _broken_probe(facts: FlowFacts) -> str | None:
    return "; ".join(facts.readiness.errors) or None


def _not_ready(facts: FlowFacts) -> str | None:
    return facts.readiness.message if not facts.readiness.ready else None


def _gate_answered(decision: ApprovalDecision) -> Callable[[FlowFacts], str | None]:
    def holds(facts: FlowFacts) -> str | None:
        answer = facts.answer
        if answer is None or answer.timed_out or answer.decision is not decision:
            return None
        why = f": {answer.message}" if answer.message else ""
        return f'approval gate "{facts.view.name}" {decision.value.lower()} by {describe(answer)}{why}'
    return holds


def _gate_timed_out(facts: FlowFacts) -> str | None:
    answer = facts.answer
    if answer is None or not answer.timed_out:
        return None
    return f'approval gate "{facts.view.name}" {answer.decision.value.lower()}: {answer.message}'


def _gate_waits(facts: FlowFacts) -> str | None:
    if facts.view.flow.approval is None:
        return None
    return waiting_message(facts.observation.jobflow, facts.view.flow, job_name=facts.view.next_job_name,
                           timeout=facts.gate_timeout)


def _gate_recheck(facts: FlowFacts) -> int | None:
    seconds = facts.view.flow.approval.timeout_seconds if facts.view.flow.approval else None
    return deadline_recheck(seconds) if seconds else None


def _results_unknown(facts: FlowFacts) -> str | None:
    outcomes = facts.observation.outcomes
    reading = results_read(facts.view.flow)
    waiting = [target for target in referenced_targets(facts.view.flow) if outcomes.of.get(target) is None
               or (target in reading and target in outcomes.fates and unread(outcomes.fates[target]))]
    if not waiting:
        return None
    names = ", ".join(f'"{target}"' for target in waiting)
    return f"waiting for the result of {names} (its patch reads it)"


def _results_unusable(facts: FlowFacts) -> str | None:
    problems = facts.target_values[1]
    if not problems:
        return None
    return f'flow "{facts.view.name}": its patch cannot take its targets\' results: ' + "; ".join(problems) + \
        " (fix flows[].patch, or what the target writes)"


def _items_unknown(facts: FlowFacts) -> str | None:
    if not facts.view.placeholder:
        return None
    node = facts.observation.node(facts.view.name)
    if node.items is not None or node.items_error is not None:
        return None
    source = node.flow.for_each.result if node.flow.for_each else None
    return f'waiting for the result of "{source}" (its items)'


def _items_invalid(facts: FlowFacts) -> str | None:
    if not facts.view.placeholder:
        return None
    error = facts.observation.node(facts.view.name).items_error
    return f'flow "{facts.view.name}": its items {error}' if error else None


def _no_free_slot(facts: FlowFacts) -> str | None:
    return facts.observation.no_free_slot.get(facts.view.next_job_name)


def _name_taken(facts: FlowFacts) -> str | None:
    if facts.view.foreign is None:
        return None
    jobflow = facts.observation.jobflow
    return (f'vcjob "{facts.namespace}/{facts.view.next_job_name}" already exists and is not controlled by JobFlow '
            f'"{facts.namespace}/{jobflow.name}": delete or rename that vcjob (or rename flow "{facts.view.name}") '
            "and the flow will continue")


def _template_missing(facts: FlowFacts) -> str | None:
    if facts.template is not None:
        return None
    kind = "JobFlowTemplate" if facts.child else "JobTemplate"
    return (f'{kind} "{facts.namespace}/{facts.template_name}" not found: '
            "create it (kubectl apply -f ...) and the flow will continue")


def _template_invalid(facts: FlowFacts) -> str | None:
    if not facts.template_errors:
        return None
    errors = "; ".join(str(error) for error in facts.template_errors)
    if facts.child:
        return (f'flow "{facts.view.name}": JobFlowTemplate "{facts.namespace}/{facts.template_name}" would make an '
                f"invalid child JobFlow: {errors}")
    return (f'JobTemplate "{facts.namespace}/{facts.template_name}" (with the flow\'s patch) would make an '
            f"invalid vcjob: {errors}")


def _memo_key_error(facts: FlowFacts) -> str | None:
    return facts.memo_key[1]


def _cached(facts: FlowFacts) -> str | None:
    entry = facts.memo_hit
    if entry is None:
        return None
    return (f'flow "{facts.view.name}" not run: it reuses the run of vcjob {entry.job}, Completed at '
            f"{format_time(entry.completed)} (memoize, key {facts.memo_key[0][:12]})")


def _refused(facts: FlowFacts) -> str | None:
    if facts.rejection is None:
        return None
    return (f'the API server refused vcjob "{facts.view.next_job_name}": {facts.rejection} '
            f'(fix JobTemplate "{facts.namespace}/{facts.template_name}" or the cluster; the flow will retry)')


def _never_fits(facts: FlowFacts) -> str | None:
    if facts.child:  # a child's vcjobs wait in their queues as the child's own
        return None
    why = never_fits(facts.queue, request=facts.gang)
    return f'flow "{facts.view.name}" of JobFlow "{facts.namespace}/{facts.observation.jobflow.name}": {why}' \
        if why else None


def _stage_never_fits(facts: FlowFacts) -> str | None:
    admission = facts.admission
    return admission.message if admission is not None and admission.unschedulable else None


def _no_room(facts: FlowFacts) -> str | None:
    admission = facts.admission
    return admission.message if admission is not None and not admission.start else None


READINESS_RULES: Final = (
    StartRule("the JobFlow is being deleted, or its spec is invalid", Verdict.HELD, None, _starts_nothing),
    StartRule("its deadline passed", Verdict.HELD, None, _deadline_passed),
    StartRule("the JobFlow failed fast, and the flow is not finally", Verdict.HELD, None, _stopped),
    StartRule("its dependencies can no longer be met", Verdict.SKIPPED, Reason.DEPENDENCY_NOT_MET,
              _dependency_lost),
    StartRule("its condition is false", Verdict.SKIPPED, Reason.CONDITION_FALSE, _condition_false),
    StartRule("the JobFlow is suspended", Verdict.HELD, None, _suspended),
    StartRule("its next attempt waits out the retry backoff", Verdict.WAIT, None, _backing_off, _backoff_recheck),
    StartRule("its probe can never pass as written", Verdict.BLOCKED, Reason.PROBE_TASK_NOT_FOUND, _broken_probe),
    StartRule("its condition cannot be evaluated", Verdict.BLOCKED, Reason.CONDITION_ERROR, _condition_error),
    StartRule("its targets are not ready", Verdict.WAIT, None, _not_ready),
    StartRule("it is an approval gate, approved", Verdict.RECORDED, Reason.APPROVED,
              _gate_answered(ApprovalDecision.APPROVED)),
    StartRule("it is an approval gate, rejected", Verdict.RECORDED, Reason.REJECTED,
              _gate_answered(ApprovalDecision.REJECTED)),
    StartRule("it is an approval gate whose timeout passed", Verdict.RECORDED, Reason.APPROVAL_TIMEOUT,
              _gate_timed_out),
    StartRule("it is an approval gate without an answer", Verdict.WAIT, None, _gate_waits, _gate_recheck),
    StartRule("the results its patch reads are not known yet", Verdict.WAIT, None, _results_unknown),
    StartRule("its patch cannot take its targets' results", Verdict.BLOCKED, Reason.INVALID_RESULT,
              _results_unusable),
    StartRule("its items are not known yet", Verdict.WAIT, None, _items_unknown),
    StartRule("its items cannot be worked out", Verdict.BLOCKED, Reason.INVALID_ITEMS, _items_invalid),
    StartRule("its forEach already runs parallelism items", Verdict.WAIT, None, _no_free_slot),
    StartRule("a vcjob this JobFlow does not control holds its name", Verdict.BLOCKED, Reason.JOB_NAME_CONFLICT,
              _name_taken),
    StartRule("the JobFlow already succeeded", Verdict.HELD, None, _already_succeeded),
)
"""The rules decided from the observation alone."""

TEMPLATE_RULES: Final = (
    StartRule("its JobTemplate does not exist", Verdict.BLOCKED, Reason.TEMPLATE_NOT_FOUND, _template_missing),
    StartRule("its JobTemplate, patched, would make an invalid vcjob", Verdict.BLOCKED, Reason.INVALID_TEMPLATE,
              _template_invalid),
    StartRule("its memoize.key cannot be evaluated", Verdict.BLOCKED, Reason.MEMO_KEY_ERROR, _memo_key_error),
    StartRule("a Completed run of its memoize key is recent enough", Verdict.RECORDED, Reason.CACHED, _cached),
    StartRule("the API server refused its vcjob", Verdict.BLOCKED, Reason.JOB_REJECTED, _refused),
)
"""The rules that read the flow's JobTemplate."""

QUEUE_RULES: Final = (
    StartRule("its gang asks more than its queue can ever hold", Verdict.BLOCKED, Reason.UNSCHEDULABLE,
              _never_fits),
    StartRule("its JobFlow wants whole-flow admission, and a stage of it asks more than its queue can ever hold",
              Verdict.BLOCKED, Reason.UNSCHEDULABLE, _stage_never_fits),
    NO_ROOM := StartRule("its JobFlow has not started and its queue has no room for it yet, or its JobFlow started "
                         "and at-risk JobFlows that overtook it hold the queue", Verdict.WAIT, None,
                         _no_room, lambda facts: RECHECK_SECONDS),
)
"""The rules that read the flow's Volcano queue (:mod:`jobflow_core.queueing.line`); without a queue read, none
holds."""

START: Final = StartRule("otherwise", Verdict.START, None, lambda facts: "starts now")

START_RULES: Final = (*READINESS_RULES, *TEMPLATE_RULES, *QUEUE_RULES, START)
"""The whole table of the module docstring, in order."""


@dataclass(frozen=True)
class FlowDecision:
    """What happens to one flow that needs a vcjob, and why."""

    view: FlowView
    rule: StartRule
    message: str
    readiness: Readiness
    manifest: dict[str, Any] | None = None
    """The vcjob to create, for a flow that starts."""
    resolution: Resolution | None = None
    """For a flow that ends without a vcjob (verdict ``recorded``): the record that stands for its run."""
    recheck_seconds: int | None = None
    """For a wait on time (a backoff): how often to look again."""
    admission: Admission | None = None
    """For a JobFlow that has not started, what its queue said (:mod:`jobflow_core.queueing.line`)."""

    @property
    def verdict(self) -> Verdict:
        return self.rule.verdict

    @property
    def reason(self) -> Reason | None:
        return self.rule.reason

    @property
    def starts(self) -> bool:
        return self.rule.verdict is Verdict.START

    @property
    def no_room(self) -> bool:
        """Held by :data:`NO_ROOM`: its JobFlow waits in its queue's line (``status.queue`` says where)."""
        return self.rule is NO_ROOM


def decide(facts: FlowFacts, rules: tuple[StartRule, ...] = START_RULES) -> FlowDecision | None:
    """The decision of the first rule of ``rules`` that holds for the flow (None if none does)."""
    for rule in rules:
        message = rule.holds(facts)
        if message is not None:
            manifest = facts.manifest if rule.verdict is Verdict.START else None
            return FlowDecision(view=facts.view, rule=rule, message=message, readiness=facts.readiness,
                                manifest=manifest, recheck_seconds=rule.recheck(facts) if rule.recheck else None,
                                resolution=facts.resolution() if rule.verdict is Verdict.RECORDED else None,
                                admission=facts.admission)
    return None


def decide_all(observation: Observation, *, templates: Mapping[str, JobTemplate],
               rejections: Mapping[str, str] | None = None,
               memo: Mapping[str, Entry] | None = None,
               queues: Mapping[str, QueueView] | None = None,
               answers: Mapping[str, Answer] | None = None,
               flow_templates: Mapping[str, "JobFlowTemplate"] | None = None) -> list[FlowDecision]:
    """A decision for every flow that needs a vcjob, in spec order. ``queues``: the Volcano queues of the flows
    that would start, as the shell read them (:mod:`jobflow_core.queueing.line`; none: nothing is held back)."""
    def decide_each(admission: Admission | None) -> list[FlowDecision]:
        decisions = []
        for view in observation.undecided:
            facts = FlowFacts(view, observation=observation, templates=templates, rejections=rejections or {},
                              memo=memo, queues=queues, admission=admission, answers=answers,
                              flow_templates=flow_templates)
            decision = decide(facts)
            assert decision is not None, "the last rule always holds"
            decisions.append(decision)
        return decisions

    decisions = decide_each(None)
    starting = [d.manifest for d in decisions if d.verdict is Verdict.START and d.manifest is not None
                and d.view.flow.job_flow is None]  # a child's vcjobs wait in line as the child's own
    admission = first_stages_admission(observation, starting, queues=queues or {}, templates=templates)
    return decisions if admission is None else decide_each(admission)


def templates_needed(observation: Observation) -> list[str]:
    """The JobTemplates the plan will read: those of the flows no readiness rule holds back, those downstream of a
    flow that may end without a vcjob in this plan (an approval gate, a memoized flow: what waits for it starts in
    the same plan), and, on a JobFlow's first reconcile, every flow's, for its run-time estimate
    (:mod:`jobflow_core.insight.eta`)."""
    starting = [view.flow for view in observation.candidates
                if decide(FlowFacts(view, observation=observation, templates={}, rejections={}),
                          READINESS_RULES) is None]
    estimated = (observation.node(name).flow for name in observation.estimates_needed())
    whole = observation.jobflow.spec.whole_flow_admission and starting and not observation.started
    every = [node.flow for node in observation.nodes] if whole else []  # its widest stage decides when it starts
    return list(dict.fromkeys(template_name(flow) for flow in (*starting, *estimated, *every, *_after_records(
        observation)) if flow.approval is None and flow.job_flow is None))


def flow_templates_needed(observation: Observation) -> list[str]:
    """The JobFlowTemplates of the child flows (:mod:`jobflow_core.flows.children`) no readiness rule holds back,
    and of those downstream of a flow that may end without a vcjob in this plan."""
    starting = [view.flow for view in observation.candidates if view.flow.job_flow is not None
                and decide(FlowFacts(view, observation=observation, templates={}, rejections={}),
                           READINESS_RULES) is None]
    return list(dict.fromkeys(flow.job_flow.template for flow in (*starting, *_after_records(observation))
                              if flow.job_flow is not None))


def _after_records(observation: Observation) -> list[Flow]:
    """The flows downstream of a candidate that may be recorded without a vcjob (a gate, a memoized flow)."""
    pending = [view.name for view in observation.candidates if view.flow.approval or view.flow.memoize]
    if not pending:
        return []
    graph, seen = flow_graph(observation.jobflow), set()
    while pending:
        for dependent in graph.dependents(pending.pop()):
            if dependent not in seen:
                seen.add(dependent)
                pending.append(dependent)
    return [node.flow for node in observation.nodes if node.name in seen]
