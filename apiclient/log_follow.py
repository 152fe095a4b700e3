"""``logs(follow=True)``'s machinery: the watches of the JobFlow, its vcjobs and their pods, one thread per running
container followed, one that reads the containers that ended, and the queue that hands their records to the
generator's thread, in the order they arrive (:mod:`apiclient.logs` says what is followed and when it ends).

**Bounds.** The queue holds at most :data:`QUEUED` records: a pod that logs faster than the caller takes the lines
(a stalled browser, a slow terminal) makes its reader wait, and so the kubelet, instead of this process buffering
without limit. A wait looks at ``stop`` every second, so a stop never leaves a thread stuck on a full queue. At most
``max_requests`` running containers are followed at once: more at the start is refused, as ``kubectl logs -f``
refuses more than ``--max-log-requests``; a container that starts later waits for a place (it is followed as soon
as another follower ends).

**Stopping.** Once ``stop`` is set, the :class:`~apiclient.hangup.Hangup` shuts down every answer being read (the
watches', the logs'), so each thread ends within a moment instead of at its next line or read timeout.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from apiclient.follow import follow
from apiclient.hangup import Hangup
from apiclient.log_reading import POD, LogLine, LogOptions, Notice, container_log
from jobflow_core.insight.logs import LogPlan, Pod, Selection, Stream, plan
from jobflow_core.models import JobFlow, VcJob
from jobflow_core.vocabulary.api import JOBFLOW, POD_JOB_NAME, VCJOB
from jobflow_core.vocabulary.naming import jobs_of_jobflow_selector

if TYPE_CHECKING:
    from apiclient.cluster import Cluster

QUEUED = 1000
"""Records waiting for the generator's thread at most; a reader with more to hand waits."""


def hand_over(to: queue.Queue, item: Any, stop: threading.Event) -> None:
    """``item`` into the bounded queue ``to`` (the standard library's, or gevent's: the same ``put`` and ``Full``),
    waiting while it is full; dropped if ``stop`` is set meanwhile (no one
    takes it any more). While there is room it goes even after ``stop``: the last record of a reader that set it as
    it ended (its end) still reaches the taker."""
    while True:
        try:
            to.put(item, timeout=1.0)
            return
        except queue.Full:
            if stop.is_set():
                return


