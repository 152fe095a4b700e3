"""Admission webhook routes: ``POST /validate/jobflows``, ``/validate/jobtemplates`` and
``/validate/jobflowtemplates``.

The API server POSTs an ``admission.k8s.io/v1`` AdmissionReview and expects one back with status 200; the
decision itself is made by the pure core (:mod:`jobflow_core.validation.review`). A body that is not JSON, or not an
AdmissionReview, is answered 400 with a JSON error saying why (the API server then applies the webhook's
``failurePolicy``); nothing a client sends makes these routes answer 500.

The API server only calls webhooks over HTTPS: serve the app with TLS (gunicorn ``--certfile``/``--keyfile``,
as ``manifests/webhook/`` does). The decision needs one read: to check the vcjob specs inside an object for unknown
fields, Volcano's vcjob CRD (its schema, read every five minutes at most; without it, those fields are not checked).
A JobFlow that is allowed also gets a warning for each flow whose vcjob could never be scheduled on its Volcano
queue (its gang asks more than the queue's capability, or all nodes' allocatable; with ``wholeFlowAdmission``, a
stage of several gangs it can never hold at once): for that the route reads the namespace's JobTemplates, the
queues and the nodes (:mod:`handlers.queues`). Both reads are what the read-only ClusterRole ``jobflow-admission``
allows; when one fails, the webhook checks or warns of nothing more and logs why, at WARNING the first time (an
install without that role would otherwise never say so). A warning, not a refusal: upstream accepts such a JobFlow,
the queue or the nodes may grow, and the engine blocks the flow at run time anyway (``Unschedulable``).

A JobFlow (or a JobFlowTemplate's run) with child flows is checked with the whole tree of child JobFlows below it
(:mod:`jobflow_core.validation.nesting`), which takes one more read: a LIST of the namespace's JobFlowTemplates
(:func:`_flow_templates`), made only for those objects, so that an ordinary review costs no request. When it fails,
the object is allowed as far as the tree goes, with a warning that it was not checked (and the log says why, at
WARNING the first time).
"""

from __future__ import annotations

import gc
import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, current_app, jsonify, request

log = logging.getLogger("handlers.webhooks")
bp = Blueprint("admission", __name__)

SCHEMA_SECONDS = 300.0
"""How long the vcjob CRD's schema read is used before it is read again (Volcano may be upgraded under us)."""


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
        answer = review(json.loads(request.get_data()), kind=KINDS[resource], vcjob_spec=_vcjob_spec(),
                        flow_templates=_flow_templates, jobflows=_jobflows)
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


def _vcjob_spec() -> Mapping[str, Any] | None:
    """Volcano's schema of a vcjob's spec, from the cluster's own CRD (the Volcano that will run the vcjobs), read at
    most every :data:`SCHEMA_SECONDS`; None when it cannot be read: the vcjob specs are then not checked for unknown
    fields (and the first time, it is logged why). ``VCJOB_SPEC_SCHEMA`` in the app's config gives it instead."""
    from handlers.kube import WebhookApi, shared_client
    from jobflow_core.validation.fields import VCJOB_CRD, vcjob_spec_schema

    if "VCJOB_SPEC_SCHEMA" in current_app.config:
        return current_app.config["VCJOB_SPEC_SCHEMA"]
    read = current_app.extensions.get("jobflow-vcjob-schema")
    if read is not None and time.monotonic() - read[0] < SCHEMA_SECONDS:
        return read[1]
    schema = None
    try:
        kube = current_app.config.get("KUBE") or WebhookApi(shared_client())
        schema = vcjob_spec_schema(kube.get_crd(VCJOB_CRD))
        if schema is None:
            raise LookupError(f"the cluster has no CRD {VCJOB_CRD} with a v1alpha1 schema (is Volcano installed?)")
    except Exception as error:  # noqa: BLE001 - a check we cannot make is no reason to fail a review
        said = current_app.extensions.setdefault("jobflow-vcjob-schema-unread", [])
        (log.info if said else log.warning)(
            "the webhook cannot read %s (%s), so it does not check vcjob specs for unknown fields: give its "
            "ServiceAccount the ClusterRole jobflow-admission (manifests/webhook/base/admission.yaml)", VCJOB_CRD,
            f"{type(error).__name__}: {error}")
        said.append(error)
    current_app.extensions["jobflow-vcjob-schema"] = (time.monotonic(), schema)
    return schema


def _flow_templates(namespace: str) -> dict[str, Any] | str:
    """The JobFlowTemplates of ``namespace`` by name (one that does not parse is left out: the planner refuses to
    make a child from it anyway), or why they could not be read."""
    from jobflow_core.models import JobFlowTemplate

    return _by_name(namespace, "list_jobflowtemplates", JobFlowTemplate, what="the JobFlowTemplates",
                    so="it checks no tree of child JobFlows")


def _jobflows(namespace: str) -> dict[str, Any] | str:
    """The JobFlows of ``namespace`` by name (one that does not parse is left out), or why they could not be read:
    read only for a JobFlow created waiting for another by name (jobflow_core.validation.awaits.jobflow_cycle)."""
    from jobflow_core.models import JobFlow

    return _by_name(namespace, "list_jobflows", JobFlow, what="the JobFlows",
                    so="it does not check JobFlows that wait for each other")


def _by_name(namespace: str, lister: str, model: Any, *, what: str, so: str) -> dict[str, Any] | str:
    """The objects ``lister`` (a method of the webhook's KubeApi) lists in ``namespace``, parsed as ``model``, by
    name (one that does not parse is left out), or why they could not be read (:func:`_unread`)."""
    from pydantic import ValidationError

    from handlers.kube import WebhookApi, shared_client

    try:
        kube = current_app.config.get("KUBE") or WebhookApi(shared_client())
        found = {}
        for raw in getattr(kube, lister)(namespace):
            try:
                parsed = model.model_validate(raw)
            except ValidationError:
                continue
            found[parsed.name] = parsed
        return found
    except Exception as error:  # noqa: BLE001 - a check we cannot make is no reason to fail a review
        return _unread(what, error, so=so)


def _unread(what: str, error: Exception, *, so: str) -> str:
    """Log that the webhook cannot read ``what`` (``so``: what it then does without), at WARNING the first time per
    app and ``what`` (an install without the ClusterRole would otherwise never say so), then at INFO (every review
    would say it again); and say why."""
    from apiclient.rest import ApiError

    why = f"{error.status} {error.reason}" if isinstance(error, ApiError) else f"{type(error).__name__}: {error}"
    said = current_app.extensions.setdefault("jobflow-admission-unread", set())
    if what in said:
        log.info("the webhook still cannot read %s (%s), so %s", what, why, so)
        return why
    said.add(what)
    log.warning("the webhook cannot read %s (%s), so %s: give its ServiceAccount a token and ClusterRole "
                "jobflow-admission (manifests/webhook/base/admission.yaml, docs/rbac.md); said once, then at INFO",
                what, why, so)
    return why


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
        _unread("the JobTemplates, queues or nodes", error, so="it warns of no JobFlow that can never be scheduled")
        return []
