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
    spec: <the JobTemplate's spec, unchanged>

The spec is a fresh deep copy of the template's: nothing done to the manifest can reach the template, and every
template field, including ones we do not model, reaches the vcjob.
"""

import copy
from typing import Any

from jobflow_core.models import JobFlow, JobTemplate
from jobflow_core.naming import JOB_API_VERSION, JOB_KIND, created_by, job_name, owner_reference


def build_job(jobflow: JobFlow, *, flow: str, template: JobTemplate) -> dict[str, Any]:
    """The vcjob manifest for ``flow`` of ``jobflow``, ready to POST."""
    keys = created_by(jobflow, flow)
    return {
        "apiVersion": JOB_API_VERSION,
        "kind": JOB_KIND,
        "metadata": {
            "name": job_name(jobflow=jobflow.name, flow=flow),
            "namespace": jobflow.namespace,
            "labels": dict(keys),
            "annotations": dict(keys),
            "ownerReferences": [owner_reference(jobflow)],
        },
        "spec": job_spec(template),
    }


def job_spec(template: JobTemplate) -> dict[str, Any]:
    """The vcjob spec: the template's spec, verbatim, as upstream.

    This is where ``flow.patch.jobSpec`` will be merged in. Mind the CRD defaults the API server injects into
    every ``patch.jobSpec`` (``queue: default``, ``maxRetry: 3``): they are not user intent (reference A.3, G.2).
    """
    return copy.deepcopy(template.spec.to_wire())
