"""CloudEvents out: which lifecycle transitions a status write records, kept in the status until delivered.

A transition is found by comparing the status being written with the one read (never from the event that woke
the handler), so a replayed or reordered event finds nothing new, and a lost status write loses nothing: the
next plan finds the same transition again. Each transition becomes a pending notification *in the same status
write* that records it (``status.notifications``, a transactional outbox):

* it is sent only after that write succeeded (the shell sends what the written status holds);
* it is delivered at least once: the shell removes it from ``pending`` only after the sink accepted it (a 2xx);
  one the sink refused stays, and every later reconcile sends it again (the event source re-announces a JobFlow
  with pending notifications every :data:`DELIVERY_RECHECK_SECONDS`, the periodic resync looks at them too),
  once :data:`SENDER_GRACE_SECONDS` passed since it was recorded (:func:`due`: before that, its writer is sending
  it, and a second sender would only make a duplicate);
* its ``id`` is ``<JobFlow uid>.<sequence>``, fixed when it is recorded, so a duplicate delivery carries the same
  id and a consumer can de-duplicate.

Types, all under :data:`TYPE_PREFIX` (the JobFlow API group reversed, as Knative does with
``dev.knative.apiserver``):

============================  ======================================================  ===================
type (after the prefix)       when                                                    subject
============================  ======================================================  ===================
``jobflow.started``           the first vcjob runs: the phase leaves Pending (or        the JobFlow
                              none) for Running, Succeed or Failed, and no vcjob had
                              got past Pending before; or an ended JobFlow runs
                              again (a rerun)
``jobflow.resumed``           the phase becomes Running from Suspended                 the JobFlow
``jobflow.suspended``         the phase becomes Suspended                              the JobFlow
``jobflow.succeeded``         the phase becomes Succeed                                the JobFlow
``jobflow.failed``            the phase becomes Failed                                 the JobFlow
``job.created``               a vcjob of a flow's first attempt is first recorded      the vcjob
``job.retried``               a vcjob of a later attempt is first recorded             the vcjob
``job.completed``             a vcjob enters ``completedJobs``                         the vcjob
``job.failed``                a vcjob enters ``failedJobs`` or ``terminatedJobs``      the vcjob
``job.skipped``               a flow enters ``skippedFlows``                           its vcjob's name
``jobflow.deadline.atrisk``   ``status.deadline.state`` becomes ``AtRisk``             the JobFlow
``jobflow.deadline.missed``   ``status.deadline.state`` becomes ``Missed``             the JobFlow
============================  ======================================================  ===================

In one write they come in this order: ``jobflow.started``/``resumed``, the vcjobs that ended (each preceded by its
``job.created`` when it was never recorded before), those created, the skipped flows, the deadline's, then
``jobflow.succeeded``/``failed``/``suspended``. ``pending`` holds at most :data:`MAX_PENDING`: beyond that (a sink
down for a long time) the oldest are dropped and counted in ``notifications.dropped``. Nothing is recorded unless
the handler has a sink (``K_SINK``): then the status keeps whatever it held.
"""

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Final

from jobflow_core.models import JobFlow, JobFlowPhase, JobFlowStatus, Notification, Notifications
from jobflow_core.vocabulary.naming import is_job_of_flow

TYPE_PREFIX: Final = "sh.volcano.flow."
TYPES: Final = tuple(TYPE_PREFIX + kind for kind in (
    "jobflow.started", "jobflow.resumed", "jobflow.suspended", "jobflow.succeeded", "jobflow.failed",
    "job.created", "job.retried", "job.completed", "job.failed", "job.skipped", "jobflow.deadline.atrisk",
    "jobflow.deadline.missed"))
"""Every type a notification can have (the table above)."""
MAX_PENDING: Final = 100
DELIVERY_RECHECK_SECONDS: Final = 5
"""How often the event source re-announces a JobFlow whose status holds notifications not delivered yet."""
SENDER_GRACE_SECONDS: Final = 3
"""For this long after a notification was recorded, only the reconcile that recorded it sends it: the watch event
of that very write wakes other reconciles at once, which would only send a duplicate. (Shorter than
:data:`DELIVERY_RECHECK_SECONDS`, so a notification its writer could not deliver goes out at the next wake-up.)"""

_DEADLINE_KINDS: Final = {"AtRisk": "jobflow.deadline.atrisk", "Missed": "jobflow.deadline.missed"}
_ENDED_PHASES = frozenset({JobFlowPhase.SUCCEED, JobFlowPhase.FAILED, JobFlowPhase.TERMINATING})
_IDLE = frozenset({None, JobFlowPhase.PENDING})
_STARTED = frozenset({JobFlowPhase.RUNNING, JobFlowPhase.SUCCEED, JobFlowPhase.FAILED})


def record(jobflow: JobFlow, status: JobFlowStatus, *, now: datetime | None, enabled: bool) -> JobFlowStatus:
    """``status`` with ``notifications`` carried over from the status read, plus (when ``enabled``) one pending
    notification for each transition from the status read to ``status``."""
    before = jobflow.status or JobFlowStatus()
    held = before.notifications or Notifications()
    found = list(_transitions(jobflow, before, status)) if enabled else []
    if not found:
        return status.model_copy(update={"notifications": before.notifications})
    uid = jobflow.metadata.uid or jobflow.name
    added = [Notification(id=f"{uid}.{held.sequence + number}", type=TYPE_PREFIX + kind, subject=subject, time=now,
                          data=data)
             for number, (kind, subject, data) in enumerate(found, start=1)]
    pending = [*(held.pending or ()), *added]
    dropped = max(0, len(pending) - MAX_PENDING)
    notifications = Notifications(sequence=held.sequence + len(added), pending=pending[dropped:],
                                  dropped=(held.dropped or 0) + dropped or None)
    return status.model_copy(update={"notifications": notifications})


