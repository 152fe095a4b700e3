"""Kubernetes Events a plan asks the shell to record, and every reason word the core uses.

An event is a value (type, reason, message); the shell records it on the JobFlow. The same reason words appear
in ``status.state.reason``, so a user who sees a Warning can find the same explanation in the status.

Because the shell may plan the same observation many times, the planner only returns an event for something
*new*: a phase change, a blocker whose reason or message differs from the previous status, or (in
``Plan.create_events``) a vcjob that is about to be created. Upstream's creation event is reproduced verbatim.
"""

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from jobflow_core.models import JobFlowPhase, Shutdown


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class Reason(StrEnum):
    CREATED = "Created"
    """A vcjob was created (upstream's reason and message)."""
    PHASE_CHANGED = "PhaseChanged"
    INVALID_SPEC = "InvalidSpec"
    """The spec failed validation; nothing runs until it is fixed."""
    JOB_FAILED = "JobFailed"
    """A vcjob ended Failed, Terminated or Aborted, so the JobFlow is Failed."""
    JOB_NAME_CONFLICT = "JobNameConflict"
    """A vcjob with a flow's job name exists but belongs to someone else."""
    TEMPLATE_NOT_FOUND = "TemplateNotFound"
    """A flow is ready but its JobTemplate does not exist."""
    INVALID_TEMPLATE = "InvalidTemplate"
    """A flow's JobTemplate (with the flow's patch) would make a vcjob Volcano refuses; nothing is created."""
    JOB_REJECTED = "JobRejected"
    """The API server (Volcano's webhook) refused a flow's vcjob; it is tried again on the next event."""
    PROBE_TASK_NOT_FOUND = "ProbeTaskNotFound"
    """A flow's probe names a task its target vcjob does not have, so it can never pass."""
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    """``activeDeadlineSeconds`` passed before every flow ended: what ran was aborted, the JobFlow is Failed."""
    TIMEOUT = "Timeout"
    """An attempt ran longer than its flow's ``timeoutSeconds`` and was aborted."""
    RERUN = "Rerun"
    """A rerun request (``flow.volcano.sh/rerun``) was handled: what runs again, or why nothing does."""
    CONDITION_FALSE = "ConditionFalse"
    """A flow is Skipped: its ``when`` condition is false (a Normal event)."""
    CONDITION_ERROR = "ConditionError"
    """A flow's ``when`` condition cannot be evaluated: it waits until the JobFlow is fixed."""
    DEPENDENCY_NOT_MET = "DependencyNotMet"
    """A flow is Skipped: what it waits for its targets to do can no longer happen (a Normal event)."""
    DEPENDENCY_FAILED = "DependencyFailed"
    """Another JobFlow this one waits for (``dependsOn.jobFlows``) failed, timed out, was deleted before it ended, or
    waits for this one, and no flow handles it: the JobFlow is Failed (:mod:`jobflow_core.dag.awaits`)."""
    INVALID_RESULT = "InvalidResult"
    """A flow's patch reads a target's result that cannot go into it (a key it does not have, too long)."""
    MEMO_KEY_ERROR = "MemoKeyError"
    """A memoized flow's ``memoize.key`` cannot be evaluated: it waits until the JobFlow is fixed."""
    CACHED = "Cached"
    """A memoized flow reused a Completed run of the same key instead of running (a Normal event)."""
    INVALID_ITEMS = "InvalidItems"
    """A ``forEach`` flow's items cannot be worked out (its parameter or its target's result is no JSON list)."""
    WAITING_FOR_QUEUE = "WaitingForQueue"
    """Not a problem, no event: a JobFlow that has not started waits for room in its Volcano queue, behind started
    JobFlows and older ones (``status.state.reason`` while nothing blocks it; :mod:`jobflow_core.queueing.line`)."""
    UNSCHEDULABLE = "Unschedulable"
    """A flow's vcjob could never be scheduled: its gang asks more than its Volcano queue can ever hold, or Volcano
    says so of a vcjob that waits (:mod:`jobflow_core.queueing.line`)."""
    DEADLINE_AT_RISK = "DeadlineAtRisk"
    """A JobFlow is expected to succeed after its ``spec.deadline`` (:mod:`jobflow_core.queueing.deadline`): it goes
    ahead in its queue's line."""
    DEADLINE_ON_TIME = "DeadlineOnTime"
    """An at-risk JobFlow is expected to succeed by its deadline again (a Normal event)."""
    DEADLINE_MISSED = "DeadlineMissed"
    """A JobFlow's deadline passed before it succeeded: a state, not a failure."""
    DEADLINE_MET = "DeadlineMet"
    """A JobFlow with a deadline succeeded by it (a Normal event)."""
    PRIORITY_CLASS_MISSING = "PriorityClassMissing"
    """PriorityClass ``volcano-jobflow-started`` is not installed (or cannot be read): a started JobFlow's next vcjobs
    get no priority over newer JobFlows' first stages (:mod:`jobflow_core.queueing.status`)."""
    RUN_STARTED = "RunStarted"
    """A JobFlowTemplate started a run (:mod:`jobflow_core.schedules.firing`): which, and for which time or event."""
    MISS_SCHEDULE = "MissSchedule"
    """Scheduled times passed without a run (Kubernetes CronJob's reason word)."""
    RUN_HELD = "RunHeld"
    """A scheduled run waits (``concurrencyPolicy: Forbid``) or none is scheduled (suspended)."""
    RUN_REPLACED = "RunReplaced"
    """``concurrencyPolicy: Replace`` deleted the active runs to start a new one."""
    RUN_DELETED = "RunDeleted"
    """A finished run went beyond the history limits and was deleted."""
    RUN_REJECTED = "RunRejected"
    """The API server refused a run's JobFlow (the JobFlow CRD's rules, a quota); the message says why."""
    STOPPED = "Stopped"
    """``spec.shutdown: Stop``: what ran was aborted, nothing new started but the ``finally`` flows; Failed."""
    TERMINATED = "Terminated"
    """``spec.shutdown: Terminate``: what ran was aborted, ``finally`` flows too, nothing new started; Failed."""
    APPROVED = "Approved"
    """An approval gate was approved (:mod:`jobflow_core.flows.gates`): who, and why (a Normal event)."""
    REJECTED = "Rejected"
    """An approval gate was rejected: it counts as a failed flow."""
    APPROVAL_TIMEOUT = "ApprovalTimeout"
    """An approval gate had no answer within its ``timeoutSeconds``: its ``onTimeout`` is the answer."""
    APPROVAL_REFUSED = "ApprovalRefused"
    """An answer to an approval gate was not taken: a CloudEvent from a source the gate does not name, unsigned."""
    INVALID_SCHEDULE = "InvalidSchedule"
    """The schedule or time zone of a JobFlowTemplate cannot be used; no run is scheduled."""


