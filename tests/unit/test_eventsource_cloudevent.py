"""The event source's CloudEvents are exactly Knative ApiServerSource's (binary HTTP mode), and honour K_CE_OVERRIDES.

What ApiServerSource sends for a JobFlow update in Reference mode (the reference's Example A)::

    Ce-Specversion: 1.0
    Ce-Type: dev.knative.apiserver.ref.update
    Ce-Source: https://10.96.0.1:443
    Ce-Subject: /apis/flow.volcano.sh/v1alpha1/namespaces/team-a/jobflows/etl-nightly
    Ce-Kind: JobFlow / Ce-Apiversion: flow.volcano.sh/v1alpha1 / Ce-Name: etl-nightly / Ce-Namespace: team-a
    Content-Type: application/json
    {"kind":"JobFlow","namespace":"team-a","name":"etl-nightly","apiVersion":"flow.volcano.sh/v1alpha1"}
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from cloudevents.core.bindings.http import HTTPMessage, from_http_event

from apiclient.cloudevents import Change, Envelope, Mode, encode, parse_overrides
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB

SOURCE = "https://10.96.0.1:443"
FLOW = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
        "metadata": {"name": "etl-nightly", "namespace": "team-a", "resourceVersion": "48213", "uid": "9c1e"},
        "spec": {"flows": [{"name": "extract"}]}, "status": {"state": {"phase": "Running"}}}


def sent(envelope: Envelope, *, mode: Mode = Mode.REFERENCE, overrides: dict[str, str] | None = None,
         now: datetime | None = None) -> tuple[dict[str, str], bytes]:
    """Headers (names lower-cased: HTTP header names are case-insensitive) and body of the request."""
    headers, body = encode(envelope, mode=mode, source=SOURCE, overrides=overrides or {}, now=now)
    return {name.lower(): value for name, value in headers.items()}, body


@pytest.mark.parametrize("change", list(Change))
def test_a_reference_event_has_exactly_apiserversource_attributes(change):
    headers, _ = sent(Envelope(JOBFLOW, change, FLOW))

    assert headers.pop("ce-id")
    assert headers.pop("ce-time")
    assert headers == {
        "ce-specversion": "1.0",
        "ce-type": f"dev.knative.apiserver.ref.{change}",
        "ce-source": SOURCE,
        "ce-subject": "/apis/flow.volcano.sh/v1alpha1/namespaces/team-a/jobflows/etl-nightly",
        "content-type": "application/json",
        "ce-kind": "JobFlow",
        "ce-apiversion": "flow.volcano.sh/v1alpha1",
        "ce-name": "etl-nightly",
        "ce-namespace": "team-a",
    }


def test_reference_data_is_exactly_the_object_reference_in_go_key_order():
    _, body = sent(Envelope(JOBFLOW, Change.UPDATE, FLOW))

    data = json.loads(body)
    assert list(data.items()) == [("kind", "JobFlow"), ("namespace", "team-a"), ("name", "etl-nightly"),
                                  ("apiVersion", "flow.volcano.sh/v1alpha1")]


@pytest.mark.parametrize("change", list(Change))
def test_a_resource_event_carries_the_whole_object(change):
    headers, body = sent(Envelope(JOBFLOW, change, FLOW), mode=Mode.RESOURCE)

    assert headers["ce-type"] == f"dev.knative.apiserver.resource.{change}"
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == FLOW


def test_the_subject_of_a_vcjob_and_a_jobtemplate_is_their_pseudo_self_link():
    job = {"metadata": {"name": "train-42", "namespace": "team-a"}}
    headers, _ = sent(Envelope(VCJOB, Change.ADD, job))
    assert headers["ce-subject"] == "/apis/batch.volcano.sh/v1alpha1/namespaces/team-a/jobs/train-42"
    assert (headers["ce-kind"], headers["ce-apiversion"]) == ("Job", "batch.volcano.sh/v1alpha1")

    headers, _ = sent(Envelope(JOBTEMPLATE, Change.ADD, job))
    assert headers["ce-subject"] == "/apis/flow.volcano.sh/v1alpha1/namespaces/team-a/jobtemplates/train-42"
    assert (headers["ce-kind"], headers["ce-apiversion"]) == ("JobTemplate", "flow.volcano.sh/v1alpha1")


def test_every_event_gets_a_fresh_id():
    ids = {sent(Envelope(JOBFLOW, Change.UPDATE, FLOW))[0]["ce-id"] for _ in range(50)}
    assert len(ids) == 50


def test_the_time_is_rfc3339_utc_of_the_moment_of_sending():
    now = datetime(2026, 6, 1, 10, 0, 0, 123456, tzinfo=timezone.utc)
    headers, _ = sent(Envelope(JOBFLOW, Change.UPDATE, FLOW), now=now)
    assert headers["ce-time"] == "2026-06-01T10:00:00.123456Z"

    headers, _ = sent(Envelope(JOBFLOW, Change.UPDATE, FLOW))
    sent_at = datetime.fromisoformat(headers["ce-time"].replace("Z", "+00:00"))
    assert abs((datetime.now(timezone.utc) - sent_at).total_seconds()) < 5


@pytest.mark.parametrize("mode", list(Mode))
def test_the_cloudevents_sdk_reads_the_event_back(mode):
    overrides = parse_overrides('{"extensions": {"extra": "this is an extra attribute", "additional": "42"}}')
    headers, body = encode(Envelope(JOBFLOW, Change.DELETE, FLOW), mode=mode, source=SOURCE, overrides=overrides)
    # Go's net/http canonicalises header names (Ce-Specversion); a receiver must cope with both spellings.
    for spelling in (headers, {name.title(): value for name, value in headers.items()}):
        event = from_http_event(HTTPMessage(spelling, body))

        prefix = "ref" if mode is Mode.REFERENCE else "resource"
        assert event.get_type() == f"dev.knative.apiserver.{prefix}.delete"
        assert event.get_source() == SOURCE
        assert event.get_subject() == "/apis/flow.volcano.sh/v1alpha1/namespaces/team-a/jobflows/etl-nightly"
        assert event.get_datacontenttype() == "application/json"
        assert event.get_time().tzinfo is not None
        assert {name: event.get_extension(name) for name in ("kind", "apiversion", "name", "namespace")} == {
            "kind": "JobFlow", "apiversion": "flow.volcano.sh/v1alpha1", "name": "etl-nightly",
            "namespace": "team-a"}
        assert event.get_extension("extra") == "this is an extra attribute"
        assert event.get_extension("additional") == "42"
        data = event.get_data()
        assert data == (FLOW if mode is Mode.RESOURCE else
                        {"kind": "JobFlow", "namespace": "team-a", "name": "etl-nightly",
                         "apiVersion": "flow.volcano.sh/v1alpha1"})


def test_overrides_are_added_as_extension_headers():
    overrides = parse_overrides('{"extensions": {"team": "ml", "tier": "gold"}}')
    headers, _ = sent(Envelope(JOBFLOW, Change.ADD, FLOW), overrides=overrides)
    assert (headers["ce-team"], headers["ce-tier"]) == ("ml", "gold")
    assert headers["ce-type"] == "dev.knative.apiserver.ref.add"


@pytest.mark.parametrize("text", [None, "", "  ", "{}", '{"extensions": {}}', '{"extensions": null}'])
def test_missing_or_empty_overrides_mean_none(text):
    assert parse_overrides(text) == {}


@pytest.mark.parametrize(("text", "says"), [
    ("extensions: {a: b}", "it is not JSON"),
    ('["extensions"]', 'of the form {"extensions"'),
    ('{"extensions": ["a", "b"]}', 'of the form {"extensions"'),
    ('{"extensions": "a=b"}', 'of the form {"extensions"'),
    ('{"extensions": {"Team": "ml"}}', "'Team': a CloudEvents extension name has only lower-case letters"),
    ('{"extensions": {"team-name": "ml"}}', "'team-name': a CloudEvents extension name"),
    ('{"extensions": {"": "ml"}}', "'': a CloudEvents extension name"),
    ('{"extensions": {"type": "my.type"}}', "'type' would replace the spec attribute"),
    ('{"extensions": {"source": "/me"}}', "'source' would replace the spec attribute"),
    ('{"extensions": {"replicas": 3}}', "'replicas': the value must be a JSON string"),
])
def test_bad_overrides_are_a_clear_value_error(text, says):
    with pytest.raises(ValueError, match="K_CE_OVERRIDES") as error:
        parse_overrides(text)
    assert says in str(error.value)


@pytest.mark.parametrize(("env", "says"), [
    ({"K_CE_OVERRIDES": '{"extensions": {"Team": "ml"}}'}, "bad configuration: K_CE_OVERRIDES extension 'Team'"),
    ({"K_SINK": "broker-ingress.knative-eventing/ns/default"}, "K_SINK must be an http:// or https:// URL"),
    ({"RESYNC_SECONDS": "0"}, "RESYNC_SECONDS must be a positive number"),
    ({"EVENT_MODE": "Full"}, "bad configuration: 'Full' is not a valid Mode"),
])
def test_the_event_source_refuses_to_start_with_bad_configuration(env, says):
    environment = {**os.environ, "K_SINK": "http://127.0.0.1:9/", **env}
    environment.pop("KUBECONFIG", None)  # it must stop before it ever talks to an API server
    done = subprocess.run([sys.executable, "-m", "eventsource"], env=environment, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert says in done.stderr


JOB = {"metadata": {"name": "etl-nightly-extract", "namespace": "team-a",
                    "ownerReferences": [{"kind": "JobFlow", "name": "etl-nightly", "controller": True}]}}


def test_a_vcjob_event_names_its_jobflow_in_the_jobflow_extension_and_only_a_vcjob_event_does():
    headers, _ = sent(Envelope(VCJOB, Change.UPDATE, JOB))
    assert headers["ce-jobflow"] == "etl-nightly" and headers["ce-name"] == "etl-nightly-extract"
    assert "ce-jobflow" not in sent(Envelope(JOBFLOW, Change.UPDATE, FLOW))[0]
    orphan = {"metadata": {"name": "other", "namespace": "team-a"}}
    assert "ce-jobflow" not in sent(Envelope(VCJOB, Change.UPDATE, orphan))[0]


def test_a_vcjobs_add_or_update_shares_its_jobflows_key_and_its_delete_keeps_its_own():
    assert Envelope(VCJOB, Change.UPDATE, JOB).key == Envelope(JOBFLOW, Change.UPDATE, FLOW).key == \
        ("jobflows", "team-a", "etl-nightly")
    assert Envelope(VCJOB, Change.ADD, JOB).key == ("jobflows", "team-a", "etl-nightly")
    assert Envelope(VCJOB, Change.DELETE, JOB).key == ("jobs", "team-a", "etl-nightly-extract")
