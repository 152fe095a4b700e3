"""The JobTemplate (``flow.volcano.sh/v1alpha1``): a named, reusable vcjob spec.

A flow named ``b`` in a JobFlow runs the JobTemplate named ``b`` in the JobFlow's namespace. The template's
``spec`` *is* a vcjob :class:`~jobflow_core.models.vcjob.JobSpec` (upstream never used its separate
``JobTemplateSpec`` type). Its status lists the vcjobs created from it (``jobDependsOnList``), across every
JobFlow that uses it.
"""

from pydantic import Field

from jobflow_core.models.base import ApiObject, WireModel
from jobflow_core.models.vcjob import JobSpec


class JobTemplateStatus(WireModel):
    job_depends_on_list: list[str] | None = Field(None, alias="jobDependsOnList")


class JobTemplate(ApiObject):
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobTemplateStatus | None = None