SHUTDOWN_REASON: Final = MappingProxyType({Shutdown.STOP: Reason.STOPPED, Shutdown.TERMINATE: Reason.TERMINATED})
"""The reason a stopped or terminated JobFlow ends Failed with; its word in sentences is the reason's, lower case."""


def strongest(*shutdowns: Shutdown | None) -> Shutdown | None:
    """The shutdown that holds when several were asked (the spec's, the one the status records): Terminate
    outranks Stop, so a stop after a terminate never starts the ``finally`` flows a terminate held."""
    asked = set(shutdowns) - {None}
    return Shutdown.TERMINATE if Shutdown.TERMINATE in asked else (Shutdown.STOP if asked else None)


def ended_by(shutdown: Shutdown) -> str:
    """``stopped`` or ``terminated``."""
    return SHUTDOWN_REASON[shutdown].value.lower()


@dataclass(frozen=True)
class Event:
    type: EventType
    reason: Reason
    message: str


def job_created(job_name: str) -> Event:
    """Upstream's event for a new vcjob, to record once the create succeeded."""
    return Event(EventType.NORMAL, Reason.CREATED, f"create a job named {job_name}!")


def child_created(name: str, *, template: str) -> Event:
    """Ours: the event for a new child JobFlow (:mod:`jobflow_core.flows.children`), to record once created."""
    return Event(EventType.NORMAL, Reason.CREATED, f"created child JobFlow {name} from JobFlowTemplate {template}")


def phase_changed(*, jobflow: str, old: JobFlowPhase | None, new: JobFlowPhase) -> Event:
    before = old.value if old else "(none)"
    return Event(EventType.NORMAL, Reason.PHASE_CHANGED, f"JobFlow {jobflow}: {before} -> {new.value}")
