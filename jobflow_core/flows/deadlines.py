"""Deadlines and timeouts: when time alone ends a wait or a vcjob.

Three clocks, all optional, all measured against the shell's ``now`` (the observation's) and the API server's
timestamps, which have one-second precision:

* ``spec.activeDeadlineSeconds``: from the JobFlow's creation. Once it has passed before every flow ended, the
  JobFlow is ``Failed`` (``DeadlineExceeded``), nothing new starts, and every vcjob that still runs is aborted.
* ``flows[].timeoutSeconds``: from the creation of each attempt's vcjob. An attempt still running then is aborted;
  it ends Aborted, which fails the flow unless ``retry`` runs it again.
* ``dependsOn.probe.timeoutSeconds``: from the creation of the last of the flow's targets' vcjobs. A probe that has
  not passed by then never will as far as the JobFlow is concerned: the flow is Skipped.

Aborting goes through Volcano (a ``bus.volcano.sh`` Command ``AbortJob``, as ``vcctl job suspend`` sends), so its
job controller stops the pods and the vcjob ends ``Aborted``, a phase the status already records.

Nothing wakes the handler when a clock runs out, so while one is pending the status asks to be looked at again
(``status.recheckSeconds``, honoured like ``waitingFlows[].recheckSeconds``): :func:`recheck_seconds` of the clock,
a tenth of it, between 1 and 30 seconds, so the value is the same at every reconcile and writes nothing new.
"""

import math
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Final

from jobflow_core.models import Flow, JobFlow, VcJob

MAX_RECHECK_SECONDS: Final = 30


def after(start: datetime | None, seconds: int | None) -> datetime | None:
    """``start`` plus ``seconds``; None when either is unknown."""
    return None if start is None or seconds is None else start + timedelta(seconds=seconds)


def jobflow_deadline(jobflow: JobFlow) -> datetime | None:
    return after(jobflow.metadata.creation_timestamp, jobflow.spec.active_deadline_seconds)


def attempt_deadline(flow: Flow, job: VcJob) -> datetime | None:
    return after(job.metadata.creation_timestamp, flow.timeout_seconds)


def probe_deadline(flow: Flow, targets: Iterable[VcJob | None]) -> datetime | None:
    """When ``flow``'s probe gives up: its timeout after the last target's vcjob was created (None while a target
    has no vcjob, or without a timeout)."""
    probe = flow.depends_on.probe if flow.depends_on else None
    jobs = list(targets)
    if probe is None or probe.timeout_seconds is None or not jobs or any(job is None for job in jobs):
        return None
    created = [job.metadata.creation_timestamp for job in jobs if job is not None]
    return after(max(created), probe.timeout_seconds) if None not in created else None


def passed(deadline: datetime | None, now: datetime | None) -> bool:
    return deadline is not None and now is not None and now >= deadline


def recheck_seconds(seconds: int) -> int:
    """How often to look again while a clock of ``seconds`` runs (see the module docstring)."""
    return max(1, min(MAX_RECHECK_SECONDS, math.ceil(seconds / 10)))
