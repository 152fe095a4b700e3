"""What the watches have seen of each JobFlow and its vcjobs: the source of the snapshots events carry.

The watchers note every change here (forwarded or not, so the cache is as new as the watch); the sender asks for a
JobFlow's snapshot (:mod:`jobflow_core.snapshots`) when it encodes an event about that JobFlow or one of its vcjobs,
so the snapshot is as new as it can be at the moment it leaves. The handler's answer brings back the JobFlows it
wrote (:meth:`WatchCache.written`): a status write of our own can reach this process by the answer before it does by
the watch, and the next snapshot of that JobFlow must not be older than it (:func:`jobflow_core.snapshots.newer`).

Objects are kept trimmed (no ``managedFields``, no pod templates): at 1,000 diamonds, 5,000 vcjobs take a few MB.

Each snapshot also says whether a vcjob of its JobFlow may have been deleted after the JobFlow's version it holds
(``deletedSince``). The engine records a vcjob's end before it deletes it, so when nothing was deleted since, every
vcjob the snapshot lacks was never created or is recorded as ended in the JobFlow it holds, and the handler may
create before it writes (``handlers/reads.py``). The JobFlow's version is the newer of the entry's own and of how
far the JobFlow watch has come (every JobFlow write up to there is in the cache); a deletion is known by the
resourceVersion of the vcjob watch's DELETE event, or, for what a re-list of vcjobs found gone (or everything before
the first list), by that list's resourceVersion. resourceVersions are compared as the decimal etcd revisions they
are (:func:`jobflow_core.snapshots.newer`); anything else counts as "deleted since".
"""

from __future__ import annotations

import threading
from typing import Any

from jobflow_core.api import JOBFLOW, VCJOB, ApiType
from jobflow_core.routing import controller_name
from jobflow_core.snapshots import newer, trim_jobflow, trim_vcjob


def _revision(resource_version: Any) -> int:
    """An etcd revision; 0 when it is not one (then nothing is assumed from it)."""
    return int(resource_version) if isinstance(resource_version, str) and resource_version.isdecimal() else 0


class WatchCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobflows: dict[tuple[str, str], dict[str, Any]] = {}
        self._vcjobs: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}  # (ns, jobflow) -> name -> vcjob
        self._owner: dict[tuple[str, str], str] = {}  # (ns, vcjob) -> the jobflow it was filed under
        self._watched: dict[str | None, int] = {}  # namespace (None: all) -> how far the JobFlow watch has come
        self._deleted: dict[tuple[str, str], int] = {}  # (ns, jobflow) -> resourceVersion of its last vcjob deletion
        self._relisted: dict[str | None, int] = {}  # namespace (None: all) -> the last vcjob list's resourceVersion

    def note(self, api_type: ApiType, obj: dict[str, Any], *, deleted: bool) -> None:
        """A change the watch of ``api_type`` saw (or a list found): keep the object's newest state."""
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        with self._lock:
            if api_type is JOBFLOW:
                current = self._jobflows.get((namespace, name))
                if deleted:
                    self._jobflows.pop((namespace, name), None)
                elif current is None or not newer(current, obj):  # a written copy from an answer may be newer
                    self._jobflows[(namespace, name)] = trim_jobflow(obj)
            elif api_type is VCJOB:
                filed = self._owner.pop((namespace, name), None)
                if filed is not None:
                    self._vcjobs.get((namespace, filed), {}).pop(name, None)
                    if deleted:
                        self._deleted[(namespace, filed)] = max(self._deleted.get((namespace, filed), 0),
                                                                _revision(meta.get("resourceVersion")))
                jobflow = controller_name(obj)
                if not deleted and jobflow is not None:
                    self._vcjobs.setdefault((namespace, jobflow), {})[name] = trim_vcjob(obj)
                    self._owner[(namespace, name)] = jobflow

    def forget(self, api_type: ApiType, namespace: str, name: str) -> None:
        """An object a re-list no longer found."""
        self.note(api_type, {"metadata": {"namespace": namespace, "name": name}}, deleted=True)

    def progressed(self, api_type: ApiType, scope: str | None, resource_version: str, *, listed: bool) -> None:
        """The watch of ``api_type`` in ``scope`` (a namespace; None: all) has come to ``resource_version`` (an
        event, a bookmark, or a list: ``listed``)."""
        revision = _revision(resource_version)
        with self._lock:
            if api_type is JOBFLOW:
                self._watched[scope] = max(self._watched.get(scope, 0), revision)
            elif api_type is VCJOB and listed:  # what a list found gone went at some time before it
                self._relisted[scope] = max(self._relisted.get(scope, 0), revision or 1 << 62)

    def snapshot(self, namespace: str, jobflow: str) -> dict[str, Any] | None:
        """The JobFlow and the vcjobs it controls, as the watches have them; None when the JobFlow is not known."""
        with self._lock:
            flow = self._jobflows.get((namespace, jobflow))
            if flow is None:
                return None
            uid = (flow.get("metadata") or {}).get("uid")
            jobs = [job for job in self._vcjobs.get((namespace, jobflow), {}).values()
                    if any(ref.get("uid") == uid for ref in (job.get("metadata") or {}).get("ownerReferences") or ())]
            version = max(_revision((flow.get("metadata") or {}).get("resourceVersion")),
                          self._watched.get(namespace, self._watched.get(None, 0)))
            deleted = max(self._deleted.get((namespace, jobflow), 0),
                          self._relisted.get(namespace, self._relisted.get(None, 1 << 62)))
            return {"jobflow": flow, "vcjobs": sorted(jobs, key=lambda job: job["metadata"]["name"]),
                    "deletedSince": not version or deleted >= version}

    def written(self, flows: list[Any]) -> int:
        """JobFlows the handler wrote (its answer): kept where newer than the watch's copy (which then keeps them
        until the watch brings a newer one); how many were."""
        kept = 0
        with self._lock:
            for flow in flows:
                meta = flow.get("metadata") if isinstance(flow, dict) else None
                if not isinstance(meta, dict):
                    continue
                key = (meta.get("namespace", ""), meta.get("name", ""))
                if newer(flow, self._jobflows.get(key)):
                    self._jobflows[key] = trim_jobflow(flow)
                    kept += 1
        return kept
