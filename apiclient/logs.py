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
  :class:`~apiclient.follow.WatchLost` is raised; a quiet container is not an API server away
  (:mod:`apiclient.log_reading`);
* a container that already ended is read once, in turn with the others that ended (one request at a time);
* at most ``max_requests`` running containers are followed at once: more at the start is refused with kubectl's
  message (:class:`LogsRefused`, ``usage``), as ``kubectl logs -f`` refuses more than ``--max-log-requests``; one
  that starts later waits for a place (:mod:`apiclient.log_follow`);
* it ends once the JobFlow has ended (Succeed or Failed) and every stream has ended, after one last look at its
  vcjobs and pods (a watch may deliver the JobFlow's end before its last pod's).

``--tail`` and ``--since`` (``tail``, ``since_seconds``) apply to the containers there when it starts; a pod that
starts later is shown whole. Once ``stop`` is set (or the generator is closed), every answer being read is shut
down (:mod:`apiclient.hangup`), so the threads end within a moment.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from apiclient.log_follow import Follower, LogsRefused, Seen
from apiclient.log_reading import MAX_LINE, MAX_LOG_REQUESTS, READ_SECONDS, LogLine, LogOptions, Notice, \
    container_log
from jobflow_core.insight.logs import Selection

if TYPE_CHECKING:
    from apiclient.cluster import Cluster

__all__ = ["MAX_LINE", "MAX_LOG_REQUESTS", "READ_SECONDS", "LogLine", "LogOptions", "LogsRefused", "Notice", "logs"]


def logs(cluster: Cluster, namespace: str, name: str, *, selection: Selection = Selection(),
         options: LogOptions = LogOptions(), stop: threading.Event | None = None) -> Iterator[LogLine | Notice]:
    """The logs of JobFlow ``namespace/name``'s pods that ``selection`` means, as records (see the module
    docstring). Raises :class:`LogsRefused`, :class:`~apiclient.cluster.KubeError` (the API server refused or could
    not be reached) and, following, :class:`~apiclient.follow.WatchLost`."""
    stop = stop or threading.Event()
    read = Seen.read(cluster, namespace, name)
    if read is None:
        raise LogsRefused(f'JobFlow "{namespace}/{name}" not found: check the name and the namespace (kubectl '
                          "jobflow list -A lists them all)")
    seen, versions = read
    first = seen.plan(selection)
    if first.problem is not None:
        raise LogsRefused(first.problem.message, usage=first.problem.usage)
    if not options.follow:
        for note in first.notes:
            yield Notice(note.text)
        for stream in first.streams:
            yield from container_log(cluster, namespace, stream, follow=False, options=options, first=True,
                                     stop=stop)
        return
    try:
        yield from Follower(cluster, namespace, selection, options, stop).run(seen, first, versions)
    finally:
        stop.set()
