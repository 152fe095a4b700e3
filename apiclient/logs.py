"""The logs of a JobFlow's pods, line by line, each with the stream it came from: what ``kubectl jobflow logs``
prints and the dashboard's logs pane shows.

One call, :func:`logs`, yields :class:`LogLine` records (the :class:`~jobflow_core.insight.logs.Stream`: flow, item,
attempt, task, pod, container and its ``prefix``; the line; the time the kubelet stamped it) and :class:`Notice`
records (what is said of the flows that show nothing: a vcjob deleted with its pods, a flow not started, skipped,
cached). Which containers a selection means, their order and prefixes are the core's
(:mod:`jobflow_core.insight.logs`); this module reads the JobFlow, its vcjobs and their pods, and asks the API
server for each container's log (``GET /api/v1/namespaces/NS/pods/POD/log?container=C&timestamps=true``).

Without ``follow``, each container's log is read once, one after the other, in the plan's order. With ``follow``:

* the JobFlow, its vcjobs and the namespace's vcjob pods are watched (:func:`apiclient.follow.follow`), so the pods
  of flows and items that start later are followed as they come, and the plan is made again on each change;
* a running container's log is followed; its end is checked against the pod: a container that restarted is followed
  again (the new instance's log, from its start), one still running (the connection was cut) is asked again;
* a cut connection (an API-server restart: reset, refused, 5xx) is asked again with ``sinceTime`` of the last line
  shown, and the lines of that second shown already are skipped (:mod:`jobflow_core.insight.log_lines`): none is
  repeated or lost unless the kubelet lost it. The API server may stay away for ``patience`` seconds, then
  :class:`~apiclient.follow.WatchLost` is raised;
* a container that already ended is read once, in turn with the others that ended (one request at a time);
* at most ``max_requests`` running containers are followed at once: more is refused with kubectl's message
  (:class:`LogsRefused`, ``usage``), as ``kubectl logs -f`` refuses more than ``--max-log-requests``;
* it ends once the JobFlow has ended (Succeed or Failed) and every stream has ended, after one last look at its
  vcjobs and pods (a watch may deliver the JobFlow's end before its last pod's).

``--tail`` and ``--since`` (``tail``, ``since_seconds``) apply to the containers there when it starts; a pod that
starts later is shown whole. Threads end at their next line, or within :data:`READ_SECONDS` once ``stop`` is set
(or the generator is closed).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from urllib3.exceptions import HTTPError

from apiclient.follow import PATIENCE, TRANSIENT, _wait_out, follow
from apiclient.rest import ApiError
from jobflow_core.insight.log_lines import Cursor, admit, split
from jobflow_core.insight.logs import LogPlan, Pod, Selection, Stream, plan
from jobflow_core.models import JobFlow, VcJob
from jobflow_core.vocabulary.api import JOBFLOW, POD_JOB_NAME, VCJOB, ApiType
from jobflow_core.vocabulary.naming import jobs_of_jobflow_selector

if TYPE_CHECKING:
    from apiclient.cluster import Cluster

POD = ApiType("", "v1", "Pod", "pods")
MAX_LOG_REQUESTS = 5
"""Running containers followed at once, kubectl's ``--max-log-requests`` default."""
READ_SECONDS = 60.0
"""A followed log that says nothing this long is asked again (from its last line): a dead connection is noticed."""


@dataclass(frozen=True)
class LogOptions:
    """How the logs are read: ``follow`` them, the last ``tail`` lines, those of the last ``since_seconds``, at most
    ``max_requests`` followed at once, the API server away for at most ``patience`` seconds."""

    follow: bool = False
    tail: int | None = None
    since_seconds: int | None = None
    max_requests: int = MAX_LOG_REQUESTS
    patience: float = PATIENCE


@dataclass(frozen=True)
class LogLine:
    """One line of one container's log: ``text`` as written, ``time`` as the kubelet stamped it (RFC 3339)."""

    stream: Stream
    text: str
    time: str | None

    @property
    def prefix(self) -> str:
        return self.stream.prefix


@dataclass(frozen=True)
class Notice:
    """What is said of a part of the selection that shows no log, or of the JobFlow (deleted while followed)."""

    text: str


