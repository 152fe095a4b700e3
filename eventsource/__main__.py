"""``python -m eventsource``: run the event source until SIGTERM.

Configuration (environment, as Knative's SinkBinding/ContainerSource injects it):

- ``K_SINK`` (required): where to POST events, e.g. the handler's URL or a Knative Broker.
- ``K_CE_OVERRIDES``: ``{"extensions": {...}}`` added to every event.
- ``K_CA_CERTS``: the PEM of an https sink's CA (as SinkBinding injects it); otherwise the system's CAs.
- ``NAMESPACES``: comma-separated namespaces to watch; empty (the default) means all namespaces.
- ``EVENT_MODE``: ``Reference`` (default, as the handler re-reads objects anyway) or ``Resource``.
- ``RESYNC_SECONDS``: how often every object is re-announced (default 300).
- ``SINK_CONCURRENCY``: how many events may be in flight at once (default 4; never two of one object).
- JobFlows waiting for a probe are also re-announced as often as their ``waitingFlows[].recheckSeconds`` asks
  (``eventsource.recheck``).
- ``KUBECONFIG``: used when set; otherwise the in-cluster service account.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import urllib.parse

from kubernetes import client, config

from eventsource import cloudevent
from eventsource.outbox import Outbox
from eventsource.recheck import Rechecker
from eventsource.resources import JOBFLOWS, WATCHED
from eventsource.watcher import Watcher

log = logging.getLogger("eventsource")


def load_api() -> client.ApiClient:
    if os.environ.get("KUBECONFIG"):
        return config.new_client_from_config(config_file=os.environ["KUBECONFIG"])
    config.load_incluster_config()
    return client.ApiClient()


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
        overrides = cloudevent.parse_overrides(os.environ.get("K_CE_OVERRIDES"))
        mode = cloudevent.Mode(os.environ.get("EVENT_MODE", "Reference"))
        resync = float(os.environ.get("RESYNC_SECONDS", "300"))
        if not resync > 0:  # 0 would re-list in a busy loop
            raise ValueError(f"RESYNC_SECONDS must be a positive number of seconds, got {resync}")
        senders = int(os.environ.get("SINK_CONCURRENCY", "4"))
        if senders < 1:
            raise ValueError(f"SINK_CONCURRENCY must be at least 1, got {senders}")
    except ValueError as error:
        print(f"eventsource: bad configuration: {error}", file=sys.stderr)
        return 2
    namespaces = [n.strip() for n in os.environ.get("NAMESPACES", "").split(",") if n.strip()] or [None]

    api = load_api()
    source = api.configuration.host
    outbox = Outbox(sink, lambda env: cloudevent.encode(env, mode=mode, source=source, overrides=overrides),
                    ca_certs=os.environ.get("K_CA_CERTS") or None)
    stop = threading.Event()

    def shutdown(*_: object) -> None:
        stop.set()
        outbox.stop()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    rechecker = Rechecker(outbox, stop)
    threads = [threading.Thread(target=outbox.run, name=f"sender-{i}", daemon=True) for i in range(senders)]
    threads.append(threading.Thread(target=rechecker.run, name="recheck", daemon=True))
    for resource in WATCHED:
        for namespace in namespaces:
            watcher = Watcher(api, resource, namespace, outbox, resync_seconds=resync, stop=stop,
                              observer=rechecker.observe if resource is JOBFLOWS else None)
            threads.append(threading.Thread(target=watcher.run, name=f"watch-{resource.plural}", daemon=True))
    for thread in threads:
        thread.start()
    log.info("watching %s in %s; sending %s events to %s", ", ".join(r.plural for r in WATCHED),
             ", ".join(n or "all namespaces" for n in namespaces), mode, sink)
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
