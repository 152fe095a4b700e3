"""``wait NAME --for=phase=Succeed --timeout=30s``: block until a JobFlow reaches a phase, as ``kubectl wait`` does
for conditions, through the watch API.

One GET, then a watch of that one JobFlow (:mod:`kubectl_jobflow.watching`) from the version read. Exit codes
(:mod:`kubectl_jobflow.exits`): 0 when the phase is reached (kubectl's ``<resource>/<name> condition met``); 1 when
the JobFlow ends in another phase (Failed while waiting for Succeed: waiting longer cannot help, as ``argo wait``
says at once), is deleted, or does not exist; 4 when ``--timeout`` passes first; 5 when the watch is lost.
``--for=delete`` waits until the JobFlow is gone (at once when it does not exist). ``--timeout=0`` looks once;
a negative one waits a week, as kubectl's.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from apiclient.cluster import KubeError
from jobflow_core.vocabulary.api import JOBFLOW
from kubectl_jobflow import exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import resource_of

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context

ENDS = ("Succeed", "Failed")
WEEK = 7 * 86400.0


def _condition(text: str) -> str | None:
    """The phase ``--for`` names, or None for ``delete``."""
    if text == "delete":
        return None
    kind, _, phase = text.partition("=")
    if kind != "phase" or not phase:
        raise CommandError(f"--for={text}: expected phase=PHASE (e.g. phase=Succeed) or delete", code=exits.USAGE)
    return phase


def _phase(jobflow: dict[str, Any]) -> str:
    return ((jobflow.get("status") or {}).get("state") or {}).get("phase") or ""


def run(ctx: Context) -> int:
    from apiclient.follow import follow, merged

    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError("name the JobFlow: kubectl jobflow wait NAME --for=phase=Succeed", code=exits.USAGE)
    wanted = _condition(ctx.args.wait_for)
    timeout = WEEK if ctx.args.timeout < 0 else ctx.args.timeout
    deadline = time.monotonic() + timeout
    shown = f"{resource_of(JOBFLOW)}/{name}"
    try:
        jobflow: dict[str, Any] | None = ctx.cluster.get(JOBFLOW, ctx.namespace, name)
    except KubeError as error:
        if error.status != 404:
            raise
        if wanted is None:
            ctx.say(f"{shown} condition met")
            return exits.OK
        raise CommandError(f'JobFlow "{ctx.namespace}/{name}" not found: check the name and the namespace') from error
    stop = threading.Event()
    changes = merged(follow(ctx.cluster, JOBFLOW, ctx.namespace, field_selector=f"metadata.name={name}",
                            since=jobflow["metadata"]["resourceVersion"], seen=(jobflow,), stop=stop),
                     timeout=1.0, stop=stop)
    while True:
        if jobflow is None:
            if wanted is None:
                ctx.say(f"{shown} condition met")
                return exits.OK
            raise CommandError(f"JobFlow {ctx.namespace}/{name} was deleted before it was {wanted}")
        phase = _phase(jobflow)
        if wanted is not None and phase == wanted:
            ctx.say(f"{shown} condition met")
            return exits.OK
        if wanted is not None and phase in ENDS:
            raise CommandError(f"JobFlow {ctx.namespace}/{name} ended {phase}, not {wanted}"
                               + _reason(jobflow))
        if time.monotonic() >= deadline:
            raise CommandError(f"timed out waiting for the condition on jobflows/{name} (it is "
                               f"{phase or 'without status'}; raise --timeout)", code=exits.TIMED_OUT)
        event = next(changes)
        if event is not None:
            _, kind, obj = event
            jobflow = None if kind == "DELETED" else obj


def _reason(jobflow: dict[str, Any]) -> str:
    state = (jobflow.get("status") or {}).get("state") or {}
    said = ": ".join(part for part in (state.get("reason"), state.get("message")) if part)
    return f" ({said})" if said else ""
