"""Names, labels and ownership that tie a vcjob to the JobFlow and JobTemplate it came from.

These strings are the wire contract with upstream Volcano and its tools (vcctl, dashboards, label selectors),
so they are exactly upstream's:

* the vcjob of flow ``b`` in JobFlow ``test`` is named ``test-b``;
* it carries the label *and* the annotation ``volcano.sh/createdByJobFlow: <namespace>.<jobflow>`` and
  ``volcano.sh/createdByJobTemplate: <namespace>.<flow>``;
* its controller owner reference points at the JobFlow, so deleting the JobFlow garbage-collects its jobs.

Which vcjobs *belong* to a JobFlow is decided by that owner reference's UID, not by name or label: names and
labels are reused when a JobFlow is deleted and created again, UIDs never are (upstream issue #4089 was a
label mix-up). Labels only narrow a LIST: the label selectors every component uses are built here too.
"""

import re
from typing import Any

from jobflow_core.models import Flow, JobFlow, VcJob
from jobflow_core.vocabulary.api import (
    CREATED_BY_JOBFLOW,
    CREATED_BY_JOBTEMPLATE,
    JOBFLOW,
    POD_JOB_NAME,
    POD_TASK_SPEC,
    RECORD_FINALIZER,
)

FLOW_JOBS_SELECTOR = CREATED_BY_JOBFLOW
"""Selects every vcjob some JobFlow created (the label exists), in a namespace or cluster-wide."""


def job_name(*, jobflow: str, flow: str) -> str:
    """The vcjob name of a flow: ``<jobflow>-<flow>``."""
    return f"{jobflow}-{flow}"


def attempt_job_name(*, jobflow: str, flow: str, attempt: int, index: int | None = None) -> str:
    """The vcjob of an attempt of a flow: the first keeps upstream's ``<jobflow>-<flow>``, retry ``k`` (attempt
    ``k + 1``) is ``<jobflow>-<flow>-r<k>``. Item ``index`` of a ``forEach`` flow inserts ``-<index>`` after the
    flow: ``<jobflow>-<flow>-<index>``, ``<jobflow>-<flow>-<index>-r<k>`` (:mod:`jobflow_core.flows.items`)."""
    base = job_name(jobflow=jobflow, flow=flow) + (f"-{index}" if index is not None else "")
    return base if attempt <= 1 else f"{base}-r{attempt - 1}"


def is_job_of_flow(job: str, *, jobflow: str, flow: str) -> bool:
    """Whether vcjob ``job`` is named as an attempt of ``flow``, or of one of its items (see
    :func:`attempt_job_name`)."""
    base = job_name(jobflow=jobflow, flow=flow)
    if job == base:
        return True
    rest = job.removeprefix(f"{base}-")
    return rest != job and _ATTEMPT_OF_ITEM.fullmatch(rest) is not None


_ATTEMPT_OF_ITEM = re.compile(r"r[1-9][0-9]*|(0|[1-9][0-9]*)(-r[1-9][0-9]*)?")
"""What follows ``<jobflow>-<flow>-`` in the name of a retry, an item, or an item's retry."""


def jobflow_label_value(*, namespace: str, jobflow: str) -> str:
    """The value of ``volcano.sh/createdByJobFlow``: ``<namespace>.<jobflow>``."""
    return f"{namespace}.{jobflow}"


def jobtemplate_label_value(*, namespace: str, flow: str) -> str:
    """The value of ``volcano.sh/createdByJobTemplate``: ``<namespace>.<flow>`` (the flow names the template)."""
    return f"{namespace}.{flow}"


def jobs_of_jobflow_selector(*, namespace: str, jobflow: str) -> str:
    """The label selector of the vcjobs a JobFlow created (ownership is then checked by UID)."""
    return f"{CREATED_BY_JOBFLOW}={jobflow_label_value(namespace=namespace, jobflow=jobflow)}"


def jobs_of_template_selector(*, namespace: str, template: str) -> str:
    """The label selector of the vcjobs made from a JobTemplate, by any JobFlow of its namespace."""
    return f"{CREATED_BY_JOBTEMPLATE}={jobtemplate_label_value(namespace=namespace, flow=template)}"


def pods_of_job_selector(*, job: str) -> str:
    """The label selector of the pods Volcano runs for a vcjob."""
    return f"{POD_JOB_NAME}={job}"


def pods_of_task_selector(*, job: str, task: str) -> str:
    """The label selector of the pods Volcano runs for one task of a vcjob."""
    return f"{POD_JOB_NAME}={job},{POD_TASK_SPEC}={task}"


def template_name(flow: Flow) -> str:
    """The JobTemplate a flow runs: ``jobTemplate`` if set, else the one named like the flow (upstream's rule)."""
    return flow.job_template or flow.name


def created_by(jobflow: JobFlow, template: str) -> dict[str, str]:
    """The two ``createdBy`` keys of a vcjob made from JobTemplate ``template``; upstream sets them as labels and
    as annotations."""
    return {
        CREATED_BY_JOBTEMPLATE: jobtemplate_label_value(namespace=jobflow.namespace, flow=template),
        CREATED_BY_JOBFLOW: jobflow_label_value(namespace=jobflow.namespace, jobflow=jobflow.name),
    }


def template_in_label(value: str | None) -> str | None:
    """The JobTemplate named by a createdByJobTemplate value ``<namespace>.<flow>`` (a namespace has no dot)."""
    _, dot, template = (value or "").partition(".")
    return (template or None) if dot else None


def template_of(job: VcJob) -> str | None:
    """The JobTemplate (and flow) of the vcjob's own namespace it was made from, by its createdByJobTemplate label;
    None for a vcjob without one."""
    value = (job.metadata.labels or {}).get(CREATED_BY_JOBTEMPLATE)
    return template_in_label(value) if value and value.startswith(f"{job.namespace}.") else None


def owner_reference(jobflow: JobFlow) -> dict[str, Any]:
    """The controller owner reference a vcjob gets, as ``controllerutil.SetControllerReference`` writes it."""
    return {
        "apiVersion": JOBFLOW.api_version,
        "kind": JOBFLOW.kind,
        "name": jobflow.name,
        "uid": jobflow.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def has_record_finalizer(job: VcJob) -> bool:
    return RECORD_FINALIZER in (job.metadata.finalizers or ())


def controller_uid(job: VcJob) -> str | None:
    """The UID of the object that controls ``job`` (for our vcjobs: their JobFlow), if any."""
    return next((ref.uid for ref in job.metadata.owner_references or () if ref.controller), None)


def is_owned_by(job: VcJob, jobflow: JobFlow) -> bool:
    """Whether ``job``'s controller owner reference is this very JobFlow (same UID)."""
    uid = jobflow.metadata.uid
    return uid is not None and controller_uid(job) == uid
