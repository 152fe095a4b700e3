"""Send the JobFlow's pending notifications (``status.notifications``) to the CloudEvents sink, the Knative way.

The sink is ``K_SINK`` (which a Knative SinkBinding injects into the handler's pods, e.g. a Broker's address); the
optional ``K_CE_OVERRIDES`` (``{"extensions": {"name": "value"}}``) adds extensions to every event, as it does for
Knative's own sources. Without ``K_SINK`` nothing is recorded or sent.

Events go out in binary HTTP mode, one POST each, in the order they were recorded, and sending stops at the first
one the sink does not accept (a non-2xx reply, a timeout, no connection), so a consumer sees them in order. Only
the ids the sink accepted are returned: the reconciler then removes exactly those from the status; the rest are
sent again by a later reconcile (:mod:`jobflow_core.planning.notifications` says when that comes).

The same sink takes the JobFlows an event hands out (:meth:`Notifier.hand_out`, :mod:`handlers.dispatch`): on
Knative it is the Broker, whose JobFlow Trigger brings each back to the handler as an event of its own.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence

from cloudevents.core.bindings.http import to_binary_event
from cloudevents.core.v1.event import CloudEvent

from handlers import metrics
from jobflow_core.models import Notification
from jobflow_core.planning.notifications import source
from jobflow_core.vocabulary.api import JOBFLOW

HAND_OUT_SOURCE = "/apis/flow.volcano.sh/v1alpha1/handler"
"""The ``source`` of the events the handler hands out (the sender is the handler, not an API server)."""

log = logging.getLogger("handlers.notify")


class Notifier:
    def __init__(self, sink: str, *, overrides: Mapping[str, str] | None = None, timeout: float = 2.0) -> None:
        self.sink, self.overrides, self.timeout = sink, dict(overrides or {}), timeout

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> Notifier | None:
        """The notifier ``K_SINK`` asks for, or None; a malformed ``K_CE_OVERRIDES`` stops the start with why."""
        sink = (env.get("K_SINK") or "").strip()
        if not sink:
            return None
        # Imported only with a sink: the CloudEvents envelope (and its SDK) is of no use to a handler without one.
        from apiclient.cloudevents import parse_overrides

        return cls(sink, overrides=parse_overrides(env.get("K_CE_OVERRIDES")),
                   timeout=float(env.get("K_SINK_TIMEOUT_SECONDS", "2")))

    def send(self, namespace: str, jobflow: str, pending: Sequence[Notification]) -> set[str]:
        """POST ``pending`` in order; the ids the sink accepted (stopping at the first it did not)."""
        accepted: set[str] = set()
        for notification in pending:
            headers, body = self.encode(namespace, jobflow, notification)
            request = urllib.request.Request(self.sink, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout):
                    pass  # any 2xx; urllib raises for the rest
            except (urllib.error.URLError, OSError) as error:
                metrics.NOTIFICATIONS.labels("failed").inc()
                log.info("%s/%s: sink %s did not take %s (%s); sent again on a later reconcile", namespace,
                         jobflow, self.sink, notification.id, error)
                break
            metrics.NOTIFICATIONS.labels("delivered").inc()
            accepted.add(notification.id)
        return accepted

    def hand_out(self, jobflows: Sequence[tuple[str, str]]) -> None:
        """POST one event per JobFlow, each as ApiServerSource announces a JobFlow's update (Reference mode), so
        every bus routes it to the handler as it routes those; raises Unavailable at the first the sink refuses."""
        from apiclient.cloudevents import Change, Envelope, Mode, encode
        from apiclient.rest import Unavailable

        for namespace, name in jobflows:
            headers, body = encode(Envelope(JOBFLOW, Change.UPDATE, {"metadata": {"namespace": namespace,
                                                                                  "name": name}}),
                                   mode=Mode.REFERENCE, source=HAND_OUT_SOURCE, overrides=self.overrides)
            request = urllib.request.Request(self.sink, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout):
                    pass
            except (urllib.error.URLError, OSError) as error:
                raise Unavailable(f"the sink {self.sink} did not take the event for JobFlow {namespace}/{name} "
                                  f"({error}); the whole event is asked for again") from error

    def encode(self, namespace: str, jobflow: str, notification: Notification) -> tuple[dict[str, str], bytes]:
        attributes = {
            "specversion": "1.0",
            "id": notification.id,
            "source": source(namespace, jobflow),
            "type": notification.type,
            "subject": notification.subject,
            "datacontenttype": "application/json",
            "namespace": namespace,
            "jobflow": jobflow,
            **({"time": notification.time} if notification.time else {}),
            **self.overrides,
        }
        data = json.loads(json.dumps(notification.data or {}, default=str))
        message = to_binary_event(CloudEvent(attributes, data))
        return dict(message.headers), message.body
