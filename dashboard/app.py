"""The dashboard's web app: four pages, their JSON, one live stream per open page, and ten actions.

Pages are small HTML shells; ``static/dashboard.js`` (and ``static/templates.js`` on a JobTemplate or
JobFlowTemplate page) draws them from the JSON of :mod:`dashboard.pages` and keeps them live from ``/stream``
(server-sent events): the stream waits on the store (:meth:`dashboard.store.Store.wait`) and sends the page's view
whenever it changed, or a comment every :data:`KEEPALIVE` seconds so proxies keep the connection. No asset comes
from anywhere but this app.

**Actions** (retry, suspend, resume, stop, terminate, and approve or reject an approval gate that waits; on a
JobFlowTemplate, run now, suspend and resume: :mod:`apiclient.steering`, as the command line makes them) exist only
where a user identity exists: ``kubectl jobflow dashboard`` acts with the user's own kubeconfig; behind an
authenticating proxy (``user_header``) each action impersonates the user the proxy names. Otherwise (the in-cluster
Deployment) the app is read-only: no buttons, and every POST is answered 403. A POST must come from a page of this
app: its ``Origin`` (when the browser sends one, as all do for fetch) must be this server, and it must carry the
token the pages were served with (a header a cross-site form cannot set, and a cross-site fetch cannot send without a
CORS preflight this app never grants). In local mode the ``Host`` must be the loopback address the server listens on,
so a DNS-rebinding page cannot reach it either.

Every page's header names the cluster (:mod:`dashboard.header`), and the list page narrows to one namespace and a
label selector (``/?ns=NS&l=SELECTOR``), on the server: its stream sends only the rows that match.

**Logs** (a flow's, live: :mod:`dashboard.logs`) are read as the user locally or behind the proxy, and are off in
the cluster unless the operator turns them on (``Settings.logs`` None: every logs request is answered 403). A logs
request must come from this app's own pages too (``Origin``, ``Sec-Fetch-Site``; an EventSource cannot send the
token, and a request without those headers, curl's, is allowed as for every GET): another site's page cannot start
a read of the logs in a visitor's browser.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, Response, abort, jsonify, render_template, request, stream_with_context

from dashboard.header import Header
from dashboard.logs import LogReader, LogStream, Request, Slots
from dashboard.pages import Pages
from dashboard.store import Store
from jobflow_core.insight.logs import Selection
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, ApiType

KEEPALIVE = 15.0
COALESCE = 0.15
"""After a change, a stream waits this long before sending, so a burst of changes costs one view."""
TOKEN_HEADER = "X-JobFlow-Token"
ACTIONS = ("retry", "suspend", "resume", "stop", "terminate", "approve", "reject")
TEMPLATE_ACTIONS = ("run", "suspend", "resume")
"""The actions on a JobFlowTemplate: start a run now, suspend or resume its schedule."""
ANSWERS = ("approve", "reject")
"""The actions that answer one approval gate: ``flows`` names it, ``message`` says why."""

LOGS_OFF = ("this dashboard shows no logs: it reads as its ServiceAccount, and logs may hold secrets. Its operator "
            "turns them on with --logs and the pods/log RBAC of manifests/dashboard/logs/ (docs/dashboard.md#logs); "
            "meanwhile: kubectl jobflow logs NAME FLOW -f")

TEMPLATE_PAGES: dict[str, tuple[ApiType, Callable[[Pages, str, str], tuple[dict, str] | None]]] = {
    "jobtemplate": (JOBTEMPLATE, Pages.template), "jobflowtemplate": (JOBFLOWTEMPLATE, Pages.schedule)}
"""The pages of one template (``/stream?kind=...``): the type they show, and their view."""

Act = Callable[[str, str, str, list[str], str | None, str | None], str]
"""(action, namespace, name, flows, user to impersonate or None, message or None) -> what was done, in a
sentence."""
TemplateAct = Callable[[str, str, str, dict[str, str], str | None], str]
"""(action on a JobFlowTemplate, namespace, name, parameters of a run, user to impersonate or None) -> what was done,
in a sentence."""


@dataclass(frozen=True)
class Settings:
    act: Act | None = None
    """None: read-only."""
    act_template: TemplateAct | None = None
    """The JobFlowTemplate page's actions (None: none; a read-only dashboard has none either)."""
    header: Header = Header()
    """Which cluster, context and namespaces every page's header names."""
    user_header: str | None = None
    """Behind an authenticating proxy: the request header naming the user (actions impersonate them)."""
    hosts: tuple[str, ...] = ()
    """The Host values accepted (empty: any), e.g. ``127.0.0.1:8765`` in local mode."""
    token: str = ""
    logs: LogReader | None = None
    """How a flow's logs are read (None: the logs pane is off)."""
    log_slots: Slots | None = None
    """The logs panes this process may keep open at once (None: :data:`dashboard.logs.MAX_STREAMS`)."""


