"""HTTP routes: parse, call the reconciler, map the outcome to an HTTP status. Nothing else happens here."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from flask import Blueprint, current_app, jsonify, request
from pydantic import ValidationError

from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, VCJOB

from apiclient.rest import ApiError, Conflict, Unavailable
from handlers import metrics
from handlers.approvals import answer_event, is_answer
from handlers.dispatch import Dispatcher, PartlyFailed, Result
from handlers.hints import BadEvent, Hint, data_of, hint_from_request, parse_cloudevent
from handlers.jobflows import Reconciler
from handlers.kube import KubeApi, shared_client
from handlers.writes import Replan
from jobflow_core.routing.snapshots import trim_jobflow

log = logging.getLogger("handlers")
bp = Blueprint("handlers", __name__)

DONE = ("", 202)


def _reconciler() -> Reconciler:
    kube = current_app.config.get("KUBE") or KubeApi(shared_client())
    clock = current_app.config.get("CLOCK") or (lambda: datetime.now(UTC))
    return Reconciler(kube, clock=clock, recheck_seconds=current_app.config["RECHECK_SECONDS"],
                      probe_timeout=current_app.config["PROBE_TIMEOUT_SECONDS"],
                      notifier=current_app.config.get("NOTIFIER"), namespaces=current_app.config["NAMESPACES"],
                      writes=current_app.config["WRITES"])


def _error(status: int, message: str, **extra: object):
    return jsonify({"error": message, **extra}), status


def dispatch(dispatcher: Dispatcher, hint: Hint) -> Result:
    """Hand the hint to the dispatcher method for its object type."""
    if hint.snapshot_state != "signed" and hint.about in (JOBFLOW, VCJOB):  # the events that could carry one
        metrics.SNAPSHOTS.labels(hint.snapshot_state).inc()
    if hint.about is None:
        return dispatcher.resync()
    if hint.about is JOBFLOW:
        return dispatcher.jobflow(hint.namespace, hint.name, snapshot=hint.snapshot, controller=hint.controller)
    if hint.about is JOBTEMPLATE:
        return dispatcher.jobtemplate(hint.namespace, hint.name)
    if hint.about is JOBFLOWTEMPLATE:
        return dispatcher.jobflowtemplate(hint.namespace, hint.name)
    return dispatcher.vcjob(hint.namespace, hint.name, controller=hint.controller, deleted=hint.deleted,
                            snapshot=hint.snapshot)


def _answer(result: Result, *, replies: bool):
    """202; to our event source (``replies``) with what it needs: the JobFlows as written (its next snapshot of
    each must not be older) and those handed back to it. Other senders get an empty body: a Broker would take a
    body for an event to re-inject."""
    if not replies:
        return DONE
    written = [trim_jobflow(outcome.written) for outcome in result.outcomes if outcome.written is not None]
    return jsonify({"written": written, "handed": [list(key) for key in result.handed]}), 202


def _run(handle, *, replies: bool = False):
    """Run a reconcile and turn transient faults into statuses the event bus retries."""
    try:
        with metrics.RECONCILE.time():
            result = handle()
    except (Conflict, Replan) as error:
        # 503, not 409: both delivery paths retry a 503, while Knative's ApiServerSource adapter, sending straight
        # to the handler, drops a 409 (it retries only 404, 413, 425, 429, 502, 503 and 504).
        log.warning("conflict: %s", error)
        reply, status = _error(503, str(error), retry=True, reason="Conflict")
        return reply, status, {"Retry-After": "1"}
    except Unavailable as error:
        log.warning("API server unavailable: %s", error)
        return _error(503, str(error), retry=True)
    except ApiError as error:
        # A 4xx the shell does not handle itself, e.g. 403 when the handler's account may not act there: retrying
        # cannot help, and it is no bug of ours either.
        log.error("the API server refused: %s %s", error.status, error.reason)
        status = error.status if 400 <= (error.status or 0) < 500 else 502
        return _error(status, f"the API server answered {error.status} {error.reason}: {error.body or ''}"[:1024])
    except PartlyFailed as error:
        # The others were reconciled. Ask for the event again only when that can help.
        if error.retry:
            reply, status = _error(503, str(error), retry=True, failed=error.failures)
            return reply, status, {"Retry-After": "1"}
        return _error(422, str(error), failed=error.failures)
    except _Refused as refused:
        return _error(refused.status, str(refused))
    except ValidationError as error:
        # An object in the cluster that our models cannot read (e.g. a newer Volcano wrote a field we reject):
        # retrying will not help, and the event is fine; say what to fix.
        log.error("cannot read an object from the API server: %s", error)
        return _error(422, f"an object in the cluster does not match the JobFlow API: {error.errors()[:3]}")
    for outcome in result.outcomes:
        log.info("reconciled %s from %s: phase=%s created=%s deleted=%s status_written=%s attempts=%d",
                 outcome.jobflow, outcome.source, outcome.phase, outcome.created, outcome.deleted,
                 outcome.status_written, outcome.attempts)
    for looked in result.templates:
        if looked.created or looked.deleted or looked.status_written:
            log.info("JobFlowTemplate %s: %s created=%s deleted=%s status_written=%s", looked.template,
                     looked.verdict, looked.created, looked.deleted, looked.status_written)
    if result.handed:
        log.info("handed %d JobFlow(s) back to the event source", len(result.handed))
    return _answer(result, replies=replies)


def _snapshot_key() -> bytes | None:
    """The key snapshots are checked with: the app's :class:`~apiclient.snapshot_key.FollowedKey`, or bytes."""
    key = current_app.config["SNAPSHOT_KEY"]
    return key() if callable(key) else key


