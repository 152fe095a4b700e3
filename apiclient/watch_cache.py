"""What the watches have seen of each JobFlow and its vcjobs: the source of the snapshots events carry.

The watchers note every change here (forwarded or not, so the cache is as new as the watch); the sender asks for a
JobFlow's snapshot (:mod:`jobflow_core.routing.snapshots`) when it encodes an event about that JobFlow or one of its
vcjobs, so the snapshot is as new as it can be at the moment it leaves. The handler's answer brings back the JobFlows it
wrote (:meth:`WatchCache.written`): a status write of our own can reach this process by the answer before it does by the
watch, and the next snapshot of that JobFlow must not be older than it (:func:`jobflow_core.routing.snapshots.newer`).

Objects are kept trimmed (no ``managedFields``, no pod templates): at 1,000 diamonds, 5,000 vcjobs take a few MB.

The snapshot of a JobFlow that has not started also carries **the line** of the Volcano queues
(:mod:`jobflow_core.queueing.line`): every JobFlow here that its admission can count (started ones that reserve room,
older ones still waiting), read from each one's status when it changes. The handler then decides whether the JobFlow
starts without listing every JobFlow of the cluster, once per first reconcile (docs/scheduling.md, "What it costs").

The same line says who to wake when a change frees room in a queue (:mod:`jobflow_core.queueing.wake`): a JobFlow
kept here that ended, went, or holds less; :meth:`WatchCache.woken` hands the JobFlows waiting in that queue to the
event source, which sends each an event at once instead of their waiting for the periodic look.
"""

from __future__ import annotations

import threading
from typing import Any

from jobflow_core.queueing.line import InLine, counts_for, in_line, line_to_wire
from jobflow_core.queueing.wake import Freed, freed, to_wake
from jobflow_core.routing.concerns import controller_name
from jobflow_core.routing.snapshots import newer, trim_jobflow, trim_vcjob
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB, ApiType


class WatchCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobflows: dict[tuple[str, str], dict[str, Any]] = {}
        self._vcjobs: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}  # (ns, jobflow) -> name -> vcjob
        self._owner: dict[tuple[str, str], str] = {}  # (ns, vcjob) -> the jobflow it was filed under
        self._line: dict[tuple[str, str], InLine] = {}  # (ns, jobflow) -> it in its queue's line, as cached
        self._freed: list[Freed] = []  # room changes left in queues since woken() was last asked

    def note(self, api_type: ApiType, obj: dict[str, Any], *, deleted: bool) -> None:
        """A change the watch of ``api_type`` saw (or a list found): keep the object's newest state."""
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        with self._lock:
            if api_type is JOBFLOW:
                current = self._jobflows.get((namespace, name))
                if deleted:
                    self._jobflows.pop((namespace, name), None)
                    self._moved(self._line.pop((namespace, name), None), None)
                elif current is None or not newer(current, obj):  # a written copy from an answer may be newer
                    self._keep((namespace, name), obj)
            elif api_type is VCJOB:
                filed = self._owner.pop((namespace, name), None)
                if filed is not None:
                    self._vcjobs.get((namespace, filed), {}).pop(name, None)
                jobflow = controller_name(obj)
                if not deleted and jobflow is not None:
                    self._vcjobs.setdefault((namespace, jobflow), {})[name] = trim_vcjob(obj)
                    self._owner[(namespace, name)] = jobflow

    def forget(self, api_type: ApiType, namespace: str, name: str) -> None:
        """An object a re-list no longer found."""
        self.note(api_type, {"metadata": {"namespace": namespace, "name": name}}, deleted=True)

    def snapshot(self, namespace: str, jobflow: str) -> dict[str, Any] | None:
        """The JobFlow and the vcjobs it controls, as the watches have them; None when the JobFlow is not known."""
        with self._lock:
            flow = self._jobflows.get((namespace, jobflow))
            if flow is None:
                return None
            uid = (flow.get("metadata") or {}).get("uid")
            jobs = [job for job in self._vcjobs.get((namespace, jobflow), {}).values()
                    if any(ref.get("uid") == uid for ref in (job.get("metadata") or {}).get("ownerReferences") or ())]
            snapshot = {"jobflow": flow, "vcjobs": sorted(jobs, key=lambda job: job["metadata"]["name"])}
            asking = self._line[(namespace, jobflow)]
            line = [] if asking.ended else [line_to_wire(entry) for entry in self._line.values()
                                            if counts_for(entry, asking=asking)]
            if line or not (asking.started or asking.ended):  # started: only at-risk JobFlows that may hold it
                snapshot["line"] = line
            return snapshot

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
                    self._keep(key, flow)
                    kept += 1
        return kept

    def woken(self) -> list[tuple[str, str]]:
        """The JobFlows waiting in the queues changes left room in since the last call, in line order, each once."""
        with self._lock:
            rooms, self._freed = self._freed, []
            return list(dict.fromkeys(key for room in rooms for key in to_wake(room, self._line.values())))

    def _keep(self, key: tuple[str, str], flow: dict[str, Any]) -> None:
        """Under the lock: the JobFlow's newest state, and its place in line read from it once."""
        self._jobflows[key] = trim_jobflow(flow)
        before, self._line[key] = self._line.get(key), in_line(flow)
        self._moved(before, self._line[key])

    def _moved(self, before: InLine | None, after: InLine | None) -> None:
        self._freed += freed(before, after)
