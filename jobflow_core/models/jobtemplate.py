"""The JobTemplate (``flow.volcano.sh/v1alpha1``): a named, reusable vcjob spec.

A flow named ``b`` in a JobFlow runs the JobTemplate named ``b`` in the JobFlow's namespace. The template's
``spec`` *is* a vcjob :class:`~jobflow_core.models.vcjob.JobSpec` (upstream never used its separate
``JobTemplateSpec`` type). Its status lists the vcjobs created from it (``jobDependsOnList``), across every
JobFlow that uses it.
"""

from pydantic import Field

from jobflow_core.models.base import ApiObject, Timestamp, WireModel
from jobflow_core.models.vcjob import Cost, JobSpec


class RecentRun(WireModel):
    """Ours: one finished vcjob made from the template, kept in a bounded window
    (:mod:`jobflow_core.insight.template_stats`)."""

    name: str
    uid: str
    outcome: str
    """``Succeeded`` or ``Failed``."""
    seconds: int
    """From the vcjob's creation to its end."""
    end_time: Timestamp | None = Field(None, alias="endTime")
    reason: str | None = None


class LastFailure(WireModel):
    job: str
    reason: str | None = None
    time: Timestamp | None = None


class JobTemplateStatus(WireModel):
    """Upstream's ``jobDependsOnList``, then ours: statistics over every vcjob made from the template, by any
    JobFlow (:mod:`jobflow_core.insight.template_stats`)."""

    job_depends_on_list: list[str] | None = Field(None, alias="jobDependsOnList")
    runs: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    failure_rate: float | None = Field(None, alias="failureRate")
    duration_p50_seconds: int | None = Field(None, alias="durationP50Seconds")
    duration_p90_seconds: int | None = Field(None, alias="durationP90Seconds")
    last_failure: LastFailure | None = Field(None, alias="lastFailure")
    recent_runs: list[RecentRun] | None = Field(None, alias="recentRuns")
    cost: Cost | None = None
    """Ours: the cost of every counted run made from the template, added up (:mod:`jobflow_core.insight.cost`)."""


class JobTemplate(ApiObject):
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobTemplateStatus | None = None