@bp.post("/")
def receive_event():
    try:
        hint = hint_from_request(dict(request.headers), request.get_data(), key=_snapshot_key())
    except BadEvent as error:
        log.warning("rejected event: %s", error)
        metrics.EVENTS.labels("invalid", "400").inc()
        return _error(400, str(error))
    served = current_app.config["NAMESPACES"]
    if hint.about is not None and served and hint.namespace not in served:
        metrics.EVENTS.labels(metrics.event_type_label(hint.event_type), "400").inc()
        return _error(400, f"this handler serves namespaces {', '.join(served)} (NAMESPACES), and the event names "
                           f"{hint.namespace!r}: send it only the events of those (the event source's NAMESPACES)")
    log.info("event %s %s %s/%s", hint.event_type, hint.about.kind if hint.about else "(all)", hint.namespace,
             hint.name)
    reply = _run(lambda: dispatch(Dispatcher(_reconciler(), hand_back=hint.replies), hint), replies=hint.replies)
    metrics.EVENTS.labels(metrics.event_type_label(hint.event_type), str(reply[1])).inc()
    return reply


@bp.post("/trigger")
def receive_trigger_event():
    """Any CloudEvent that may start runs of JobFlowTemplates (their ``spec.triggers``); 202 whether or not one
    matched (an event nobody listens to is not an error), 400 for a request that is not a CloudEvent. Triggers are
    imported on the first such event (a handler woken for a JobFlow's event does not need them)."""
    from jobflow_core.schedules.triggers import incoming

    try:
        event = parse_cloudevent(dict(request.headers), request.get_data())
    except BadEvent as error:
        metrics.EVENTS.labels("invalid", "400").inc()
        return _error(400, str(error))
    attributes = {key: event.get_attributes().get(key) for key in ("id", "source", "type", "subject", "time")}
    if attributes["time"] is not None and not isinstance(attributes["time"], str):
        attributes["time"] = attributes["time"].isoformat()
    received = incoming(attributes, data_of(event))
    reply = _run(lambda: Dispatcher(_reconciler()).cloudevent(received))
    if is_answer(received) and reply[1] == 202:  # the triggers had it first: an answer is a trigger's event too
        reply = _run(lambda: _answer_gate(received, extensions=dict(event.get_attributes())))
        metrics.EVENTS.labels("approval", str(reply[1])).inc()
        return reply
    metrics.EVENTS.labels("trigger", str(reply[1])).inc()
    return reply


class _Refused(Exception):
    """An approval event refused (:mod:`handlers.approvals`): its reply."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _answer_gate(event, *, extensions: dict) -> Result:
    """Take an approval event's answer (:mod:`handlers.approvals`); a refusal is raised to :func:`_run`."""
    reply = answer_event(_reconciler(), event, extensions=extensions, key=_snapshot_key())
    if reply.status != 202:
        raise _Refused(reply.status, reply.message)
    return Result()


@bp.post("/resync")
def resync():
    return _run(lambda: Dispatcher(_reconciler()).resync())


@bp.get("/metrics")
def prometheus_metrics():
    body, content_type = metrics.exposition()
    return body, 200, {"Content-Type": content_type}


@bp.get("/healthz")
def healthz():
    return "ok", 200


@bp.get("/version")
def version():
    from apiclient.version import version as installed

    return jsonify({"version": installed()}), 200
