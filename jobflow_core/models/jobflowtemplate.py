"""The JobFlowTemplate (``flow.volcano.sh/v1alpha1``, ours): a JobFlow that starts itself.

It holds the spec of a JobFlow (``spec.jobFlow``: its labels, annotations and spec, parameters included) and what
starts a run of it: a cron schedule, CloudEvent triggers, or a user (``kubectl jobflow run``). Each run is a plain
JobFlow, controlled by the template, named deterministically so that a repeated tick or event never starts it twice
(:mod:`jobflow_core.schedules.firing`).

The name and the ``triggers`` list follow volcano#4098's JobFlowTemplate proposal (a template whose runs are
started "by specific events, such as scheduled triggers or triggers based on changes in input data"; its trigger
has ``name``, ``condition``, ``description``, ``enabled``). The schedule fields are Kubernetes CronJob's and Cron
VolcanoJob's, with their names and meaning: ``schedule``, ``timeZone``, ``concurrencyPolicy``
(Allow|Forbid|Replace), ``startingDeadlineSeconds``, ``suspend``, ``successfulJobsHistoryLimit``,
``failedJobsHistoryLimit``; the status's ``active``, ``lastScheduleTime`` and ``lastSuccessfulTime`` too.
"""

from enum import StrEnum

from pydantic import Field

from jobflow_core.models.base import ApiObject, Timestamp, WireModel
from jobflow_core.models.jobflow import JobFlowSpec


class ConcurrencyPolicy(StrEnum):
    """``spec.concurrencyPolicy``: what a scheduled time does while another run is active. Unset: ``Allow``."""

    ALLOW = "Allow"
    FORBID = "Forbid"
    """Skip the new run; it may still start later within ``startingDeadlineSeconds`` (CronJob's rule)."""
    REPLACE = "Replace"
    """Delete the active runs, then start the new one."""


class RunMeta(WireModel):
    """The labels and annotations each run (JobFlow) gets, besides the engine's own."""

    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class RunTemplate(WireModel):
    """``spec.jobFlow``: each run, as a JobFlow's metadata and spec."""

    metadata: RunMeta | None = None
    spec: JobFlowSpec = Field(default_factory=JobFlowSpec)


class Trigger(WireModel):
    """One CloudEvent trigger: an event of ``type`` (and ``source``, when set) whose CEL ``condition`` over the
    event holds starts a run, its ``parameters`` set from the event by CEL expressions."""

    name: str
    description: str | None = None
    enabled: bool | None = None
    """Unset: enabled."""
    type: str
    source: str | None = None
    condition: str | None = None
    parameters: dict[str, str] | None = None


class JobFlowTemplateSpec(WireModel):
    schedule: str | None = None
    time_zone: str | None = Field(None, alias="timeZone")
    concurrency_policy: ConcurrencyPolicy | None = Field(None, alias="concurrencyPolicy")
    starting_deadline_seconds: int | None = Field(None, alias="startingDeadlineSeconds")
    suspend: bool | None = None
    successful_jobs_history_limit: int | None = Field(None, alias="successfulJobsHistoryLimit")
    failed_jobs_history_limit: int | None = Field(None, alias="failedJobsHistoryLimit")
    job_flow: RunTemplate = Field(default_factory=RunTemplate, alias="jobFlow")
    triggers: list[Trigger] | None = None
    deadline_seconds: int | None = Field(None, alias="deadlineSeconds")
    """Ours: each run's ``spec.deadline``, this long after its scheduled time (after its creation when a trigger or a
    person started it); a deadline the run's own spec sets stands."""


class LastRun(WireModel):
    """``status.lastRun``: the run started last, and what started it."""

    name: str
    cause: str
    """``schedule``, ``manual`` or ``event``."""
    scheduled_time: Timestamp | None = Field(None, alias="scheduledTime")
    trigger: str | None = None
    event_id: str | None = Field(None, alias="eventId")
    event_source: str | None = Field(None, alias="eventSource")


class JobFlowTemplateStatus(WireModel):
    active: list[str] | None = None
    """The runs (JobFlow names) that have not ended."""
    active_runs: int | None = Field(None, alias="activeRuns")
    """How many runs ``active`` names, for ``kubectl get jft``'s ACTIVE column (a list prints as JSON there);
    written with ``active`` by :func:`jobflow_core.schedules.firing.with_active` only."""
    last_schedule_time: Timestamp | None = Field(None, alias="lastScheduleTime")
    next_schedule_time: Timestamp | None = Field(None, alias="nextScheduleTime")
    last_successful_time: Timestamp | None = Field(None, alias="lastSuccessfulTime")
    last_missed_time: Timestamp | None = Field(None, alias="lastMissedTime")
    """The latest scheduled time that started no run because it was more than ``startingDeadlineSeconds`` late."""
    missed_runs: int | None = Field(None, alias="missedRuns")
    """Scheduled times that started no run (later than ``startingDeadlineSeconds``, or passed over when several
    were missed at once), counted since the template was created."""
    last_run: LastRun | None = Field(None, alias="lastRun")
    message: str | None = None
    """Why nothing is scheduled (suspended, a schedule that never fires, a run held by Forbid)."""
    observed_generation: int | None = Field(None, alias="observedGeneration")


class JobFlowTemplate(ApiObject):
    spec: JobFlowTemplateSpec = Field(default_factory=JobFlowTemplateSpec)
    status: JobFlowTemplateStatus | None = None
