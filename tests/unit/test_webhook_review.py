"""The webhook's HTTP contract: an AdmissionReview in, one out with status 200; 400 for anything else, never 500."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handlers import create_app

JOBFLOW_KIND = {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobFlow"}
JOBTEMPLATE_KIND = {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobTemplate"}


@pytest.fixture(scope="module")
def client():
    return create_app().test_client()


def review(obj, *, operation="CREATE", old=None, kind=JOBFLOW_KIND, api_version="admission.k8s.io/v1"):
    request = {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "kind": kind, "operation": operation,
               "namespace": "default", "object": obj}
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def jobflow(flows, *, status=None):
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": "test", "namespace": "default"}, "spec": {"flows": flows},
            **({"status": status} if status else {})}


def jobtemplate(spec, *, status=None):
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
            "metadata": {"name": "a", "namespace": "default"}, "spec": spec, **({"status": status} if status else {})}


DIAMOND = [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}},
           {"name": "c", "dependsOn": {"targets": ["a"]}}, {"name": "d", "dependsOn": {"targets": ["b", "c"]}}]


def test_a_valid_jobflow_is_allowed_in_a_review_of_the_same_version_and_uid(client):
    reply = client.post("/validate/jobflows", json=review(jobflow(DIAMOND)))
    assert reply.status_code == 200
    assert reply.json == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                          "response": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": True}}


def test_an_invalid_jobflow_is_denied_as_invalid_with_upstreams_text_and_a_hint(client):
    flows = [{"name": "a", "dependsOn": {"targets": ["x"]}}]
    response = client.post("/validate/jobflows", json=review(jobflow(flows))).json["response"]
    assert response["allowed"] is False
    assert response["status"] == {
        "code": 422, "reason": "Invalid",
        "message": 'jobflow Flow is not DAG: vertex is not defined: x (flow "a" depends on "x", which is not a flow '
                   'of this JobFlow: add a flow named "x" or remove it from dependsOn.targets)'}


def test_a_v1beta1_review_is_answered_in_v1beta1(client):
    reply = client.post("/validate/jobflows", json=review(jobflow(DIAMOND), api_version="admission.k8s.io/v1beta1"))
    assert reply.json["apiVersion"] == "admission.k8s.io/v1beta1"


def test_an_invalid_jobtemplate_is_denied(client):
    response = client.post("/validate/jobtemplates", json=review(jobtemplate({"tasks": []}),
                                                                   kind=JOBTEMPLATE_KIND)).json["response"]
    assert not response["allowed"]
    assert response["status"]["message"].startswith("No task specified in job spec (")


def test_changing_a_jobtemplate_that_vcjobs_were_made_from_warns_that_they_will_not_change(client):
    made = {"jobDependsOnList": ["flow1-a", "flow2-a"]}
    old = jobtemplate({"tasks": [{"name": "main", "replicas": 1}]}, status=made)
    new = jobtemplate({"tasks": [{"name": "main", "replicas": 2}]}, status=made)
    response = client.post("/validate/jobtemplates", json=review(new, operation="UPDATE", old=old,
                                                                   kind=JOBTEMPLATE_KIND)).json["response"]
    assert response["allowed"]
    assert response["warnings"] == ['vcjobs "flow1-a", "flow2-a" were made from this JobTemplate and will not change '
                                    "(the new spec applies to vcjobs created from now on)"]


def test_a_review_of_another_kind_is_denied_saying_the_configuration_is_wrong(client):
    response = client.post("/validate/jobflows", json=review(jobtemplate({}), kind=JOBTEMPLATE_KIND)).json["response"]
    assert not response["allowed"]
    assert response["status"]["message"].startswith(
        "this webhook validates flow.volcano.sh/v1alpha1 JobFlow, not flow.volcano.sh/v1alpha1/JobTemplate")


def test_an_object_that_does_not_read_as_a_jobflow_is_denied_naming_the_field(client):
    obj = jobflow([{"name": "a", "patch": {"jobSpec": {"minAvailable": "all"}}}])
    response = client.post("/validate/jobflows", json=review(obj)).json["response"]
    assert not response["allowed"]
    assert "spec.flows.0.patch.jobSpec.minAvailable" in response["status"]["message"]


def without(key):
    body = review(jobflow(DIAMOND))
    del body["request"][key]
    return json.dumps(body).encode()


MALFORMED = {
    "not JSON": b"{",
    "not UTF-8": b"\xff\xfe",
    "empty": b"",
    "a JSON list": b"[]",
    "a string": b'"AdmissionReview"',
    "another kind": json.dumps({**review(jobflow(DIAMOND)), "kind": "Pod"}).encode(),
    "an unknown version": json.dumps({**review(jobflow(DIAMOND)), "apiVersion": "admission.k8s.io/v2"}).encode(),
    "no request": json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
    "no uid": without("uid"),
    "no kind": without("kind"),
    "no object": without("object"),
    "an UPDATE without oldObject": json.dumps(review(jobflow(DIAMOND), operation="UPDATE")).encode(),
    "absurd nesting": b"[" * 100_000 + b"]" * 100_000,
}


@pytest.mark.parametrize("what", list(MALFORMED))
def test_a_body_that_is_not_an_admission_review_gets_400_saying_why(client, what):
    reply = client.post("/validate/jobflows", data=MALFORMED[what], content_type="application/json")
    assert reply.status_code == 400
    assert reply.json["error"].startswith("not an AdmissionReview request: ")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
jobflow_shaped = st.fixed_dictionaries(
    {"metadata": st.fixed_dictionaries({}, optional={"name": json_values | st.just("t"), "namespace": json_values}),
     "spec": st.fixed_dictionaries({}, optional={"flows": st.lists(st.dictionaries(
         st.sampled_from(["name", "dependsOn", "patch"]), json_values | st.just("a")), max_size=4) | json_values})},
    optional={"status": json_values},
)


@settings(max_examples=300, deadline=None)
@given(body=json_values)
def test_no_json_body_makes_the_webhook_answer_500(client, body):
    assert client.post("/validate/jobflows", json=body).status_code in (200, 400)


@settings(max_examples=300, deadline=None)
@given(operation=st.sampled_from(["CREATE", "UPDATE", "DELETE"]) | json_values, new=jobflow_shaped | json_values,
       old=jobflow_shaped | json_values, kind=st.just(JOBFLOW_KIND) | json_values)
def test_no_request_makes_the_webhook_answer_500(client, operation, new, old, kind):
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "kind": kind, "operation": operation, "object": new, "oldObject": old}}
    reply = client.post("/validate/jobflows", json=body)
    assert reply.status_code in (200, 400)
    if reply.status_code == 200:
        assert reply.json["response"]["uid"] == "u"
