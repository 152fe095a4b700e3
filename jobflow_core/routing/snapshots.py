"""Snapshots: the JobFlow and its vcjobs as the event source's watch caches have them, carried in the event.

Event-carried state transfer (issue 25). The event source already watches every JobFlow and every vcjob a JobFlow
created; with each event that makes the handler reconcile a JobFlow it can send that JobFlow and its vcjobs, so the
handler plans without a GET and a LIST. This module is the pure part both sides share: what a snapshot holds, how
big it may be, and how it is signed and checked.

**What it holds.** ``{"jobflow": <the JobFlow>, "vcjobs": [<each vcjob it controls>]}``, trimmed to what the
planner reads (:func:`trim`): no ``managedFields``, no ``kubectl.kubernetes.io/last-applied-configuration``, and
vcjobs without their pod templates. A JobFlow that has not started also gets ``"line"``: the other JobFlows its
queue's admission can count, each as :func:`jobflow_core.queueing.line.line_to_wire` writes it (started ones that
reserve room, older ones still waiting), so that the handler need not list every JobFlow to decide whether it
starts; they are as new as the watch, as the rest of the snapshot. A snapshot larger than :data:`MAX_BYTES` encoded
is not sent: the event then only names the JobFlow, and the handler reads it (and lists the line) as before.

**Who may be believed.** A snapshot counts only when the event carries the signature of its exact body
(:func:`sign`, an HMAC-SHA256 with a key from a Secret the event source and the handler both mount); an unsigned or
badly signed snapshot is ignored and the handler reads the API server, so a forged event still does no harm.

**How consistent it is.** Two watches give no consistent cut: the JobFlow and the vcjobs are each a state the API
server really had, possibly at different moments, and possibly older than the handler's own last write. Nothing
the handler does rests on more than that: its status write is guarded by the snapshot's resourceVersion (an older
JobFlow loses with 409 and the handler re-reads, counted as ``stale``); a create comes only after that guarded
write succeeded in the same attempt, or after a fresh GET showed the snapshot's JobFlow is still the current one
(docs/architecture.md, "A finished step never runs twice": with the write guarded, a vcjob recorded as ended and
deleted since can never look absent and unrecorded); a listed vcjob older than the record of its terminal end
counts as ended (:func:`jobflow_core.vocabulary.phase.outdated_by_record`). To keep the next snapshot from predating the
handler's own write, the handler's answer carries the JobFlow as written and the event source keeps it when it is
newer than what its watch has (:func:`newer`).
"""


import hashlib
import hmac
import json
from typing import Any, Final

MAX_BYTES: Final = 256 * 1024
"""The largest snapshot sent, encoded: far above a diamond's few KB, far below an HTTP request's limits. A larger
JobFlow (a fan-out of thousands with records) is sent by name only."""

SIGNATURE_EXTENSION: Final = "jobflowsig"
"""The CloudEvent extension that carries the signature of the body (an HTTP header ``ce-jobflowsig``)."""
REPLY_EXTENSION: Final = "jobflowreply"
"""Set by our event source: it reads the handler's answer (JobFlows written, JobFlows handed back to it)."""
SCHEME: Final = "v1="

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


def _trim_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    kept = {key: value for key, value in metadata.items() if key != "managedFields"}
    annotations = kept.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        kept["annotations"] = {key: value for key, value in annotations.items() if key != LAST_APPLIED}
    return kept


def trim_jobflow(obj: dict[str, Any]) -> dict[str, Any]:
    """The JobFlow without what the planner never reads (its whole spec and status stay)."""
    return {**obj, "metadata": _trim_metadata(obj.get("metadata") or {})}


def trim_vcjob(obj: dict[str, Any]) -> dict[str, Any]:
    """A vcjob without its pod templates (the planner reads task names, never what runs in them)."""
    spec = obj.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("tasks"), list):
        spec = {**spec, "tasks": [{key: value for key, value in task.items() if key != "template"}
                                  if isinstance(task, dict) else task for task in spec["tasks"]]}
    return {**obj, "metadata": _trim_metadata(obj.get("metadata") or {}), **({"spec": spec} if spec else {})}


def trim(jobflow: dict[str, Any], vcjobs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"jobflow": trim_jobflow(jobflow), "vcjobs": [trim_vcjob(job) for job in vcjobs]}


def sign(key: bytes, body: bytes) -> str:
    """The signature of an event body, for the :data:`SIGNATURE_EXTENSION`."""
    return SCHEME + hmac.new(key, body, hashlib.sha256).hexdigest()


def signed(key: bytes | None, body: bytes, signature: str | None) -> bool:
    """Whether ``signature`` is ours for ``body`` (no key: nothing is ever believed)."""
    return bool(key) and isinstance(signature, str) and hmac.compare_digest(sign(key, body), signature)


def encode(data: dict[str, Any]) -> bytes:
    """The body of an event, byte for byte what is signed and sent."""
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def newer(candidate: dict[str, Any], current: dict[str, Any] | None) -> bool:
    """Whether ``candidate`` (a JobFlow the handler wrote) is a later version than ``current`` (the cache's).

    resourceVersions are opaque strings to clients; the API server's are etcd revisions, decimal integers that
    grow with every write, which is the one thing relied on here. Anything else (not decimal) is not compared, and
    the watch's copy is kept."""
    if current is None:
        return False  # the watch has not seen this JobFlow (or saw it go): never bring one back from a reply
    mine, theirs = ((obj.get("metadata") or {}).get("resourceVersion") for obj in (candidate, current))
    return isinstance(mine, str) and isinstance(theirs, str) and mine.isdecimal() and theirs.isdecimal() \
        and int(mine) > int(theirs)