class LogsRefused(RuntimeError):
    """The selection cannot be shown: no such JobFlow or flow, flags that do not go together (``usage``), more
    streams to follow than allowed. The message says what to do."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


class Seen:
    """The JobFlow, its vcjobs and the vcjob pods of its namespace (those ``pod_selector`` selects), as last read or
    watched."""

    def __init__(self, jobflow: dict[str, Any], jobs: list[dict[str, Any]], pods: list[dict[str, Any]], *,
                 pod_selector: str = POD_JOB_NAME) -> None:
        self.jobflow = JobFlow.model_validate(jobflow)
        self.jobs = {job["metadata"]["name"]: VcJob.model_validate(job) for job in jobs}
        self.pods = {pod["metadata"]["name"]: Pod.of(pod) for pod in pods}
        self.pod_selector = pod_selector

    @classmethod
    def read(cls, cluster: Cluster, namespace: str, name: str, *, pod_selector: str = POD_JOB_NAME,
             jobflow: dict[str, Any] | None = None) -> tuple[Seen, tuple[str, str, str]] | None:
        """JobFlow ``name``, its vcjobs and pods as the API server has them now, and the resourceVersions to watch
        them from (JobFlow, vcjobs, pods); None when the JobFlow is not there (``jobflow``: what it was, if known)."""
        found = cluster.find(JOBFLOW, namespace, name) or jobflow
        if found is None:
            return None
        jobs = cluster.list(VCJOB, namespace, label_selector=jobs_of_jobflow_selector(namespace=namespace,
                                                                                      jobflow=name))
        pods = cluster.list(POD, namespace, label_selector=pod_selector)
        versions = (found["metadata"].get("resourceVersion", ""), jobs["metadata"]["resourceVersion"],
                    pods["metadata"]["resourceVersion"])
        return cls(found, jobs["items"], pods["items"], pod_selector=pod_selector), versions

    def plan(self, selection: Selection) -> LogPlan:
        return plan(self.jobflow, jobs=self.jobs.values(), pods=self.pods.values(), selection=selection)

    def seen(self, which: str, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if which == "jobflow":
            self.jobflow = JobFlow.model_validate(obj)
        elif which == "job" and kind == "DELETED":
            self.jobs.pop(name, None)
        elif which == "job":
            self.jobs[name] = VcJob.model_validate(obj)
        elif kind == "DELETED":
            self.pods.pop(name, None)
        else:
            self.pods[name] = Pod.of(obj)


class Follower:
    """One ``logs(follow=True)``: watches and streams in threads, their records handed to the generator's thread
    through one bounded queue."""

    def __init__(self, cluster: Cluster, namespace: str, selection: Selection, options: LogOptions,
                 stop: threading.Event) -> None:
        self.cluster, self.namespace, self.selection, self.options, self.stop = \
            cluster, namespace, selection, options, stop
        self.hangup = Hangup(stop, name="logs-hangup")
        self.events: queue.Queue[tuple[str, Any, Any]] = queue.Queue(maxsize=QUEUED)
        self.ended_reads: queue.Queue[tuple[Stream, bool]] = queue.Queue()
        """Containers that ended, to read once: (stream, whether ``--tail``/``--since`` apply)."""
        self.followed: dict[tuple[str, str], str] = {}
        """The running containers followed now, or waiting for a place: (pod, container) -> instance."""
        self.waiting: list[tuple[Stream, bool]] = []
        """Running containers that wait for a place: (stream, whether ``--tail``/``--since`` apply)."""
        self.live = 0
        """Followers whose thread runs now (one that ended counts no more, even before its end is taken in)."""
        self._live_lock = threading.Lock()
        self.started: set[tuple[tuple[str, str], str]] = set()
        """Every (stream key, instance) whose log was (or is being, or waits to be) read."""
        self.reads = 0
        """Ended containers queued or being read."""

    def run(self, seen: Seen, first: LogPlan, versions: tuple[str, str, str]) -> Iterator[LogLine | Notice]:
        jobflow = seen.jobflow
        selector = jobs_of_jobflow_selector(namespace=self.namespace, jobflow=jobflow.name)
        self._pump("jobflow", follow(self.cluster, JOBFLOW, self.namespace, since=versions[0],
                                     field_selector=f"metadata.name={jobflow.name}", **self._watching()))
        self._pump("job", follow(self.cluster, VCJOB, self.namespace, label_selector=selector, since=versions[1],
                                 **self._watching()))
        self._pump("pod", follow(self.cluster, POD, self.namespace, label_selector=seen.pod_selector,
                                 since=versions[2], **self._watching()))
        threading.Thread(target=self._read_ended, daemon=True, name="logs-ended").start()
        said: set[str] = set()
        current, initial, settled = first, True, False
        while True:
            # What is said: at once of what the start's lists show, else at the end, once the last look confirms
            # it (watches of three kinds can deliver a vcjob's end before its pods).
            for note in current.notes if initial or (settled and current.ended) else ():
                if not note.pending and note.text not in said:
                    said.add(note.text)
                    yield Notice(note.text)
            self._start(current.streams, initial=initial)
            initial = False
            if current.ended and not self.followed and not self.reads:
                if settled:
                    return
                seen = self._reread(seen)  # one last look: a watch may bring the JobFlow's end before a pod's
                current, settled = seen.plan(self.selection), True
                continue
            try:
                which, kind, obj = self.events.get(timeout=1.0)
            except queue.Empty:
                if self.stop.is_set():
                    return
                continue
            if which == "line":
                yield obj
                continue
            if which == "error":
                raise obj
            if which == "followed":
                self.followed.pop(kind, None)
            elif which == "read":
                self.reads -= 1
            elif which == "jobflow" and kind == "DELETED":
                yield Notice(f"JobFlow {self.namespace}/{jobflow.name} was deleted: its vcjobs and pods go with it")
                return
            else:
                seen.seen(which, kind, obj)
                settled = False
            current = seen.plan(self.selection)

    def _watching(self) -> dict[str, Any]:
        return {"stop": self.stop, "patience": self.options.patience, "hangup": self.hangup}

    def _start(self, streams: tuple[Stream, ...], *, initial: bool) -> None:
        new = [stream for stream in streams if (stream.key, stream.instance) not in self.started
               and stream.key not in self.followed]
        running = [stream for stream in new if stream.running]
        if initial and len(running) > self.options.max_requests:
            raise LogsRefused(f"you are attempting to follow {len(running)} log streams, but maximum allowed "
                              f"concurrency is {self.options.max_requests}, use --max-log-requests to increase the "
                              "limit", usage=True)
        for stream in new:
            self.started.add((stream.key, stream.instance))
            if stream.running:
                self.followed[stream.key] = stream.instance
                self.waiting.append((stream, initial))
            else:
                self.reads += 1
                self.ended_reads.put((stream, initial))
        while self.waiting and self.live < self.options.max_requests:
            stream, first = self.waiting.pop(0)
            with self._live_lock:
                self.live += 1
            threading.Thread(target=self._follow_one, args=(stream, first), daemon=True,
                             name=f"logs-{stream.pod}-{stream.container}").start()

    def _follow_one(self, stream: Stream, initial: bool) -> None:
        try:
            for line in container_log(self.cluster, self.namespace, stream, follow=True, options=self.options,
                                      first=initial, stop=self.stop, hangup=self.hangup):
                self._hand(("line", None, line))
        except BaseException as error:  # noqa: BLE001 -- handed to the generator's thread, which raises it
            self._hand(("error", None, error))
        finally:
            with self._live_lock:
                self.live -= 1
            self._hand(("followed", stream.key, None))

    def _read_ended(self) -> None:
        """The containers that ended, one request at a time (they need no follower of their own)."""
        while not self.stop.is_set():
            try:
                stream, initial = self.ended_reads.get(timeout=1.0)
            except queue.Empty:
                continue  # stop is looked at again: a long-lived caller (the dashboard) is left no thread behind
            try:
                for line in container_log(self.cluster, self.namespace, stream, follow=False, options=self.options,
                                          first=initial, stop=self.stop, hangup=self.hangup):
                    self._hand(("line", None, line))
            except BaseException as error:  # noqa: BLE001 -- raised in the generator's thread
                self._hand(("error", None, error))
            finally:
                self._hand(("read", None, None))

    def _hand(self, event: tuple[str, Any, Any]) -> None:
        """``event`` to the generator's thread (:func:`hand_over`)."""
        hand_over(self.events, event, self.stop)

    def _pump(self, which: str, changes: Iterator[tuple[str, dict[str, Any]]]) -> None:
        def pump() -> None:
            try:
                for kind, obj in changes:
                    self._hand((which, kind, obj))
            except BaseException as error:  # noqa: BLE001 -- raised in the generator's thread
                self._hand(("error", None, error))

        threading.Thread(target=pump, daemon=True, name=f"logs-watch-{which}").start()

    def _reread(self, seen: Seen) -> Seen:
        """One last look (a JobFlow deleted meanwhile is taken as last seen)."""
        reread = Seen.read(self.cluster, self.namespace, seen.jobflow.name, pod_selector=seen.pod_selector,
                           jobflow=seen.jobflow.to_wire())
        return reread[0] if reread is not None else seen
