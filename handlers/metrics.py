"""The handler's Prometheus metrics, served at ``GET /metrics`` in the text exposition format.

Only what the handler *does* is counted here (events, reconciles, API requests, writes, creates, how soon a
dependent followed its targets). State (JobFlows by phase, progress, what waits) is not: a handler that scales to
zero forgets it, so it is exported from the objects' status by kube-state-metrics instead.

Under gunicorn with several workers each worker counts for itself; with ``PROMETHEUS_MULTIPROC_DIR`` set (the
gunicorn configuration ``handlers.gunicorn_config`` sets it to a fresh directory before the workers start), every
worker writes its counts there and ``/metrics`` adds them up, whichever worker answers the scrape.

==============================================  =========  ==========================================================
metric                                          type       what
==============================================  =========  ==========================================================
``jobflow_handler_events_total``                counter    CloudEvents received, by ``type`` (one of
                                                           :data:`EVENT_TYPES`, else ``other``) and reply ``code``
``jobflow_handler_reconcile_duration_seconds``  histogram  one event's handling: read, plan, act
``jobflow_handler_api_requests_total``          counter    requests to the API server, by ``verb`` and ``code``
``jobflow_handler_status_writes_total``         counter    JobFlow status writes that succeeded
``jobflow_handler_conflicts_total``             counter    writes that lost a race, by ``kind`` (JobFlow,
                                                           JobTemplate or JobFlowTemplate status, the memoization
                                                           ConfigMap, vcjob create answered AlreadyExists)
``jobflow_handler_vcjobs_created_total``        counter    vcjobs created
``jobflow_dependency_latency_seconds``          histogram  a flow's last target ended -> its vcjob created
``jobflow_handler_snapshots_total``             counter    JobFlow reconciles by where they read from (``outcome``):
                                                           ``used`` (planned from the event's snapshot),
                                                           ``stale`` (its guarded write lost: read again),
                                                           ``unsigned``, ``bad_signature`` (ignored: read),
                                                           ``no_key`` (signed, but this handler has no key yet),
                                                           ``none`` (the event carried none: read)
==============================================  =========  ==========================================================
"""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

EVENTS = Counter("jobflow_handler_events_total", "CloudEvents received, by event type and reply code",
                 ["type", "code"])
RECONCILE = Histogram("jobflow_handler_reconcile_duration_seconds", "Handling of one event: read, plan, act",
                      buckets=LATENCY_BUCKETS)
API_REQUESTS = Counter("jobflow_handler_api_requests_total", "Requests to the API server, by verb and reply code",
                       ["verb", "code"])
STATUS_WRITES = Counter("jobflow_handler_status_writes_total", "JobFlow status writes that succeeded")
CONFLICTS = Counter("jobflow_handler_conflicts_total", "Writes that lost a race, by kind", ["kind"])
VCJOBS_CREATED = Counter("jobflow_handler_vcjobs_created_total", "vcjobs created")
NOTIFICATIONS = Counter("jobflow_handler_notifications_total",
                        "CloudEvents out sent to K_SINK, by outcome (delivered, failed: sent again later)", ["outcome"])
SNAPSHOTS = Counter("jobflow_handler_snapshots_total",
                    "JobFlow reconciles by the source of what they planned from: used, stale, unsigned, "
                    "bad_signature, no_key, none", ["outcome"])
DEADLINE_CHANGES = Counter("jobflow_handler_deadline_changes_total",
                           "JobFlows whose status.deadline.state changed (written), by the state they took: AtRisk, "
                           "OnTime, Missed, Met, Unknown", ["state"])
DEPENDENCY_LATENCY = Histogram("jobflow_dependency_latency_seconds",
                               "From a flow's last target ending to its vcjob being created",
                               buckets=LATENCY_BUCKETS)


EVENT_TYPES = frozenset({*(f"dev.knative.apiserver.{mode}.{change}" for mode in ("ref", "resource")
                            for change in ("add", "update", "delete")),
                         "dev.knative.sources.ping", "dev.volcano.jobflow.resync", "invalid"})
"""The event types counted by name. The type is the sender's to choose: counted as itself, every new type would be
a new time series for as long as the process lives (memory, and a scrape that grows without bound)."""


def event_type_label(event_type: str) -> str:
    return event_type if event_type in EVENT_TYPES else "other"


def exposition() -> tuple[bytes, str]:
    """The metrics text and its content type: this process's, or every worker's under multiprocess mode."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
