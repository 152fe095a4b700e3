"""Pydantic models of the API objects the core reads and writes: JobFlow, JobTemplate and the vcjob.

They mirror the CRDs field for field (``alias`` = JSON name); :mod:`jobflow_core.models.base` explains how
they parse, dump and round-trip. The bottom room: it imports nothing of the rest of the core.

The JobFlowTemplate's models are built on first use (``from jobflow_core.models import JobFlowTemplate`` works as
for the others, :func:`__getattr__`): building them takes some milliseconds that a handler woken from zero for a
JobFlow's event would pay for nothing (``tests/unit/test_cold_start_imports.py``).
"""

from typing import Any

from jobflow_core.models.base import (
    DEFAULT_NAMESPACE,
    ObjectMeta,
    OwnerReference,
    ApiObject,
    Timestamp,
    WireModel,
    format_time,
)
from jobflow_core.models.jobflow import (
    AwaitedOutcome,
    Backoff,
    BackoffPolicy,
    BackoffType,
    FailurePolicy,
    DependsOn,
    Flow,
    FlowCondition,
    FlowJobStatus,
    FlowState,
    HttpGet,
    HttpHeader,
    JobFlow,
    JobFlowPhase,
    JobFlowSpec,
    JobFlowStatus,
    QueueStatus,
    JobRunningHistory,
    Patch,
    Probe,
    RetainPolicy,
    Notification,
    Notifications,
    Rerun,
    Retry,
    RetryPolicy,
    RetryStrategy,
    ForEach,
    Memoize,
    Parameter,
    Range,
    Estimate,
    FanOutStatus,
    Repeat,
    SkippedFlow,
    TaskStatus,
    TcpSocket,
    WaitingFlow,
)
from jobflow_core.models.jobtemplate import JobTemplate, JobTemplateStatus, LastFailure, RecentRun
from jobflow_core.models.vcjob import (
    JobCondition,
    JobSpec,
    Cost,
    JobState,
    JobStatus,
    LifecyclePolicy,
    NetworkTopologySpec,
    TaskDependsOn,
    TaskSpec,
    TaskState,
    VcJob,
    VcJobPhase,
    VolumeSpec,
)

__all__ = [
    "ConcurrencyPolicy",
    "JobFlowTemplate",
    "JobFlowTemplateSpec",
    "JobFlowTemplateStatus",
    "LastRun",
    "RunMeta",
    "RunTemplate",
    "Trigger",
    "AwaitedOutcome",
    "Backoff",
    "BackoffPolicy",
    "BackoffType",
    "Notification",
    "Notifications",
    "Rerun",
    "Retry",
    "RetryPolicy",
    "RetryStrategy",
    "ForEach",
    "Memoize",
    "Parameter",
    "Range",
    "Estimate",
    "FanOutStatus",
    "Repeat",
    "FailurePolicy",
    "SkippedFlow",
    "DEFAULT_NAMESPACE",
    "DependsOn",
    "Flow",
    "FlowCondition",
    "FlowJobStatus",
    "FlowState",
    "HttpGet",
    "HttpHeader",
    "JobCondition",
    "JobFlow",
    "JobFlowPhase",
    "JobFlowSpec",
    "JobFlowStatus",
    "QueueStatus",
    "JobRunningHistory",
    "JobSpec",
    "JobState",
    "JobStatus",
    "JobTemplate",
    "JobTemplateStatus",
    "LastFailure",
    "RecentRun",
    "LifecyclePolicy",
    "NetworkTopologySpec",
    "ObjectMeta",
    "OwnerReference",
    "Patch",
    "Probe",
    "ApiObject",
    "RetainPolicy",
    "TaskDependsOn",
    "TaskSpec",
    "TaskState",
    "TaskStatus",
    "TcpSocket",
    "Timestamp",
    "VcJob",
    "VcJobPhase",
    "Cost",
    "VolumeSpec",
    "WaitingFlow",
    "WireModel",
    "format_time",
]

_OF_JOBFLOWTEMPLATE = ("ConcurrencyPolicy", "JobFlowTemplate", "JobFlowTemplateSpec", "JobFlowTemplateStatus", "LastRun",
                       "RunMeta", "RunTemplate", "Trigger")


def __getattr__(name: str) -> Any:
    """The JobFlowTemplate's models, imported the first time one is asked for."""
    if name in _OF_JOBFLOWTEMPLATE:
        from jobflow_core.models import jobflowtemplate

        return getattr(jobflowtemplate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