def delivered(status: JobFlowStatus, ids: set[str]) -> JobFlowStatus:
    """``status`` without the pending notifications the sink accepted."""
    held = status.notifications
    if held is None or not ids:
        return status
    rest = [notification for notification in held.pending or () if notification.id not in ids]
    return status.model_copy(update={"notifications": held.model_copy(update={"pending": rest or None})})


def due(notification: Notification, *, now: datetime, ours: bool) -> bool:
    """Whether a reconcile at ``now`` sends ``notification``: always the ones it recorded itself (``ours``); those
    of another reconcile once :data:`SENDER_GRACE_SECONDS` have passed."""
    return ours or notification.time is None or (now - notification.time).total_seconds() >= SENDER_GRACE_SECONDS


def pending(status: JobFlowStatus | None) -> list[Notification]:
    return list((status.notifications.pending or ()) if status and status.notifications else ())


def source(namespace: str, name: str) -> str:
    """The CloudEvent ``source`` of a JobFlow's notifications: its pseudo self-link."""
    return f"/apis/flow.volcano.sh/v1alpha1/namespaces/{namespace}/jobflows/{name}"


Found = tuple[str, str, dict[str, Any]]


def _transitions(jobflow: JobFlow, before: JobFlowStatus, after: JobFlowStatus) -> Iterator[Found]:
    old = before.state.phase if before.state else None
    new = after.state.phase if after.state else None
    if new is JobFlowPhase.RUNNING and old is JobFlowPhase.SUSPENDED:
        yield _of_jobflow("jobflow.resumed", jobflow, after)
    elif new is not old and ((old in _IDLE and new in _STARTED and _names(after) and not _ran(before))
                             or (old in _ENDED_PHASES and new is JobFlowPhase.RUNNING)):
        yield _of_jobflow("jobflow.started", jobflow, after)
    ended = set(before.completed_jobs or ()) | set(before.failed_jobs or ()) | set(before.terminated_jobs or ())
    known = _names(before)
    attempts = {record.name: record.attempt for record in after.job_status_list or ()}

    def created(job: str) -> Found:
        return _of_job("job.retried" if (attempts.get(job) or 1) > 1 else "job.created", jobflow, after, job)

    finished = [*((job, "job.completed") for job in after.completed_jobs or ()),
                *((job, "job.failed") for job in [*(after.failed_jobs or ()), *(after.terminated_jobs or ())])]
    for job, kind in finished:
        if job not in ended:
            if job not in known:  # created and ended between two looks: both happened
                yield created(job)
            yield _of_job(kind, jobflow, after, job)
    ending = {job for job, _ in finished}
    for job in _names(after):
        if job not in known and job not in ending:
            yield created(job)
    skipped_before = {flow.name for flow in before.skipped_flows or ()}
    for flow in after.skipped_flows or ():
        if flow.name not in skipped_before:
            yield "job.skipped", flow.job_name, {"jobFlow": jobflow.name, "flow": flow.name, "job": flow.job_name,
                                                 "reason": flow.reason, "message": flow.message}
    was, now = (before.deadline.state if before.deadline else None), (after.deadline.state if after.deadline else None)
    if now != was and now in _DEADLINE_KINDS and after.deadline is not None:
        yield _DEADLINE_KINDS[now], jobflow.name, {"jobFlow": jobflow.name, **after.deadline.to_wire()}
    if new is not old and new in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED, JobFlowPhase.SUSPENDED):
        kind = {JobFlowPhase.SUCCEED: "jobflow.succeeded", JobFlowPhase.FAILED: "jobflow.failed",
                JobFlowPhase.SUSPENDED: "jobflow.suspended"}[new]
        yield _of_jobflow(kind, jobflow, after)


def _ran(status: JobFlowStatus) -> bool:
    """Whether a vcjob of the status ever got past Pending."""
    return any((status.running_jobs, status.completed_jobs, status.failed_jobs, status.terminated_jobs,
                status.un_know_jobs))


def _names(status: JobFlowStatus) -> list[str]:
    """Every vcjob the status names, in list order, each once."""
    lists = (status.pending_jobs, status.running_jobs, status.completed_jobs, status.failed_jobs,
             status.terminated_jobs, status.un_know_jobs)
    return list(dict.fromkeys(job for jobs in lists for job in jobs or ()))


def _of_jobflow(kind: str, jobflow: JobFlow, status: JobFlowStatus) -> Found:
    state = status.state
    data = {"jobFlow": jobflow.name, "phase": state.phase if state else None, "progress": status.progress,
            "reason": state.reason if state else None, "message": state.message if state else None,
            "failureRate": status.failure_rate}
    return kind, jobflow.name, {key: value for key, value in data.items() if value is not None}


def _of_job(kind: str, jobflow: JobFlow, status: JobFlowStatus, job: str) -> Found:
    record = next((record for record in status.job_status_list or () if record.name == job), None)
    flows = [flow.name for flow in jobflow.spec.flows or () if is_job_of_flow(job, jobflow=jobflow.name,
                                                                              flow=flow.name)]
    data = {"jobFlow": jobflow.name, "flow": max(flows, key=len) if flows else None, "job": job,
            "phase": record.state if record else ("Completed" if kind == "job.completed" else None),
            "attempt": record.attempt if record else None, "reason": record.reason if record else None,
            "result": record.result if record else None}
    return kind, job, {key: value for key, value in data.items() if value is not None}
