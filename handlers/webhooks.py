"""Admission webhook routes: ``POST /validate/jobflows``, ``/validate/jobtemplates`` and
``/validate/jobflowtemplates``.

The API server POSTs an ``admission.k8s.io/v1`` AdmissionReview and expects one back with status 200; the
decision itself is made by the pure core (:mod:`jobflow_core.validation.review`). A body that is not JSON, or not an
AdmissionReview, is answered 400 with a JSON error saying why (the API server then applies the webhook's
``failurePolicy``); nothing a client sends makes these routes answer 500.

The API server only calls webhooks over HTTPS: serve the app with TLS (gunicorn ``--certfile``/``--keyfile``,
as ``manifests/webhook/`` does). The decision needs no API access. A JobFlow that is allowed also gets a
warning for each flow whose vcjob could never be scheduled on its Volcano queue (its gang asks more than the queue's
capability, or all nodes' allocatable; with ``wholeFlowAdmission``, a stage of several gangs it can never hold at
once): for that the route reads the namespace's JobTemplates, the queues and the nodes (:mod:`handlers.queues`, as
the read-only ClusterRole ``jobflow-admission`` allows), and when it cannot, it warns of nothing and logs why, at
WARNING the first time (an install without that role would otherwise never warn, and never say so). A warning, not
a refusal: upstream accepts such a JobFlow, the queue or the nodes may grow, and the engine blocks the flow at run
time anyway (``Unschedulable``).
"""

from __future__ import annotations

import gc
import json
import logging

from flask import Blueprint, current_app, jsonify, request

log = logging.getLogger("handlers.webhooks")
bp = Blueprint("admission", __name__)


@bp.record_once
def _freeze_what_is_loaded(_state) -> None:
    # A review of a 2,000-flow JobFlow allocates some 100,000 objects, enough to set off the garbage collector's
    # oldest generation, which then walks every object the process holds: mostly the modules just imported (the
    # Kubernetes client alone is tens of thousands), which never become garbage. Freezing them when the app is
    # built takes them out of every later collection; it about halves a big review's time (docs/webhook.md).
    gc.freeze()


@bp.post("/validate/<any(jobflows, jobtemplates, jobflowtemplates):resource>")
def validate(resource: str):
    # Imported on the first review: a handler that only reconciles (the usual one) never loads the webhooks' core.
    from jobflow_core.validation.review import KINDS, BadReview, review

    try:
        answer = review(json.loads(request.get_data()), kind=KINDS[resource])
    # JSONDecodeError and UnicodeDecodeError for a body that is not JSON; RecursionError is the json module's
    # answer to absurdly deep nesting.
    except (BadReview, json.JSONDecodeError, UnicodeDecodeError, RecursionError) as error:
        log.warning("rejected admission request for %s: %s", resource, error)
        return jsonify({"error": f"not an AdmissionReview request: {error}"}), 400
    outcome = answer["response"]
    if not outcome["allowed"]:
        log.info("denied %s %s: %s", resource, outcome["uid"], outcome["status"]["message"])
    elif resource == "jobflows":
        warnings = _capacity_warnings(json.loads(request.get_data()))
        if warnings:
            outcome["warnings"] = [*(outcome.get("warnings") or ()), *warnings]
    return jsonify(answer)


def _capacity_warnings(body: dict) -> list[str]:
    """What of the JobFlow under review could never be scheduled (:func:`jobflow_core.queueing.line.unschedulable`);
    nothing when the JobTemplates or queues cannot be read."""
    from handlers.kube import KubeApi, shared_client
    from handlers.queues import QueueReader
    from jobflow_core.models import JobFlow, JobTemplate
    from jobflow_core.queueing.line import queue_of, unschedulable
    from jobflow_core.vocabulary.naming import template_name

    admission = body.get("request") or {}
    if admission.get("operation") not in ("CREATE", "UPDATE"):
        return []
    try:
        raw = dict(admission["object"])
        raw.setdefault("metadata", {}).setdefault("namespace", admission.get("namespace"))
        jobflow = JobFlow.model_validate(raw)
        kube = current_app.config.get("KUBE") or KubeApi(shared_client())
        names = {template_name(flow) for flow in jobflow.spec.flows or ()}
        templates = {t["metadata"]["name"]: JobTemplate.model_validate(t)
                     for t in kube.list_jobtemplates(jobflow.namespace) if t["metadata"]["name"] in names}
        queues = sorted({queue_of(t.spec.to_wire()) for t in templates.values()})
        return unschedulable(jobflow, templates=templates, queues=QueueReader(kube).capacities(queues))
    except Exception as error:  # noqa: BLE001 - a warning we cannot work out is no reason to fail a review
        _cannot_warn(error)
        return []


def _cannot_warn(error: Exception) -> None:
    """Say why no capacity warning could be worked out: at WARNING once per app, then at INFO (every review of a
    webhook without the rights would say it again)."""
    from apiclient.rest import ApiError

    why = f"{error.status} {error.reason}" if isinstance(error, ApiError) else f"{type(error).__name__}: {error}"
    if current_app.extensions.setdefault("jobflow-admission-cannot-read", []):
        log.info("no capacity warnings for this JobFlow: %s", why)
        return
    current_app.extensions["jobflow-admission-cannot-read"].append(why)
    log.warning("the webhook cannot read the JobTemplates, queues or nodes (%s), so it warns of no JobFlow that can "
                "never be scheduled: give its ServiceAccount a token and ClusterRole jobflow-admission "
                "(manifests/webhook/base/admission.yaml, docs/rbac.md); said once, then at INFO", why)
