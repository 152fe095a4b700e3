"""Failure rate and durations per JobTemplate: statistics over every vcjob made from it, kept in its status.

The handler stays stateless: the statistics live in the JobTemplate's status, and are updated when a JobFlow's
reconcile sees one of its vcjobs ended that its previous status did not record as ended
(:func:`newly_ended`). The update (:func:`record_runs`) happens before the JobFlow's status write that records the
end, so a handler killed between the two counts the run on the next event instead of losing it.

**Why a replayed event never counts twice.** Each counted run is identified by its vcjob's UID. The status keeps
the :data:`WINDOW` most recent runs (``recentRuns``, ordered by end time, then UID), and a run is counted only if
its UID is not among them and it ends after the oldest of them (or the window is not full). A replay of a run
still in the window is recognised by its UID; a run that left the window is older than everything in it, so it
fails the end-time test. (The price: a run first seen after :data:`WINDOW` later runs have ended is not counted.)
Counts (``runs``, ``succeeded``, ``failed``) are cumulative; ``failureRate`` is ``failed / runs``; the duration
percentiles (creation to end, whole seconds, nearest rank) and the ``lastFailure`` are over the window; ``cost``
(:mod:`jobflow_core.insight.cost`) is cumulative, each counted run's added once.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from math import ceil
from typing import TYPE_CHECKING

from jobflow_core.flows.vcjobs import gang_of
from jobflow_core.insight.cost import job_cost
from jobflow_core.insight.cost import total as total_cost
from jobflow_core.models import Cost, JobTemplateStatus, LastFailure, RecentRun, VcJob
from jobflow_core.vocabulary.naming import template_name, template_of
from jobflow_core.vocabulary.phase import FlowOutcome, is_final, outcome_of_phase

if TYPE_CHECKING:
    from jobflow_core.planning.observation import Observation

WINDOW = 20
"""Runs kept per JobTemplate for percentiles and replay detection."""


@dataclass(frozen=True)
class EndedJob:
    """One ended vcjob, to count in its JobTemplate's statistics."""

    template: str
    name: str
    uid: str
    outcome: FlowOutcome
    seconds: int
    end_time: datetime
    reason: str | None = None
    cost: Cost | None = None


def ended_job(job: VcJob, *, template: str) -> EndedJob | None:
    """The run of an ended vcjob (None while it has not ended, or without the times a run needs)."""
    state = job.status.state if job.status else None
    created = job.metadata.creation_timestamp
    if not is_final(job.phase) or state is None or state.last_transition_time is None or created is None \
            or job.metadata.uid is None:
        return None
    outcome = outcome_of_phase(job.phase)
    assert outcome is not None
    seconds = max(0, int((state.last_transition_time - created).total_seconds()))
    return EndedJob(template=template, name=job.name, uid=job.metadata.uid, outcome=outcome, seconds=seconds,
               end_time=state.last_transition_time,
               reason=(state.reason or job.phase.value) if outcome is FlowOutcome.FAILED else None,
               cost=job_cost(job, gang_of(job)))


def record_runs(status: JobTemplateStatus | None, runs: Iterable[EndedJob]) -> JobTemplateStatus:
    """``status`` with ``runs`` counted, each at most once ever (see the module docstring)."""
    status = status or JobTemplateStatus()
    recent = list(status.recent_runs or ())
    counts = {"runs": status.runs or 0, "succeeded": status.succeeded or 0, "failed": status.failed or 0}
    cost = status.cost
    for run in sorted(runs, key=lambda r: (r.end_time, r.uid)):
        if any(kept.uid == run.uid for kept in recent):
            continue
        if len(recent) >= WINDOW and (run.end_time, run.uid) <= _key(recent[0]):
            continue
        recent.append(RecentRun(name=run.name, uid=run.uid, outcome=run.outcome.value, seconds=run.seconds,
                                end_time=run.end_time, reason=run.reason))
        recent.sort(key=_key)
        del recent[:-WINDOW]
        counts["runs"] += 1
        cost = total_cost([cost, run.cost])
        counts["succeeded" if run.outcome is FlowOutcome.SUCCEEDED else "failed"] += 1
    if not counts["runs"]:
        return status
    durations = sorted(run.seconds for run in recent)
    failures = [run for run in recent if run.outcome == FlowOutcome.FAILED.value]
    last = failures[-1] if failures else None
    return status.model_copy(update={
        "runs": counts["runs"], "succeeded": counts["succeeded"], "failed": counts["failed"],
        "failure_rate": round(counts["failed"] / counts["runs"], 4),
        "duration_p50_seconds": _rank(durations, 50), "duration_p90_seconds": _rank(durations, 90),
        "last_failure": LastFailure(job=last.name, reason=last.reason, time=last.end_time) if last
        else status.last_failure,
        "recent_runs": recent,
        "cost": cost,
    })


def _key(run: RecentRun) -> tuple[datetime, str]:
    assert run.end_time is not None
    return run.end_time, run.uid


def _rank(ordered: list[int], q: int) -> int | None:
    """The nearest-rank percentile of an ordered list."""
    return ordered[max(0, ceil(len(ordered) * q / 100) - 1)] if ordered else None


def newly_ended(observation: "Observation") -> dict[str, list[EndedJob]]:
    """By JobTemplate: the runs of the vcjobs this JobFlow's previous status did not yet record as ended."""
    found: dict[str, list[EndedJob]] = {}
    for view in observation.views:
        for attempt in view.attempts:
            job = attempt.job
            if job is None or not is_final(job.phase) or (attempt.record and is_final(attempt.record.state)) \
                    or view.flow.job_flow is not None:  # a child JobFlow: no JobTemplate
                continue
            template = template_of(job) or template_name(view.flow)
            run = ended_job(job, template=template)
            if run is not None:
                found.setdefault(template, []).append(run)
    return found


def expected_seconds(status: JobTemplateStatus | None) -> int | None:
    """How long a vcjob of this template is expected to take: its median, None when it never ran."""
    return status.duration_p50_seconds if status else None

