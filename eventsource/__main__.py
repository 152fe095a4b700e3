"""``python -m eventsource``: run the event source until SIGTERM.

Configuration (environment, as Knative's SinkBinding/ContainerSource injects it):

- ``K_SINK`` (required): where to POST events, e.g. the handler's URL or a Knative Broker.
- ``K_CE_OVERRIDES``: ``{"extensions": {...}}`` added to every event.
- ``K_CA_CERTS``: the PEM of an https sink's CA (as SinkBinding injects it); otherwise the system's CAs.
- ``NAMESPACES``: comma-separated namespaces to watch; empty (the default) means all namespaces.
- ``EVENT_MODE``: ``Reference`` (default, as the handler re-reads objects anyway) or ``Resource``.
- ``RESYNC_SECONDS``: how often every object is re-announced (default 300).
- ``SINK_CONCURRENCY``: how many events may be in flight at once (default 4; never two of one JobFlow).
- ``HOLD_SECONDS``: how long a vcjob's change that cannot start a dependent may wait for the next change of its
  JobFlow (default 0.5; 0 sends every change at once; :mod:`eventsource.outbox`).
- JobFlows waiting for a probe are also re-announced as often as their ``waitingFlows[].recheckSeconds`` asks
  (``eventsource.recheck``).
- ``KUBECONFIG``: the API server is found by kubectl's rules (:func:`apiclient.kubeconfig.connect`): ``KUBECONFIG``,
  else ``~/.kube/config``, else the in-cluster service account.
- ``LOG_LEVEL``: the logging level (default ``INFO``).
- ``SNAPSHOT_KEY_FILE`` (created with a fresh key when absent and writable, as the Procfile's is) or ``SNAPSHOT_KEY``:
  the key the handler shares, to sign the snapshots events carry (:mod:`jobflow_core.routing.snapshots`); with
  ``SNAPSHOT_KEY_SECRET`` (the manifests), the Secret of that name in ``POD_NAMESPACE``, created when absent
  (:mod:`apiclient.snapshot_key`). None of them: events carry none and the handler reads the API server for each.
- ``HANDLER_REPLIES``: ``true`` when ``K_SINK`` is the handler itself (the Procfile, the plain install): its answers
  are read (JobFlows it wrote, JobFlows it hands back). Default ``false``, right for a Broker in between (it answers
  for itself), where a JobTemplate event is then reconciled by the handler in full, as before.
- ``METRICS_PORT``: serve Prometheus metrics at ``/metrics`` on that port (``METRICS_ADDRESS``, default all
  interfaces); unset, none are served (:mod:`eventsource.metrics`).

Bad configuration stops it at once with exit status 2 and a message saying what to fix; SIGTERM or SIGINT stop it
with exit status 0. What runs in between is :func:`eventsource.start`.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import urllib.parse

import eventsource
from apiclient import cloudevents
from apiclient.kubeconfig import ConnectError, connect
from apiclient.rest import ApiError, Rest, Unavailable
from apiclient.snapshot_key import ensure_secret, snapshot_key
from eventsource import metrics as eventsource_metrics
from eventsource.outbox import DEFAULT_HOLD_SECONDS


def main() -> int:
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"), format="%(asctime)s %(name)s %(message)s")
    sink = os.environ.get("K_SINK")
    if not sink:
        print("eventsource: K_SINK is not set: set it to the URL events go to (e.g. http://localhost:8080/)",
              file=sys.stderr)
        return 2
    if urllib.parse.urlsplit(sink).scheme not in ("http", "https"):
        # Checked here: without a scheme every POST fails (or the sender thread dies) and the source goes quiet.
        print(f"eventsource: K_SINK must be an http:// or https:// URL, got {sink!r}", file=sys.stderr)
        return 2
    try:
        overrides = cloudevents.parse_overrides(os.environ.get("K_CE_OVERRIDES"))
        mode = cloudevents.Mode(os.environ.get("EVENT_MODE", "Reference"))
        resync = float(os.environ.get("RESYNC_SECONDS", "300"))
        if not resync > 0:  # 0 would re-list in a busy loop
            raise ValueError(f"RESYNC_SECONDS must be a positive number of seconds, got {resync}")
        senders = int(os.environ.get("SINK_CONCURRENCY", "4"))
        if senders < 1:
            raise ValueError(f"SINK_CONCURRENCY must be at least 1, got {senders}")
        hold = float(os.environ.get("HOLD_SECONDS", str(DEFAULT_HOLD_SECONDS)))
        if not 0 <= hold <= 60:
            raise ValueError(f"HOLD_SECONDS must be between 0 and 60 seconds, got {hold}")
        metrics_port = int(os.environ["METRICS_PORT"]) if os.environ.get("METRICS_PORT") else None
        replies = os.environ.get("HANDLER_REPLIES", "false").lower()
        if replies not in ("true", "false"):
            raise ValueError(f"HANDLER_REPLIES must be true or false, got {replies!r}")
        key = snapshot_key(os.environ)
        secret = os.environ.get("SNAPSHOT_KEY_SECRET") if key is None else None
        if secret and not os.environ.get("POD_NAMESPACE"):
            raise ValueError("SNAPSHOT_KEY_SECRET needs POD_NAMESPACE (the downward API's metadata.namespace)")
    except (ValueError, OSError) as error:
        print(f"eventsource: bad configuration: {error}", file=sys.stderr)
        return 2
    namespaces = [n.strip() for n in os.environ.get("NAMESPACES", "").split(",") if n.strip()]
    try:
        api = connect(program="eventsource")
    except ConnectError as error:
        print(f"eventsource: {error}", file=sys.stderr)
        return 2
    if secret:
        try:
            key = ensure_secret(Rest(api), os.environ["POD_NAMESPACE"], secret)
        except (ApiError, Unavailable, ValueError) as error:  # not fatal: the events carry no snapshot meanwhile
            logging.getLogger("eventsource").warning("no snapshot key from the Secret %s/%s (%s): events carry no "
                                                     "snapshot; restart the event source once it can read and "
                                                     "create it", os.environ["POD_NAMESPACE"], secret, error)

    terminated = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: terminated.set())
    signal.signal(signal.SIGINT, lambda *_: terminated.set())
    source = eventsource.start(api, sink=sink, namespaces=namespaces, mode=mode, resync_seconds=resync,
                               senders=senders, overrides=overrides, ca_certs=os.environ.get("K_CA_CERTS") or None,
                               hold=hold, snapshot_key=key, replies=replies == "true")
    if metrics_port is not None:
        eventsource_metrics.serve(metrics_port, pending=source.outbox.pending,
                                  address=os.environ.get("METRICS_ADDRESS", "0.0.0.0"))
    terminated.wait()
    # No waiting for the threads: a pending event is only a hint, and the next start announces every object again;
    # a watcher would hold the exit until its current watch request ends (minutes).
    source.stop(timeout=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
