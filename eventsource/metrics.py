"""The event source's Prometheus metrics, served at ``/metrics`` on ``METRICS_PORT`` when it is set.

==================================================  =======  =============================================
metric                                              type     what
==================================================  =======  =============================================
``jobflow_eventsource_events_sent_total``           counter  events POSTed to the sink, by object ``kind``
                                                             and ``outcome`` (``delivered``, ``retried``:
                                                             a transient failure, sent again later;
                                                             ``dropped``: refused for good, e.g. a 400;
                                                             ``other_version``: a handler of another
                                                             version answered, sent again)
``jobflow_eventsource_changes_skipped_total``       counter  updates not forwarded, by object ``kind``:
                                                             nothing the engine reads changed
                                                             (:mod:`jobflow_core.routing.relevance`)
``jobflow_eventsource_pending_events``              gauge    changes waiting to be sent (one per JobFlow,
                                                             JobTemplate or deleted vcjob)
``jobflow_eventsource_snapshots_total``             counter  events about a JobFlow, by what they carry
                                                             (``outcome``): ``attached`` (a signed snapshot),
                                                             ``too_large`` (over the cap: the name only),
                                                             ``not_cached`` (the watch has not seen it)
``jobflow_eventsource_answers_total``               counter  what the handler's answers brought (``what``):
                                                             ``written_kept`` (a JobFlow it wrote, newer than
                                                             the watch's copy), ``handed`` (a JobFlow to send)
``jobflow_eventsource_woken_total``                 counter  events sent to JobFlows waiting in a queue that a
                                                             change left room in (:mod:`jobflow_core.queueing.wake`)
==================================================  =======  =============================================

The event source is one long-running process (not scaled to zero), so a gauge of its own queue is honest here.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import Counter, Gauge, start_http_server

EVENTS_SENT = Counter("jobflow_eventsource_events_sent_total", "Events POSTed to the sink, by object kind and outcome",
                      ["kind", "outcome"])
CHANGES_SKIPPED = Counter("jobflow_eventsource_changes_skipped_total",
                          "Updates not forwarded because nothing the engine reads changed, by object kind", ["kind"])
SNAPSHOTS = Counter("jobflow_eventsource_snapshots_total", "Events about a JobFlow, by what they carry: attached, "
                    "too_large, not_cached", ["outcome"])
ANSWERS = Counter("jobflow_eventsource_answers_total", "What the handler's answers brought: written_kept, handed",
                  ["what"])
WOKEN = Counter("jobflow_eventsource_woken_total", "Events sent to JobFlows waiting in a queue a change left room in")
PENDING = Gauge("jobflow_eventsource_pending_events", "Changes waiting to be sent to the sink")


def serve(port: int, *, pending: Callable[[], int], address: str = "0.0.0.0") -> None:
    """Serve ``/metrics`` on ``address:port`` from a daemon thread; ``pending`` reports the queue's length."""
    PENDING.set_function(pending)
    start_http_server(port, addr=address)