def create_app(store: Store, pages: Pages, settings: Settings) -> Flask:
    app = Flask(__name__, static_folder=str(Path(__file__).parent / "static"),
                template_folder=str(Path(__file__).parent / "templates"))
    token = settings.token or secrets.token_urlsafe(24)
    app.config["JOBFLOW_TOKEN"] = token
    slots = settings.log_slots or Slots()

    def can_act() -> bool:
        if settings.act is None:
            return False
        return settings.user_header is None or bool(request.headers.get(settings.user_header))

    @app.before_request
    def check_host() -> None:
        if settings.hosts and request.host not in settings.hosts:
            abort(Response(f"this dashboard answers on {', '.join(settings.hosts)} only\n", status=421,
                           mimetype="text/plain"))

    @app.after_request
    def protect(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Content-Security-Policy", "default-src 'self'; style-src 'self'; "
                                    "img-src 'self' data:; frame-ancestors 'none'")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    def page(template: str, **context) -> str:
        return render_template(template, token=token if can_act() else "", actions=can_act(),
                               header=settings.header, logs=settings.logs is not None, **context)

    @app.get("/")
    def index():
        return page("list.html")

    @app.get("/jobflows/<namespace>/<name>")
    def jobflow_page(namespace: str, name: str):
        return page("jobflow.html", namespace=namespace, name=name)

    @app.get("/jobtemplates/<namespace>/<name>")
    def template_page(namespace: str, name: str):
        return template_shell("jobtemplate", namespace, name)

    @app.get("/jobflowtemplates/<namespace>/<name>")
    def schedule_page(namespace: str, name: str):
        return template_shell("jobflowtemplate", namespace, name)

    def template_shell(kind: str, namespace: str, name: str):
        """The live page even when the template is not there (404 then): one created a moment ago may not have
        reached this server's watch yet, and the stream draws it as soon as it does."""
        api_type, view = TEMPLATE_PAGES[kind]
        missing = view(pages, namespace, name) is None and api_type in store.synced
        return page(f"{kind}.html", namespace=namespace, name=name), 404 if missing else 200

    def listed() -> str:
        """The list's view for this request's filter (``ns``: a namespace; ``l``: a label selector)."""
        return pages.list_json(request.args.get("ns") or None, request.args.get("l", "").strip())

    @app.get("/api/jobflows")
    def jobflows_json():
        body = listed()
        error = json.loads(body).get("selectorError")
        if error:
            return jsonify(error=error), 400
        return Response(body, mimetype="application/json")

    @app.get("/api/jobflows/<namespace>/<name>")
    def jobflow_json(namespace: str, name: str):
        found = pages.jobflow(namespace, name)
        if found is None:
            if JOBFLOW not in store.synced:
                return jsonify(error="the dashboard is still listing the JobFlows: ask again in a moment"), 503
            return _missing(namespace, name)
        return Response(found[1], mimetype="application/json")

    @app.get("/api/jobflows/<namespace>/<name>/items/<flow>")
    def items_json(namespace: str, name: str, flow: str):
        try:
            view = pages.items(namespace, name, flow)
        except KeyError:
            return jsonify(error=f"JobFlow {namespace}/{name} has no flow {flow}"), 404
        return jsonify(view) if view is not None else _missing(namespace, name)

    @app.get("/api/jobflows/<namespace>/<name>/logs")
    def logs(namespace: str, name: str):
        """A flow's logs, live (:mod:`dashboard.logs`): ``flow``, and optionally ``item`` and ``container``."""
        if settings.logs is None:
            return jsonify(error=LOGS_OFF), 403
        refused = _cross_site_read()
        if refused:
            return jsonify(error=refused), 403
        flow, item = request.args.get("flow"), request.args.get("item")
        if not flow:
            return jsonify(error="name the flow: ?flow=NAME (and &item=N for one item of a forEach flow)"), 400
        if item is not None and not item.isdigit():
            return jsonify(error=f"item {item!r}: expected the item's index, a whole number from 0"), 400
        refused, user = proxy_user()
        if refused:
            return jsonify(error=refused), 403
        if not slots.take():
            return jsonify(error=f"{slots.limit} logs panes are open on this dashboard, its most at once: close "
                                 f"one, or run kubectl jobflow logs {name} {flow} -n {namespace} -f"), 429
        selection = Selection(flow=flow, item=None if item is None else int(item),
                              container=request.args.get("container") or None)
        body = LogStream(settings.logs, Request(namespace, name, selection, user=user), slots)
        return Response(body, mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.get("/stream")
    def stream():
        namespace, name = request.args.get("namespace"), request.args.get("name")
        kind = request.args.get("kind", "jobflow")
        if name and namespace and kind in TEMPLATE_PAGES:
            api_type, view = TEMPLATE_PAGES[kind]

            def body() -> str | None:
                found = view(pages, namespace, name)
                if found is None and api_type not in store.synced:
                    return None
                return found[1] if found else json.dumps({"missing": True, "namespace": namespace, "name": name})
        elif name and namespace:
            def body() -> str | None:
                found = pages.jobflow(namespace, name)
                if found is None and JOBFLOW not in store.synced:
                    return None  # not listed yet (a server just started): "no such JobFlow" would be a lie
                return found[1] if found else json.dumps({"missing": True, "namespace": namespace, "name": name})
        else:
            def body() -> str | None:
                return listed()
        return Response(stream_with_context(_events(store, body)), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/api/jobflows/<namespace>/<name>/<action>")
    def act(namespace: str, name: str, action: str):
        if settings.act is None:
            gate = " FLOW" if action in ANSWERS else ""
            return jsonify(error="this dashboard is read-only: it has no user identity to act with. Use kubectl "
                                 f"jobflow {action} {name}{gate} -n {namespace}, or kubectl jobflow dashboard"), 403
        if action not in ACTIONS:
            return jsonify(error=f"unknown action {action}: one of {', '.join(ACTIONS)}"), 404
        refused, user = guard()
        if refused:
            return jsonify(error=refused), 403
        body = request.get_json(silent=True)
        if body is not None and not isinstance(body, dict):
            return jsonify(error='the body must be a JSON object, e.g. {"flows": ["a"], "message": "why"}'), 400
        flows, said = (body or {}).get("flows") or [], (body or {}).get("message") or None
        if not isinstance(flows, list) or not all(isinstance(flow, str) for flow in flows):
            return jsonify(error='"flows" must be a list of flow names'), 400
        if action in ANSWERS and len(flows) != 1:
            return jsonify(error=f'"flows" must name the one approval gate to {action}'), 400
        if said is not None and not isinstance(said, str):
            return jsonify(error='"message" must be a text'), 400
        try:
            message = settings.act(action, namespace, name, flows, user, said)
        except ActionError as error:
            return jsonify(error=str(error)), error.status
        return jsonify(message=message)

    @app.post("/api/jobflowtemplates/<namespace>/<name>/<action>")
    def act_on_template(namespace: str, name: str, action: str):
        if settings.act is None or settings.act_template is None:
            verb = f"run {name}" if action == "run" else f"{action} jft/{name}"
            return jsonify(error=f"this dashboard is read-only: it has no user identity to act with. Use kubectl "
                                 f"jobflow {verb} -n {namespace}, or kubectl jobflow dashboard"), 403
        if action not in TEMPLATE_ACTIONS:
            return jsonify(error=f"unknown action {action}: one of {', '.join(TEMPLATE_ACTIONS)}"), 404
        refused, user = guard()
        if refused:
            return jsonify(error=refused), 403
        body = request.get_json(silent=True)
        if body is not None and not isinstance(body, dict):
            return jsonify(error='the body must be a JSON object, e.g. {"parameters": {"lr": "0.1"}}'), 400
        parameters = (body or {}).get("parameters") or {}
        if not isinstance(parameters, dict) or not all(isinstance(v, str) for v in parameters.values()):
            return jsonify(error='"parameters" must map each parameter\'s name to a text'), 400
        try:
            return jsonify(message=settings.act_template(action, namespace, name, parameters, user))
        except ActionError as error:
            return jsonify(error=str(error)), error.status

    def guard() -> tuple[str | None, str | None]:
        """Why this POST may not act (or None), and the user the proxy names (None: the dashboard's own)."""
        refused = _cross_site(token)
        return (refused, None) if refused else proxy_user()

    def proxy_user() -> tuple[str | None, str | None]:
        """Why this request has no user (or None), and the user the proxy names (None: no proxy, the dashboard's
        own identity)."""
        if settings.user_header is None:
            return None, None
        user = request.headers.get(settings.user_header)
        if not user:
            return f"no user: the proxy in front of this dashboard did not send {settings.user_header}", None
        return None, user

    return app


class ActionError(RuntimeError):
    def __init__(self, message: str, *, status: int = 409) -> None:
        super().__init__(message)
        self.status = status


def _cross_site(token: str) -> str | None:
    """Why this POST may not act, or None: it must come from this app's own pages."""
    refused = _cross_site_read()
    if refused:
        return refused
    sent = request.headers.get(TOKEN_HEADER, "")
    if not hmac.compare_digest(sent.encode(), token.encode()):
        return f"refused: the {TOKEN_HEADER} header is missing or wrong (reload the page)"
    return None


def _cross_site_read() -> str | None:
    """Why this request may not read (the logs: they may hold secrets), or None: a browser says where it comes from
    (``Origin``, ``Sec-Fetch-Site``), and it must be this app's own page (or typed in: ``none``); a request without
    those headers (curl, a script) is not a browser's on another site's behalf, and passes."""
    origin = request.headers.get("Origin")
    if origin is not None:
        own = urlsplit(request.host_url)
        theirs = urlsplit(origin)
        if (theirs.scheme, theirs.netloc) != (own.scheme, own.netloc):
            return f"refused: a request from {origin} (another site) may not act here"
    if request.headers.get("Sec-Fetch-Site") not in (None, "same-origin", "none"):
        return "refused: a cross-site request may not act here"
    return None


def _missing(namespace: str, name: str):
    return jsonify(error=f"no JobFlow {namespace}/{name} (yet): check the name and the namespace"), 404


def _events(store: Store, body: Callable[[], str | None]) -> Iterator[str]:
    """Server-sent events: the view now, then again whenever it changes; a keep-alive comment when idle."""
    sent = None
    yield "retry: 1000\n\n"
    while True:
        version = store.version
        current = body()
        if current is not None and current != sent:
            yield f"event: view\ndata: {current}\n\n"
            sent = current
        if store.wait(version, KEEPALIVE) == version:
            yield ": keep-alive\n\n"
        else:
            time.sleep(COALESCE)
