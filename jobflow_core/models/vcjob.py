"""The Volcano job (``batch.volcano.sh/v1alpha1`` ``Job``, "vcjob"): what a flow runs.

A JobFlow never runs pods itself. Each flow becomes one vcjob whose ``spec`` is the JobTemplate's spec, and the
Volcano job controller takes it from there. The JobFlow only *reads* a vcjob back: its phase
(``status.state.phase``), when it changed (``lastTransitionTime``, ``conditions``), how often it restarted
(``retryCount``) and how its tasks are doing (``taskStatusCount``).

The spec models exist so that a JobTemplate spec can be checked and, later, patched. They must never lose
anything on the way from template to vcjob, so every one of them keeps unknown fields, and the pod template
stays a plain dict: we pass it through, we do not interpret it.

The phases and what they mean are in reference A.4; how a flow reads them is in :mod:`jobflow_core.vocabulary.phase`.
"""

from enum import StrEnum
from typing import Any

from pydantic import Field

from jobflow_core.models.base import ApiObject, Timestamp, WireModel


class VcJobPhase(StrEnum):
    """``JobPhase``. ``NEW`` ("") is a vcjob that exists but the Volcano controller has not seen yet."""

    NEW = ""
    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


class VolumeSpec(WireModel):
    mount_path: str | None = Field(None, alias="mountPath")
    volume_claim_name: str | None = Field(None, alias="volumeClaimName")
    volume_claim: dict[str, Any] | None = Field(None, alias="volumeClaim")


class LifecyclePolicy(WireModel):
    """What the job controller does on an event or exit code; ``timeout`` is a Go duration string."""

    action: str | None = None
    event: str | None = None
    events: list[str] | None = None
    exit_code: int | None = Field(None, alias="exitCode")
    timeout: str | None = None


class NetworkTopologySpec(WireModel):
    mode: str | None = None
    highest_tier_allowed: int | None = Field(None, alias="highestTierAllowed")
    highest_tier_name: str | None = Field(None, alias="highestTierName")


class TaskDependsOn(WireModel):
    """Task-level ordering inside one vcjob (not to be confused with a flow's ``dependsOn``)."""

    name: list[str] | None = None
    iteration: str | None = None


class TaskSpec(WireModel):
    """One task of a vcjob; ``template`` is a ``PodTemplateSpec`` kept verbatim."""

    name: str | None = None
    replicas: int | None = None
    min_available: int | None = Field(None, alias="minAvailable")
    max_retry: int | None = Field(None, alias="maxRetry")
    template: dict[str, Any] | None = None
    policies: list[LifecyclePolicy] | None = None
    topology_policy: str | None = Field(None, alias="topologyPolicy")
    depends_on: TaskDependsOn | None = Field(None, alias="dependsOn")
    partition_policy: dict[str, Any] | None = Field(None, alias="partitionPolicy")


class JobSpec(WireModel):
    """The vcjob spec, which is also the whole ``spec`` of a JobTemplate."""

    scheduler_name: str | None = Field(None, alias="schedulerName")
    min_available: int | None = Field(None, alias="minAvailable")
    volumes: list[VolumeSpec] | None = None
    tasks: list[TaskSpec] | None = None
    policies: list[LifecyclePolicy] | None = None
    plugins: dict[str, list[str] | None] | None = None
    running_estimate: str | None = Field(None, alias="runningEstimate")
    queue: str | None = None
    max_retry: int | None = Field(None, alias="maxRetry")
    ttl_seconds_after_finished: int | None = Field(None, alias="ttlSecondsAfterFinished")
    priority_class_name: str | None = Field(None, alias="priorityClassName")
    min_success: int | None = Field(None, alias="minSuccess")
    network_topology: NetworkTopologySpec | None = Field(None, alias="networkTopology")


class Cost(WireModel):
    """Ours: what a run held, requests times seconds (:mod:`jobflow_core.insight.cost`)."""

    cpu_seconds: float | None = Field(None, alias="cpuSeconds")
    """CPU cores x seconds."""
    memory_gib_seconds: float | None = Field(None, alias="memoryGiBSeconds")
    gpu_seconds: float | None = Field(None, alias="gpuSeconds")
    """``nvidia.com/gpu`` x seconds."""


class JobState(WireModel):
    phase: VcJobPhase | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: Timestamp | None = Field(None, alias="lastTransitionTime")


class TaskState(WireModel):
    """Pod counts of one task by pod phase: ``{"phase": {"Running": 2, "Succeeded": 1}}``."""

    phase: dict[str, int] | None = None


class JobCondition(WireModel):
    """One entry of the vcjob's phase history: the phase it entered (``status``) and when."""

    status: VcJobPhase
    last_transition_time: Timestamp | None = Field(None, alias="lastTransitionTime")


class JobStatus(WireModel):
    """The vcjob status; ``runningDuration`` is a Go duration string such as ``"2m56s"``."""

    state: JobState | None = None
    min_available: int | None = Field(None, alias="minAvailable")
    task_status_count: dict[str, TaskState] | None = Field(None, alias="taskStatusCount")
    pending: int | None = None
    running: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    terminating: int | None = None
    unknown: int | None = None
    version: int | None = None
    retry_count: int | None = Field(None, alias="retryCount")
    running_duration: str | None = Field(None, alias="runningDuration")
    conditions: list[JobCondition] | None = None
    controlled_resources: dict[str, str] | None = Field(None, alias="controlledResources")


class VcJob(ApiObject):
    spec: JobSpec | None = None
    status: JobStatus | None = None

    @property
    def phase(self) -> VcJobPhase:
        """The current phase; ``NEW`` until the Volcano controller has written a status."""
        state = self.status.state if self.status else None
        return state.phase if state and state.phase is not None else VcJobPhase.NEW
