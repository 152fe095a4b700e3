"""Admission webhook routes: ``POST /validate/jobflows``, ``/validate/jobtemplates`` and
``/validate/jobflowtemplates``.

The API server POSTs an ``admission.k8s.io/v1`` AdmissionReview and expects one back with status 200; the
decision itself is made by the pure core (:mod:`jobflow_core.admission`). A body that is not JSON, or not an
AdmissionReview, is answered 400 with a JSON error saying why (the API server then applies the webhook's
``failurePolicy``); nothing a client sends makes these routes answer 500.

The API server only calls webhooks over HTTPS: serve the app with TLS (gunicorn ``--certfile``/``--keyfile``,
as ``manifests/webhook/`` does). The routes need no API access at all.
"""

from __future__ import annotations

import gc
import json
import logging

from flask import Blueprint, jsonify, request

log = logging.getLogger("handlers.admission")
bp = Blueprint("admission", __name__)


@bp.record_once
def _freeze_what_is_loaded(_state) -> None:
    # A review of a 2,000-flow JobFlow allocates some 100,000 objects, enough to set off the garbage collector's
    # oldest generation, which then walks every object the process holds: mostly the modules just imported (the
    # Kubernetes client alone is tens of thousands), which never become garbage. Freezing them when the app is
    # built takes them out of every later collection; it about halves a big review's time (docs/admission.md).
    gc.freeze()


@bp.post("/validate/<any(jobflows, jobtemplates, jobflowtemplates):resource>")
def validate(resource: str):
    # Imported on the first review: a handler that only reconciles (the usual one) never loads the webhooks' core.
    from jobflow_core.admission import KINDS, BadReview, review

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
    return jsonify(answer)
