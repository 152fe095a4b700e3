"""A JobFlowTemplate's runs: what each is named, what it is made of, and what the engine reads back from one.

A run is a plain JobFlow. What started it decides its name, and the name is what makes a start idempotent: the
API server refuses a second object of the same name, so a tick, an event or a command delivered twice starts one
run (the second create is answered 409 AlreadyExists, which the shell takes as done).

================  ====================================  ===================================================
started by        name                                  so that
================  ====================================  ===================================================
the schedule      ``<template>-<minutes since epoch>``  each scheduled minute has one run (CronJob's names)
a CloudEvent      ``<template>-e<10 hex digits>``       the same event (``source`` and ``id``) starts one
by hand           ``<template>-m<seconds since epoch>``  each ``kubectl jobflow run`` is a new run
================  ====================================  ===================================================

Each run carries the label :data:`~jobflow_core.vocabulary.api.RUN_OF` (the template's name; ``kubectl jobflow history``
lists by it), annotations saying what started it (:data:`~jobflow_core.vocabulary.api.RUN_CAUSE`, the scheduled time,
the trigger and the event's id and source), and a controller owner reference to the template: deleting the template
deletes its runs, and their vcjobs with them.
"""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from jobflow_core.models import JobFlowPhase, JobFlowTemplate, Parameter, format_time
from jobflow_core.vocabulary.api import (EVENT_ID, EVENT_SOURCE, JOBFLOW, JOBFLOWTEMPLATE, RUN_CAUSE, RUN_OF,
                                         RUN_TRIGGER, SCHEDULED_TIME)

LONGEST_SUFFIX = "-m9999999999"
"""The longest suffix a run's name gets (by hand, until the year 2286): admission checks the template's flows
against a run of this name, so that every vcjob name of every run is valid."""


class Cause(StrEnum):
    SCHEDULE = "schedule"
    MANUAL = "manual"
    EVENT = "event"


def scheduled_run_name(template: str, scheduled: datetime) -> str:
    return f"{template}-{int(scheduled.timestamp()) // 60}"


def manual_run_name(template: str, now: datetime) -> str:
    return f"{template}-m{int(now.timestamp())}"


def event_run_name(template: str, *, trigger: str, source: str, event_id: str) -> str:
    """The run of one event: CloudEvents are unique by ``source`` and ``id`` (the spec's rule)."""
    digest = hashlib.sha256("\0".join((trigger, source, event_id)).encode()).hexdigest()[:10]
    return f"{template}-e{digest}"


def run_of_template_selector(template: str) -> str:
    return f"{RUN_OF}={template}"


@dataclass(frozen=True)
class Start:
    """One run to start: its name, what started it, and the parameters it sets."""

    name: str
    cause: Cause
    scheduled: datetime | None = None
    trigger: str | None = None
    event_id: str | None = None
    event_source: str | None = None
    parameters: Mapping[str, str] | None = None

    def annotations(self) -> dict[str, str]:
        found = {RUN_CAUSE: self.cause.value, SCHEDULED_TIME: format_time(self.scheduled) if self.scheduled else None,
                 RUN_TRIGGER: self.trigger, EVENT_ID: self.event_id, EVENT_SOURCE: self.event_source}
        return {key: value for key, value in found.items() if value is not None}


class UnknownParameter(ValueError):
    """A run sets a parameter the template does not declare; the message names it and the declared ones."""


def run_manifest(template: JobFlowTemplate, start: Start, *, now: datetime | None = None) -> dict[str, Any]:
    """The JobFlow of a run: the template's ``spec.jobFlow`` with the run's parameters, labels and annotations and
    the template as its controller; with ``deadlineSeconds``, its deadline after the scheduled time (``now`` for a
    run nothing scheduled)."""
    declared = list(template.spec.job_flow.spec.parameters or ())
    names = {parameter.name for parameter in declared}
    unknown = sorted(set(start.parameters or {}) - names)
    if unknown:
        raise UnknownParameter(f"JobFlowTemplate {template.name} declares no parameter {', '.join(unknown)} "
                               f"(it declares: {', '.join(sorted(names)) or 'none'}); add it to "
                               "spec.jobFlow.spec.parameters, or set only declared ones")
    values = dict(start.parameters or {})
    parameters = [Parameter(name=p.name, value=values.get(p.name, p.value)) for p in declared]
    update: dict[str, Any] = {"parameters": parameters} if declared else {}
    base = start.scheduled or now
    if template.spec.deadline_seconds and base is not None and template.spec.job_flow.spec.deadline is None:
        update["deadline"] = base + timedelta(seconds=template.spec.deadline_seconds)
    spec = template.spec.job_flow.spec.model_copy(update=update)
    meta = template.spec.job_flow.metadata
    return {
        "apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind,
        "metadata": {
            "name": start.name, "namespace": template.namespace,
            "labels": {**((meta.labels if meta else None) or {}), RUN_OF: template.name},
            "annotations": {**((meta.annotations if meta else None) or {}), **start.annotations()},
            "ownerReferences": [{"apiVersion": JOBFLOWTEMPLATE.api_version, "kind": JOBFLOWTEMPLATE.kind,
                                 "name": template.name, "uid": template.metadata.uid or "", "controller": True,
                                 "blockOwnerDeletion": True}],
        },
        "spec": spec.to_wire(),
    }


@dataclass(frozen=True)
class Run:
    """What the schedule reads of one run (a JobFlow labelled with the template's name)."""

    name: str
    phase: JobFlowPhase | None
    created: datetime | None
    ended: datetime | None
    """When its last vcjob ended, for a run that ended (``lastSuccessfulTime``)."""
    cause: str | None
    scheduled: datetime | None
    deleting: bool = False
    trigger: str | None = None
    event_id: str | None = None
    event_source: str | None = None

    @property
    def finished(self) -> bool:
        return self.phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED)


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def run_from(jobflow: Mapping[str, Any]) -> Run:
    """A run as a JobFlow of the API server (JSON as listed; any shape tolerated: a wrong field counts as
    absent)."""
    meta = jobflow.get("metadata") or {}
    status = jobflow.get("status") or {}
    annotations = meta.get("annotations") or {}
    phase_text = (status.get("state") or {}).get("phase")
    phase = JobFlowPhase(phase_text) if phase_text in JobFlowPhase.__members__.values() else None
    ends = [end for end in (_time(job.get("endTimestamp")) for job in status.get("jobStatusList") or ()
                            if isinstance(job, dict)) if end is not None]
    return Run(name=meta.get("name", ""), phase=phase, created=_time(meta.get("creationTimestamp")),
               ended=max(ends) if ends and phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED) else None,
               cause=annotations.get(RUN_CAUSE), scheduled=_time(annotations.get(SCHEDULED_TIME)),
               deleting=meta.get("deletionTimestamp") is not None, trigger=annotations.get(RUN_TRIGGER),
               event_id=annotations.get(EVENT_ID), event_source=annotations.get(EVENT_SOURCE))
