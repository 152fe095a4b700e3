"""``flows[].memoize``: a flow that is not run again when a Completed run with the same key is recent enough.

A memoized flow's key is, by default, a hash of the vcjob it would create, as rendered: the JobTemplate's spec with
the flow's patch, parameters, item and targets' results put in (:mod:`jobflow_core.flows.vcjobs`), and the namespace.
What differs from run to run of the same work is left out, or it would never hit: the JobFlow's name and UID, the
vcjob's name, labels, annotations and owner reference live in its metadata, which is not hashed, and the pod annotations
the engine adds (attempt, item index, iteration) are dropped from the spec first. ``memoize.key`` (CEL, with ``params``,
``targets`` and ``jobflow`` as in a condition) gives the key instead; it is hashed with the namespace and the
JobTemplate's name.

The cache is one ConfigMap per namespace, ``jobflow-memo`` (:data:`~jobflow_core.vocabulary.api.MEMO_CACHE`): readable
with ``kubectl get cm jobflow-memo -o yaml``, cleared by deleting it, kept across handler restarts, never read from
another namespace. Each entry, under its key, is the run that filled it (:class:`Entry`): the vcjob, when it Completed,
its result. At most :data:`MAX_ENTRIES` entries, the oldest dropped first (:func:`with_entry`), and a result of at most
4 KiB (a termination message's own limit), so the ConfigMap stays far below its 1 MiB.

When a memoized flow is about to start, an entry of its key that Completed within ``maxAge`` (default 24h) is
reused: no vcjob is created, the status records the flow as Completed with the entry's result, ``reason: Cached``
and ``cachedFrom`` naming the reused vcjob (:func:`cached_record`), and a Normal event ``Cached`` says so. A
vcjob of a memoized flow that Completed is stored under the key it was created with (its annotation
:data:`~jobflow_core.vocabulary.api.MEMO_KEY`), once its result has been read and before its end is recorded, so a
handler killed in between stores it on the next event. Reruns use the cache like any start. ``forEach`` and ``repeat``
flows cannot be memoized (admission says so).
"""

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from jobflow_core.flows.conditions import compile_error, evaluate_value
from jobflow_core.models import Flow, FlowJobStatus, JobFlow, VcJobPhase, format_time
from jobflow_core.vocabulary.api import ATTEMPT, ITEM_INDEX, ITERATION, MEMO_KEY
from jobflow_core.vocabulary.durations import parse_go_duration
from jobflow_core.vocabulary.spec_errors import SpecError

if TYPE_CHECKING:
    from jobflow_core.planning.observation import Observation

MAX_ENTRIES: Final = 200
MAX_RESULT: Final = 4096
DEFAULT_MAX_AGE: Final = "24h"
PER_RUN_POD_KEYS: Final = (ATTEMPT, ITEM_INDEX, ITERATION, MEMO_KEY)


@dataclass(frozen=True)
class Entry:
    """One memoized run: the vcjob (``<namespace>/<name>``) that Completed, when, and its result."""

    job: str
    completed: datetime
    result: str = ""

    def to_text(self) -> str:
        return json.dumps({"job": self.job, "completed": format_time(self.completed), "result": self.result},
                          separators=(",", ":"), sort_keys=True)

    @staticmethod
    def from_text(text: str) -> "Entry | None":
        """An entry as stored, or None for one that is not (someone edited the ConfigMap): it is not used."""
        try:
            data = json.loads(text)
            completed = datetime.fromisoformat(str(data["completed"]).replace("Z", "+00:00"))
            if completed.tzinfo is None:
                return None
            return Entry(job=str(data["job"]), completed=completed,
                         result=str(data.get("result") or ""))
        except (ValueError, KeyError, TypeError):
            return None


def entries_of(data: Mapping[str, str] | None) -> dict[str, Entry]:
    """The cache ConfigMap's ``data`` as entries by key (unreadable ones left out)."""
    return {key: entry for key, text in (data or {}).items() if (entry := Entry.from_text(text)) is not None}


def with_entry(data: Mapping[str, str] | None, key: str, entry: Entry) -> dict[str, str]:
    """The ConfigMap's ``data`` with ``entry`` stored under ``key``, the oldest entries dropped beyond
    :data:`MAX_ENTRIES`."""
    entries = entries_of(data)
    entries[key] = Entry(entry.job, entry.completed, entry.result[:MAX_RESULT])
    kept = sorted(entries.items(), key=lambda item: (item[1].completed, item[0]))[-MAX_ENTRIES:]
    return {k: e.to_text() for k, e in sorted(kept)}


