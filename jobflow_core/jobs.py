"""The vcjob manifest of a flow, built from its JobTemplate exactly as upstream builds it.

For flow ``b`` of JobFlow ``test`` in namespace ``default`` the manifest is::

    apiVersion: batch.volcano.sh/v1alpha1
    kind: Job
    metadata:
      name: test-b
      namespace: default
      labels:      {volcano.sh/createdByJobTemplate: default.b, volcano.sh/createdByJobFlow: default.test}
      annotations: {the same two keys and values}
      ownerReferences: [{apiVersion: flow.volcano.sh/v1alpha1, kind: JobFlow, name: test, uid: <uid>,
                         controller: true, blockOwnerDeletion: true}]
      finalizers: [flow.volcano.sh/keep-record]
    spec: <the JobTemplate's spec, with the flow's patch.jobSpec merged in (jobflow_core.patching)>

The finalizer is ours (upstream has none): a vcjob deleted by a user or by ``ttlSecondsAfterFinished`` is held
until the handler has recorded its final phase in the JobFlow's status, then released (``Plan.releases``).
Without it, a vcjob that completed and vanished before any handler looked would be taken for one that never
finished, and run again (upstream's bug G.3(d)).

The spec is a fresh deep copy of the template's: nothing done to the manifest can reach the template, and every
template field, including ones we do not model, reaches the vcjob.
"""

import copy
from typing import Any

from jobflow_core.models import Flow, JobFlow, JobTemplate
from jobflow_core.api import RECORD_FINALIZER, VCJOB
from jobflow_core.naming import created_by, job_name, owner_reference
from jobflow_core.patching import merge_job_spec


def build_job(jobflow: JobFlow, *, flow: str, template: JobTemplate) -> dict[str, Any]:
    """The vcjob manifest for ``flow`` of ``jobflow``, ready to POST."""
    keys = created_by(jobflow, flow)
    return {
        "apiVersion": VCJOB.api_version,
        "kind": VCJOB.kind,
        "metadata": {
            "name": job_name(jobflow=jobflow.name, flow=flow),
            "namespace": jobflow.namespace,
            "labels": dict(keys),
            "annotations": dict(keys),
            "ownerReferences": [owner_reference(jobflow)],
            "finalizers": [RECORD_FINALIZER],
        },
        "spec": job_spec(template, flow=_flow_named(jobflow, flow)),
    }


def job_spec(template: JobTemplate, *, flow: Flow | None = None) -> dict[str, Any]:
    """The vcjob spec: the template's spec with the flow's ``patch.jobSpec`` merged in (none: verbatim)."""
    patch = flow.patch.job_spec if flow is not None and flow.patch is not None else None
    base = copy.deepcopy(template.spec.to_wire())
    return merge_job_spec(base, patch.to_wire()) if patch is not None else base


def _flow_named(jobflow: JobFlow, name: str) -> Flow | None:
    return next((flow for flow in jobflow.spec.flows or () if flow.name == name), None)
