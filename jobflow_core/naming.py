"""Names, labels and ownership that tie a vcjob to the JobFlow and JobTemplate it came from.

These strings are the wire contract with upstream Volcano and its tools (vcctl, dashboards, label selectors),
so they are exactly upstream's:

* the vcjob of flow ``b`` in JobFlow ``test`` is named ``test-b``;
* it carries the label *and* the annotation ``volcano.sh/createdByJobFlow: <namespace>.<jobflow>`` and
  ``volcano.sh/createdByJobTemplate: <namespace>.<flow>``;
* its controller owner reference points at the JobFlow, so deleting the JobFlow garbage-collects its jobs.

Which vcjobs *belong* to a JobFlow is decided by that owner reference's UID, not by name or label: names and
labels are reused when a JobFlow is deleted and created again, UIDs never are (upstream issue #4089 was a
label mix-up).
"""

from typing import Any

from jobflow_core.models import JobFlow, VcJob

JOB_API_VERSION = "batch.volcano.sh/v1alpha1"
JOB_KIND = "Job"
JOBFLOW_API_VERSION = "flow.volcano.sh/v1alpha1"
JOBFLOW_KIND = "JobFlow"

RECORD_FINALIZER = "flow.volcano.sh/keep-record"
"""Ours, additive: holds a deleted vcjob until its final phase is in the JobFlow's status (see ``jobs``)."""

CREATED_BY_JOBFLOW = "volcano.sh/createdByJobFlow"
CREATED_BY_JOBTEMPLATE = "volcano.sh/createdByJobTemplate"


def job_name(*, jobflow: str, flow: str) -> str:
    """The vcjob name of a flow: ``<jobflow>-<flow>``."""
    return f"{jobflow}-{flow}"


def jobflow_label_value(*, namespace: str, jobflow: str) -> str:
    """The value of ``volcano.sh/createdByJobFlow``: ``<namespace>.<jobflow>``."""
    return f"{namespace}.{jobflow}"


def jobtemplate_label_value(*, namespace: str, flow: str) -> str:
    """The value of ``volcano.sh/createdByJobTemplate``: ``<namespace>.<flow>`` (the flow names the template)."""
    return f"{namespace}.{flow}"


def created_by(jobflow: JobFlow, flow: str) -> dict[str, str]:
    """The two ``createdBy`` keys of a flow's vcjob; upstream sets them as labels and as annotations."""
    return {
        CREATED_BY_JOBTEMPLATE: jobtemplate_label_value(namespace=jobflow.namespace, flow=flow),
        CREATED_BY_JOBFLOW: jobflow_label_value(namespace=jobflow.namespace, jobflow=jobflow.name),
    }


def owner_reference(jobflow: JobFlow) -> dict[str, Any]:
    """The controller owner reference a vcjob gets, as ``controllerutil.SetControllerReference`` writes it."""
    return {
        "apiVersion": JOBFLOW_API_VERSION,
        "kind": JOBFLOW_KIND,
        "name": jobflow.name,
        "uid": jobflow.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def has_record_finalizer(job: VcJob) -> bool:
    return RECORD_FINALIZER in (job.metadata.finalizers or ())


def is_owned_by(job: VcJob, jobflow: JobFlow) -> bool:
    """Whether ``job``'s controller owner reference is this very JobFlow (same UID)."""
    uid = jobflow.metadata.uid
    return uid is not None and any(
        ref.controller and ref.uid == uid for ref in job.metadata.owner_references or ()
    )