def spec_key(*, namespace: str, spec: Mapping[str, Any]) -> str:
    """The default key: a hash of the rendered vcjob spec without the engine's per-run pod annotations, and the
    namespace."""
    cleaned = copy.deepcopy(dict(spec))
    for task in cleaned.get("tasks") or ():
        metadata = (task.get("template") or {}).get("metadata")
        if not isinstance(metadata, dict):
            continue
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            for name in PER_RUN_POD_KEYS:
                annotations.pop(name, None)
            if not annotations:
                del metadata["annotations"]
        # Empty whether the engine added it only to carry those annotations or the template wrote ``metadata: {}``:
        # dropped in both cases, or an attempt that carries them (a rerun's) would miss what the first stored.
        if not metadata:
            del task["template"]["metadata"]
    return _hash({"namespace": namespace, "spec": cleaned})


def declared_key(*, namespace: str, template: str, value: str) -> str:
    """The key of a ``memoize.key`` whose value is ``value``."""
    return _hash({"namespace": namespace, "template": template, "key": value})


def _hash(document: Any) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def key_value(flow: Flow, *, variables: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The value of ``memoize.key`` (CEL) over ``variables``, as text, or why it has none."""
    assert flow.memoize is not None and flow.memoize.key is not None
    value, error = evaluate_value(flow.memoize.key, variables=variables)
    if error is not None:
        return None, f'flow "{flow.name}": its memoize.key {flow.memoize.key!r} {error} (fix flows[].memoize.key)'
    return (value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)), None


def max_age(flow: Flow) -> timedelta:
    text = (flow.memoize.max_age if flow.memoize else None) or DEFAULT_MAX_AGE
    return timedelta(seconds=parse_go_duration(text) or parse_go_duration(DEFAULT_MAX_AGE) or 0)


def lookup(entries: Mapping[str, Entry], key: str, *, flow: Flow, now: datetime | None) -> Entry | None:
    """The entry a flow about to start reuses: one of its key that Completed at most ``maxAge`` before ``now``
    (no clock: none)."""
    entry = entries.get(key)
    if entry is None or now is None or entry.completed > now or now - entry.completed > max_age(flow):
        return None
    return entry


def newly_memoized(observation: "Observation") -> list[tuple[str, Entry]]:
    """The runs to store: vcjobs of memoized flows that Completed, whose result is read and whose end the status
    does not record yet, under the key they were created with."""
    found = []
    for view in observation.views:
        if view.flow.memoize is None:
            continue
        for attempt in view.attempts:
            job = attempt.job
            key = (job.metadata.annotations or {}).get(MEMO_KEY) if job is not None else None
            result = observation.results.get(job.name) if job is not None else None
            if key is None or job.phase is not VcJobPhase.COMPLETED or result is None \
                    or (attempt.record is not None and attempt.record.state is VcJobPhase.COMPLETED):
                continue
            ended = job.status.state.last_transition_time if job.status and job.status.state else None
            found.append((key, Entry(job=f"{job.namespace}/{job.name}", completed=ended or observation.now,
                                     result=result)))
    return found


def memo_results_needed(observation: "Observation") -> list[str]:
    """The Completed vcjobs of memoized flows whose result must be read before they are stored."""
    return [job.name for view in observation.views if view.flow.memoize is not None for attempt in view.attempts
            if (job := attempt.job) is not None and job.phase is VcJobPhase.COMPLETED
            and job.name not in observation.results and (job.metadata.annotations or {}).get(MEMO_KEY)
            and not (attempt.record is not None and attempt.record.state is VcJobPhase.COMPLETED)]


def cached_record(*, job_name: str, entry: Entry, now: datetime) -> FlowJobStatus:
    """The record of a flow that reused ``entry`` instead of running: Completed now, with its result."""
    return FlowJobStatus(name=job_name, state=VcJobPhase.COMPLETED, startTimestamp=now, endTimestamp=now,
                         reason="Cached", result=entry.result, cachedFrom=entry.job)


def errors(jobflow: JobFlow) -> list[SpecError]:
    """``memoize`` on a flow that cannot have it, a key that is not CEL, a ``maxAge`` that is not a duration."""
    found = []
    for flow in jobflow.spec.flows or ():
        memo = flow.memoize
        if memo is None:
            continue
        if flow.for_each is not None or flow.repeat is not None:
            found.append(SpecError(code="InvalidMemoize", message=f'flow "{flow.name}": memoize on a '
                                   f'{"forEach" if flow.for_each is not None else "repeat"} flow',
                                   hint="memoize the flows it runs over, or drop memoize"))
        if memo.key is not None and (problem := compile_error(memo.key)) is not None:
            found.append(SpecError(code="InvalidMemoize", message=f'flow "{flow.name}": memoize.key is {problem}',
                                   hint="write a CEL expression, e.g. params.date + '/' + targets.a.resultText"))
        if memo.max_age is not None and not parse_go_duration(memo.max_age):
            found.append(SpecError(code="InvalidMemoize", message=f'flow "{flow.name}": memoize.maxAge '
                                   f"{memo.max_age!r} is not a duration over 0", hint="write it as 30m, 12h, 168h"))
    return found