class LogsRefused(RuntimeError):
    """The selection cannot be shown: no such JobFlow or flow, flags that do not go together (``usage``), more
    streams to follow than allowed. The message says what to do."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


class _Seen:
    """The JobFlow, its vcjobs and the vcjob pods of its namespace, as last read or watched."""

    def __init__(self, jobflow: dict[str, Any], jobs: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.jobflow = JobFlow.model_validate(jobflow)
        self.jobs = {job["metadata"]["name"]: VcJob.model_validate(job) for job in jobs}
        self.pods = {pod["metadata"]["name"]: Pod.of(pod) for pod in pods}

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


def logs(cluster: Cluster, namespace: str, name: str, *, selection: Selection = Selection(),
         options: LogOptions = LogOptions(), stop: threading.Event | None = None) -> Iterator[LogLine | Notice]:
    """The logs of JobFlow ``namespace/name``'s pods that ``selection`` means, as records (see the module
    docstring). Raises :class:`LogsRefused`, :class:`~apiclient.cluster.KubeError` (the API server refused or could
    not be reached) and, following, :class:`~apiclient.follow.WatchLost`."""
    stop = stop or threading.Event()
    jobflow = cluster.find(JOBFLOW, namespace, name)
    if jobflow is None:
        raise LogsRefused(f'JobFlow "{namespace}/{name}" not found: check the name and the namespace (kubectl '
                          "jobflow list -A lists them all)")
    jobs = cluster.list(VCJOB, namespace, label_selector=jobs_of_jobflow_selector(namespace=namespace, jobflow=name))
    pods = cluster.list(POD, namespace, label_selector=POD_JOB_NAME)
    seen = _Seen(jobflow, jobs["items"], pods["items"])
    first = seen.plan(selection)
    if first.problem is not None:
        raise LogsRefused(first.problem.message, usage=first.problem.usage)
    if not options.follow:
        for note in first.notes:
            yield Notice(note.text)
        for stream in first.streams:
            yield from _lines(cluster, namespace, stream, follow=False, options=options, first=True, stop=stop)
        return
    versions = (jobflow["metadata"]["resourceVersion"], jobs["metadata"]["resourceVersion"],
                pods["metadata"]["resourceVersion"])
    try:
        yield from _Follower(cluster, namespace, selection, options, stop).run(seen, first, versions)
    finally:
        stop.set()


class _Follower:
    """``logs(follow=True)``: watches and streams in threads, their records handed to the generator's thread through
    one queue, in the order they arrive."""

    def __init__(self, cluster: Cluster, namespace: str, selection: Selection, options: LogOptions,
                 stop: threading.Event) -> None:
        self.cluster, self.namespace, self.selection, self.options, self.stop = \
            cluster, namespace, selection, options, stop
        self.events: queue.Queue[tuple[str, Any, Any]] = queue.Queue()
        self.ended_reads: queue.Queue[tuple[Stream, bool]] = queue.Queue()
        """Containers that ended, to read once: (stream, whether ``--tail``/``--since`` apply)."""
        self.followed: dict[tuple[str, str], str] = {}
        """The running containers followed now: (pod, container) -> instance."""
        self.started: set[tuple[tuple[str, str], str]] = set()
        """Every (stream key, instance) whose log was (or is being) read."""
        self.reads = 0
        """Ended containers queued or being read."""

    def run(self, seen: _Seen, first: LogPlan, versions: tuple[str, str, str]) -> Iterator[LogLine | Notice]:
        jobflow = seen.jobflow
        selector = jobs_of_jobflow_selector(namespace=self.namespace, jobflow=jobflow.name)
        self._pump("jobflow", follow(self.cluster, JOBFLOW, self.namespace, since=versions[0],
                                     field_selector=f"metadata.name={jobflow.name}", stop=self.stop,
                                     patience=self.options.patience))
        self._pump("job", follow(self.cluster, VCJOB, self.namespace, label_selector=selector, since=versions[1],
                                 stop=self.stop, patience=self.options.patience))
        self._pump("pod", follow(self.cluster, POD, self.namespace, label_selector=POD_JOB_NAME, since=versions[2],
                                 stop=self.stop, patience=self.options.patience))
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
            which, kind, obj = self.events.get()
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

    def _start(self, streams: tuple[Stream, ...], *, initial: bool) -> None:
        new = [stream for stream in streams if (stream.key, stream.instance) not in self.started
               and stream.key not in self.followed]
        running = [stream for stream in new if stream.running]
        if len(self.followed) + len(running) > self.options.max_requests:
            raise LogsRefused(f"you are attempting to follow {len(self.followed) + len(running)} log streams, but "
                              f"maximum allowed concurrency is {self.options.max_requests}, use --max-log-requests "
                              "to increase the limit", usage=True)
        for stream in new:
            self.started.add((stream.key, stream.instance))
            if stream.running:
                self.followed[stream.key] = stream.instance
                threading.Thread(target=self._follow_one, args=(stream, initial), daemon=True,
                                 name=f"logs-{stream.pod}-{stream.container}").start()
            else:
                self.reads += 1
                self.ended_reads.put((stream, initial))

    def _follow_one(self, stream: Stream, initial: bool) -> None:
        try:
            for line in _lines(self.cluster, self.namespace, stream, follow=True, options=self.options,
                               first=initial, stop=self.stop):
                self.events.put(("line", None, line))
        except BaseException as error:  # noqa: BLE001 -- handed to the generator's thread, which raises it
            self.events.put(("error", None, error))
        finally:
            self.events.put(("followed", stream.key, None))

    def _read_ended(self) -> None:
        """The containers that ended, one request at a time (they need no follower of their own)."""
        while not self.stop.is_set():
            try:
                stream, initial = self.ended_reads.get(timeout=1.0)
            except queue.Empty:
                continue  # stop is looked at again: a long-lived caller (the dashboard) is left no thread behind
            try:
                for line in _lines(self.cluster, self.namespace, stream, follow=False, options=self.options,
                                   first=initial, stop=self.stop):
                    self.events.put(("line", None, line))
            except BaseException as error:  # noqa: BLE001 -- raised in the generator's thread
                self.events.put(("error", None, error))
            finally:
                self.events.put(("read", None, None))

    def _pump(self, which: str, changes: Iterator[tuple[str, dict[str, Any]]]) -> None:
        def pump() -> None:
            try:
                for kind, obj in changes:
                    self.events.put((which, kind, obj))
            except BaseException as error:  # noqa: BLE001 -- raised in the generator's thread
                self.events.put(("error", None, error))

        threading.Thread(target=pump, daemon=True, name=f"logs-watch-{which}").start()

    def _reread(self, seen: _Seen) -> _Seen:
        name = seen.jobflow.name
        jobflow = self.cluster.find(JOBFLOW, self.namespace, name) or seen.jobflow.to_wire()
        selector = jobs_of_jobflow_selector(namespace=self.namespace, jobflow=name)
        jobs = self.cluster.list(VCJOB, self.namespace, label_selector=selector)["items"]
        pods = self.cluster.list(POD, self.namespace, label_selector=POD_JOB_NAME)["items"]
        return _Seen(jobflow, jobs, pods)


def _lines(cluster: Cluster, namespace: str, stream: Stream, *, follow: bool, options: LogOptions, first: bool,
           stop: threading.Event) -> Iterator[LogLine | Notice]:
    """One container's log, from its ``first`` connection (with ``--tail``/``--since``) or whole; asked again from
    its last line after a cut, until it ends (see the module docstring)."""
    path = f"/api/v1/namespaces/{namespace}/pods/{stream.pod}/log"
    cursor = Cursor()
    opened = time.monotonic()
    lost_since: float | None = None
    backoff = 0.2
    asked = 0
    while not stop.is_set():
        query: list[tuple[str, Any]] = [("container", stream.container), ("timestamps", "true"),
                                        *([("follow", "true")] if follow else [])]
        query += _start_from(cursor, options if first else None, asked=asked, elapsed=time.monotonic() - opened)
        if cursor.last is not None:
            cursor = cursor.reconnected()
        asked += 1
        try:
            for raw in cluster.rest.text_lines(path, query=query, timeout=(5.0, READ_SECONDS)):
                lost_since, backoff = None, 0.2
                when, text = split(raw)
                new, cursor = admit(cursor, when)
                if new:
                    yield LogLine(stream, text, when)
                if stop.is_set():
                    return
        except ApiError as error:
            if error.status in (400, 404):  # the pod is gone, or its container has no log to serve
                if asked == 1 and not follow:
                    yield Notice(f"{stream.prefix}: {error.message}")
                return
            if error.status not in TRANSIENT:
                raise cluster._api_error(error) from error
            lost_since = _wait_out(cluster, error, lost_since, backoff, options.patience)
            backoff = min(backoff * 2, 5.0)
            continue
        except (HTTPError, OSError) as error:  # cut: asked again from the last line shown
            lost_since = _wait_out(cluster, error, lost_since, backoff, options.patience)
            backoff = min(backoff * 2, 5.0)
            continue
        if not follow or not _still_running(cluster, namespace, stream):
            return
        stop.wait(0.5)  # the same container still runs: the connection was closed under it


def _start_from(cursor: Cursor, options: LogOptions | None, *, asked: int, elapsed: float) -> list[tuple[str, Any]]:
    """Where a connection starts: after the last line shown; on the first, as asked (``options``: tail, since);
    again with nothing shown yet, from as far back as the first asked for, so nothing written meanwhile is lost."""
    if cursor.since is not None:
        return [("sinceTime", cursor.since)]
    if options is None:
        return []
    if options.since_seconds is not None:
        return [("sinceSeconds", max(1, int(options.since_seconds + (elapsed if asked else 0))))]
    if options.tail is not None and not asked:
        return [("tailLines", options.tail)]
    if options.tail == 0:  # nothing was shown; what was there at first was not to be
        return [("sinceSeconds", max(1, int(elapsed) + 1))]
    return []


def _still_running(cluster: Cluster, namespace: str, stream: Stream) -> bool:
    """Whether the container instance ``stream`` followed still runs (so its log's end was a cut, not its end)."""
    try:
        pod = cluster.find(POD, namespace, stream.pod)
    except Exception:  # noqa: BLE001 -- unreachable now: ask the log again, which waits for the API server
        return True
    if pod is None:
        return False
    return any(container.instance == stream.instance and container.running
               for container in Pod.of(pod).containers if container.name == stream.container)
