"""Which JobFlows an incoming event concerns, and which ones a resync must look at.

An event only names an object; the shell re-reads the truth. But it must know *which* JobFlows to re-read:

* a vcjob changed: the JobFlow that controls it. A Resource-mode payload names its controller (a hint, since
  payloads can be forged: it only narrows the search); otherwise, every JobFlow of the namespace that has a flow
  whose vcjob (or one of its retries) would carry that name (:func:`jobflows_of_job`). When the vcjob came or went, the
  JobTemplates of those flows get their ``jobDependsOnList`` refreshed (:func:`flows_of_job`);
* a JobTemplate appeared or changed: the JobFlows of its namespace with a flow of that name that has no vcjob
  yet (:func:`waits_for_template`): a flow that has its vcjob no longer depends on its template, and this keeps
  our own writes of the template's status from setting off a reconcile of every JobFlow that uses it;
* a resync: every JobFlow that can still change (:func:`can_change`); and the vcjobs held by our finalizer whose
  JobFlow is gone (:func:`orphan_to_release`).

These run on every event over every JobFlow of a namespace, so they read the JSON objects as the API server
listed them, without building models (a JobFlow model takes some 85 µs to validate), and they tolerate any shape:
a field of the wrong type counts as absent.
"""

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from jobflow_core.models import JobFlowPhase, RetainPolicy, VcJob
from jobflow_core.vocabulary.api import JOBFLOW
from jobflow_core.vocabulary.naming import controller_uid, has_record_finalizer, is_job_of_flow

Json = Mapping[str, Any]


def _get(obj: object, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else None


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _flow_names(jobflow: Json) -> list[str]:
    names = (_get(flow, "name") for flow in _list(_get(_get(jobflow, "spec"), "flows")))
    return [name for name in names if isinstance(name, str)]


def _name(obj: Json) -> str | None:
    name = _get(_get(obj, "metadata"), "name")
    return name if isinstance(name, str) else None


def controller_name(payload: object) -> str | None:
    """The JobFlow an event's payload (a vcjob, Resource mode) says controls it: a hint, never the truth."""
    for ref in _list(_get(_get(payload, "metadata"), "ownerReferences")):
        name = _get(ref, "name")
        if _get(ref, "kind") == JOBFLOW.kind and _get(ref, "controller") is True and isinstance(name, str):
            return name
    return None


def flows_of_job(jobflow: Json, job: str) -> list[str]:
    """The flows of ``jobflow`` whose vcjob, or a retry of it, is named ``job`` (their JobTemplates share the flow's
    name)."""
    jobflow_name = _name(jobflow)
    return [flow for flow in dict.fromkeys(_flow_names(jobflow))
            if jobflow_name is not None and is_job_of_flow(job, jobflow=jobflow_name, flow=flow)]


def jobflows_of_job(jobflows: Iterable[Json], *, job: str, controller: str | None) -> list[Json]:
    """The JobFlows (of the vcjob's namespace) an event about vcjob ``job`` concerns; ``controller`` is the
    payload's hint (:func:`controller_name`), None when the event carried none."""
    if controller is not None:
        return [jobflow for jobflow in jobflows if _name(jobflow) == controller]
    return [jobflow for jobflow in jobflows if flows_of_job(jobflow, job)]


def waits_for_template(jobflow: Json, template: str) -> bool:
    """Whether a change of JobTemplate ``template`` can start a flow of ``jobflow``: one running it that has not
    got its vcjob yet and waits for no target any more (held by the template's absence, a refused create, ...), as
    far as its status says (a JobFlow without a status has not been planned at all).

    A flow still waiting for its targets is not concerned: their vcjobs' events bring it forward, and its vcjob is
    made from the template as it is then. Without this, every template change (each resync re-announces them) made
    one request reconcile every JobFlow not finished yet: 1,000 at once in the side-by-side benchmark, longer than
    the event source waits for an answer."""
    flows = _flows_running(jobflow, template)
    if not flows:
        return False
    status = _get(jobflow, "status")
    if not status:
        return True
    return any(_get(waiting, "name") in flows and not _list(_get(waiting, "waitingFor"))
               for waiting in _list(_get(status, "waitingFlows")))


def _flows_running(jobflow: Json, template: str) -> set[str]:
    """The flows of ``jobflow`` that run JobTemplate ``template`` (``jobTemplate``, else the flow's own name)."""
    found = set()
    for flow in _list(_get(_get(jobflow, "spec"), "flows")):
        name, named = _get(flow, "name"), _get(flow, "jobTemplate")
        if isinstance(name, str) and (named if isinstance(named, str) and named else name) == template:
            found.add(name)
    return found


def can_change(jobflow: Json) -> bool:
    """Everything is worth a look but a Succeed JobFlow that keeps its jobs and has no notification left to send:
    that one cannot change any more."""
    phase = _get(_get(_get(jobflow, "status"), "state"), "phase")
    policy = _get(_get(jobflow, "spec"), "jobRetainPolicy")
    return not (phase == JobFlowPhase.SUCCEED and policy != RetainPolicy.DELETE) or has_pending_notifications(jobflow)


def has_pending_notifications(jobflow: Json) -> bool:
    """Whether the JobFlow's status holds CloudEvents out not delivered yet
    (:mod:`jobflow_core.planning.notifications`)."""
    return bool(_list(_get(_get(_get(jobflow, "status"), "notifications"), "pending")))


def orphan_to_release(job: VcJob, *, jobflow_uids: Collection[str]) -> bool:
    """Whether ``job`` is being deleted, held by our finalizer, and controlled by none of ``jobflow_uids`` (the
    JobFlows that could still record it): nobody will, so the finalizer must go."""
    return (job.metadata.deletion_timestamp is not None and has_record_finalizer(job)
            and controller_uid(job) not in jobflow_uids)
