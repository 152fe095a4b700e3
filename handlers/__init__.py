"""The stateless JobFlow handler: a Flask app that gunicorn (or Knative Serving) runs.

``POST /`` takes one CloudEvent (HTTP binary or structured mode), works out which JobFlow(s) it concerns,
re-reads them and what they own from the API server, plans (``jobflow_core``), acts and writes the status.
``POST /resync`` reconciles every JobFlow that can still change. ``GET /healthz`` answers while the process is up.
``POST /validate/jobflows`` and ``POST /validate/jobtemplates`` are the validating webhooks (``handlers.webhooks``).

Replies follow the Knative delivery contract: 2xx with an empty body when done (a body carrying an event would be
re-injected by a Broker; only our event source, which says so with the ``jobflowreply`` extension, gets a JSON
body: the JobFlows written and those handed back to it, :mod:`handlers.dispatch`), 400 with a JSON error for an event
that retrying cannot fix, 409 or 503 for a transient fault (a lost write race, the API server unreachable) so the event
bus delivers it again: 503 for both, the one code every delivery path retries (Knative's ApiServerSource adapter drops a
409).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported in create_app: gunicorn's master imports this package for its config only
    from flask import Flask


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """The application factory. ``config`` may set ``KUBE`` (a ``KubeApi``) and ``CLOCK`` (tests do).

    From the environment: ``PROBE_RECHECK_SECONDS`` (default 10: how often a probe that has not passed yet is
    looked at again; the status carries it to the event source), ``PROBE_TIMEOUT_SECONDS`` (default 1), and
    ``K_SINK``/``K_CE_OVERRIDES``: where to send CloudEvents of each JobFlow's transitions (``handlers.notify``;
    ``config`` may set ``NOTIFIER`` instead), ``NAMESPACES``: the namespaces served, comma-separated (the namespaced
    install, whose Roles allow no more; an event about another namespace gets a 400); empty (the default): all.
    ``SNAPSHOT_KEY_FILE`` or ``SNAPSHOT_KEY``: the key the event source signs snapshots with
    (:mod:`apiclient.snapshot_key`; a file is looked at again every few seconds, so a key created or rotated later is
    taken up). ``config`` may set ``SNAPSHOT_KEY`` to the key's bytes instead.
    """
    from flask import Flask

    from apiclient.snapshot_key import FollowedKey

    if not logging.getLogger().handlers:
        logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"), format="%(asctime)s %(name)s %(message)s")
    from apiclient.version import REPLY_HEADER, version

    logging.getLogger("handlers").info("volcano-jobflow handler %s", version())
    app = Flask(__name__)
    app.config.update(RECHECK_SECONDS=int(os.environ.get("PROBE_RECHECK_SECONDS", "10")),
                      PROBE_TIMEOUT_SECONDS=float(os.environ.get("PROBE_TIMEOUT_SECONDS", "1")),
                      NAMESPACES=tuple(n.strip() for n in os.environ.get("NAMESPACES", "").split(",") if n.strip()),
                      SNAPSHOT_KEY=FollowedKey(os.environ))
    from handlers.notify import Notifier
    from handlers.writes import Writes

    app.config.update(NOTIFIER=Notifier.from_environment(os.environ), WRITES=Writes())
    app.config.update(config or {})
    from handlers.routes import bp
    from handlers.webhooks import bp as webhooks

    app.register_blueprint(bp)
    app.register_blueprint(webhooks)
    running = version()

    @app.after_request
    def name_the_version(response):
        response.headers[REPLY_HEADER] = running
        return response

    return app
