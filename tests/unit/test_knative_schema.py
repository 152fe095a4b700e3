"""Every Knative object of ``knative/`` has only fields Knative knows, with values its webhooks accept.

The API server's dry-run (tests/cluster/test_knative_manifests.py) cannot see a typo inside the parts of Knative's
CRDs that preserve unknown fields; the models of ``knative_types.py`` can. The second half shows that they do: each
mistake below passes the CRD schemas, and fails here.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from pydantic import ValidationError

from knative_types import RENDERS, is_knative, rendered, validate


def knative_objects() -> dict[str, dict]:
    found = {}
    for directory in RENDERS:
        for doc in rendered(directory):
            if is_knative(doc):
                found[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return found


def the(kind: str, name: str) -> dict:
    return copy.deepcopy(knative_objects()[f"{kind}/{name}"])


@pytest.mark.parametrize("key", sorted(knative_objects()))
def test_every_knative_object_has_only_fields_knative_knows(key: str) -> None:
    validate(knative_objects()[key])


def test_both_wirings_have_the_kinds_the_models_cover() -> None:
    assert {key.split("/")[0] for key in knative_objects()} == {
        "Service", "Broker", "Trigger", "ApiServerSource", "PingSource", "ContainerSource", "SinkBinding"}


def _parent(doc: dict, path: tuple) -> dict | list:
    node = doc
    for part in path[:-1]:
        node = node[part]
    return node


def _set(*path, value) -> Callable[[dict], None]:
    """Set the item at ``path`` (keys and list indexes) of a document."""
    return lambda doc: _parent(doc, path).__setitem__(path[-1], value)


def _rename(*path, to: str) -> Callable[[dict], None]:
    """Rename the key at ``path``, keeping its value: the typo a hand makes."""
    return lambda doc: _parent(doc, path).__setitem__(to, _parent(doc, path).pop(path[-1]))


ANNOTATIONS = ("spec", "template", "metadata", "annotations")
POD = ("spec", "template", "spec")

MISTAKES = {
    "ApiServerSource: a misspelt mode": (
        "ApiServerSource", "jobflow-objects", _rename("spec", "mode", to="mdoe"), "mdoe"),
    "ApiServerSource: a mode that does not exist": (
        "ApiServerSource", "jobflow-objects", _set("spec", "mode", value="Resources"), "'Reference' or 'Resource'"),
    "ApiServerSource: a misspelt label selector": (
        "ApiServerSource", "jobflow-objects",
        _rename("spec", "resources", 2, "selector", "matchExpressions", to="matchExpression"), "matchExpression"),
    "Trigger: misspelt filters": (
        "Trigger", "jobflow-vcjobs", _rename("spec", "filters", to="filtres"), "filtres"),
    "Trigger: two dialects in one filter item": (
        "Trigger", "jobflow-vcjobs", _set("spec", "filters", 0, "exact", value={"kind": "Job"}), "multiple dialects"),
    "Trigger: a filter on apiVersion, which no event has (the extension is apiversion)": (
        "Trigger", "jobflow-vcjobs", _set("spec", "filters", 1, "exact", value={"apiVersion": "batch/v1"}),
        "lowercase alphanumeric"),
    "Trigger: misspelt retry": (
        "Trigger", "jobflow-jobflows", _rename("spec", "delivery", "retry", to="retries"), "retries"),
    "Trigger: a backoff delay that is not ISO-8601": (
        "Trigger", "jobflow-jobflows", _set("spec", "delivery", "backoffDelay", value="500ms"), "ISO-8601"),
    "Trigger: an absolute URI next to a ref": (
        "Trigger", "jobflow-resync", _set("spec", "subscriber", "uri", value="http://jobflow-handler/resync"),
        "Absolute URI"),
    "Broker: a misspelt dead-letter sink": (
        "Broker", "jobflow", _set("spec", value={"delivery": {"deadLetterSInk": {"uri": "http://x"}}}),
        "deadLetterSInk"),
    "Service: a misspelt autoscaling annotation": (
        "Service", "jobflow-handler",
        _rename(*ANNOTATIONS, "autoscaling.knative.dev/min-scale", to="autoscaling.knative.dev/minimum-scale"),
        "unknown autoscaling annotations"),
    "Service: autoscaling annotations on the Service instead of its template": (
        "Service", "jobflow-handler", _set("metadata", "annotations", value={"autoscaling.knative.dev/min-scale": "0"}),
        "spec.template.metadata.annotations"),
    "Service: a pod-level securityContext (behind a feature flag)": (
        "Service", "jobflow-handler", _set(*POD, "securityContext", value={"runAsNonRoot": True}), "securityContext"),
    "Service: PORT in env (Knative sets it)": (
        "Service", "jobflow-handler", _set(*POD, "containers", 0, "env", value=[{"name": "PORT", "value": "80"}]),
        "set by Knative"),
    "Service: a timeout above Knative's maximum": (
        "Service", "jobflow-handler", _set(*POD, "timeoutSeconds", value=900), "less than or equal to 600"),
    "PingSource: a schedule that is not cron": (
        "PingSource", "jobflow-resync", _set("spec", "schedule", value="every minute"), "not a cron expression"),
    "ContainerSource: a misspelt sink": (
        "ContainerSource", "jobflow-eventsource", _rename("spec", "sink", to="sinc"), "sinc"),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_mistake_the_crd_schema_lets_through_fails_here(mistake: str) -> None:
    kind, name, mutate, message = MISTAKES[mistake]
    doc = the(kind, name)
    mutate(doc)

    with pytest.raises(ValidationError) as error:
        validate(doc)
    assert message in str(error.value)
