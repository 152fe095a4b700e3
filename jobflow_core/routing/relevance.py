"""Which changes to an object can matter to the engine, and which JobFlow a vcjob's change is about.

The event source sees every update of every watched object, and most of them cannot change any decision: Volcano
rewrites a vcjob's status for pod counts the engine never reads, and each JobFlow or JobTemplate status write of
the engine's own comes back as an update. Forwarding those costs a reconcile each (two API reads) and nothing
else. So the event source compares, for each update, the part of the object the engine reads
(:func:`relevant_part`) with that of the version before, and forwards only updates where it differs. Adds,
deletes and the periodic resync are always forwarded: the filter only ever drops an update whose predecessor was
forwarded with the same relevant part.

What the engine reads (the rest of the code is the proof; ``tests/unit/test_relevance.py`` keeps the list honest):

==============  ==========================================================================================
object          relevant
==============  ==========================================================================================
JobFlow         everything but ``status`` (the engine writes it; a wake-up it asks for comes from the
                event source's rechecker, which sees every version) and the bookkeeping metadata
JobTemplate     everything but ``status`` (ours: statistics and ``jobDependsOnList``) and the bookkeeping
JobFlowTemplate everything but ``status`` (the engine writes it) and the bookkeeping
vcjob           metadata (labels, annotations, finalizers, deletion, owners) and spec, and of the status the
                phase (``state``), ``conditions``, ``taskStatusCount``, ``retryCount``, ``runningDuration``;
                not the pod counts (``pending``, ``running``, ...), ``version``, ``minAvailable`` or
                ``controlledResources``
==============  ==========================================================================================

Bookkeeping metadata: ``resourceVersion``, ``managedFields`` and ``generation`` (which follows the spec).

Not every forwarded change is urgent (:func:`may_wait`). Volcano moves a new vcjob through three versions within
about 40 ms (created, ``Pending``, ``Pending`` with its pod counted), and a vcjob that is not final cannot start a
dependent through its phase; so such a change may wait a moment for the next one and both be handled by one
reconcile. Neither can an ended vcjob's later updates (Volcano adds its running duration a moment after it ended).
A vcjob entering a final phase (a dependent may start now), anything about a JobFlow itself, and a delete never
wait.
"""

import json
from collections.abc import Mapping
from typing import Any

from jobflow_core.models import VcJobPhase
from jobflow_core.routing.concerns import controller_name
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB, ApiType
from jobflow_core.vocabulary.phase import is_final

BOOKKEEPING = frozenset({"resourceVersion", "managedFields", "generation"})
VCJOB_STATUS_READ = ("state", "conditions", "taskStatusCount", "retryCount", "runningDuration")


def relevant_part(api_type: ApiType, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``obj`` (as the API server sends it) that the engine reads; see the table above."""
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in BOOKKEEPING}
    part = {k: v for k, v in obj.items() if k not in ("metadata", "status")} | {"metadata": metadata}
    if api_type is VCJOB:
        status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
        part["status"] = {k: status[k] for k in VCJOB_STATUS_READ if k in status}
    return part


def fingerprint(api_type: ApiType, obj: Mapping[str, Any]) -> int:
    """A small stand-in for :func:`relevant_part`, equal for equal parts (kept per object by the event source)."""
    return hash(json.dumps(relevant_part(api_type, obj), sort_keys=True, separators=(",", ":"), default=str))


def jobflow_of_change(api_type: ApiType, obj: Mapping[str, Any]) -> str | None:
    """The JobFlow a change is about: a JobFlow's own name, or the JobFlow a vcjob names as its controller (its
    ownerReference); None for JobTemplates and for vcjobs no JobFlow controls."""
    if api_type is JOBFLOW:
        name = (obj.get("metadata") or {}).get("name")
        return name if isinstance(name, str) else None
    if api_type is VCJOB:
        return controller_name(obj)
    return None



def phase_of(obj: Mapping[str, Any]) -> str | None:
    """A vcjob's ``status.state.phase`` as sent, None when it has none (yet)."""
    status = obj.get("status")
    state = status.get("state") if isinstance(status, Mapping) else None
    phase = state.get("phase") if isinstance(state, Mapping) else None
    return phase if isinstance(phase, str) else None


def may_wait(api_type: ApiType, obj: Mapping[str, Any], *, deleted: bool, previous_phase: str | None) -> bool:
    """Whether a change can wait a moment to be handled together with the next (see the module docstring): the
    add or update of a vcjob whose phase is not final, or is the final phase already forwarded before
    (``previous_phase``: Volcano adds the running duration to an ended vcjob a moment after it ended)."""
    if api_type is not VCJOB or deleted:
        return False
    phase = phase_of(obj)
    try:
        return not is_final(VcJobPhase(phase or "")) or phase == previous_phase
    except ValueError:  # a phase this Volcano version does not have: do not hold what we cannot judge
        return False
