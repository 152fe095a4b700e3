"""A flow whose vcjob would be invalid, or was refused by the API server, waits and says why."""

from jobflow_core import plan
from scenario import T0, jobflow, template, templates_for

FLOW = jobflow("spec: {flows: [{name: a}, {name: b}]}")

BAD_SPEC = """
queue: default
tasks: [{name: main, replicas: 1, minAvailable: 2, template: {spec: {containers: [{name: c, image: x}]}}}]
"""


def test_a_template_that_would_make_an_invalid_vcjob_creates_nothing_and_says_what_to_fix():
    result = plan(FLOW, templates=templates_for(FLOW) | {"a": template("a", spec=BAD_SPEC)}, jobs=[], now=T0)
    assert [c.job_name for c in result.creates] == ["test-b"]
    assert result.status.state.reason == "InvalidTemplate"
    assert 'JobTemplate "default/a" (with the flow\'s patch) would make an invalid vcjob' in result.status.state.message
    assert "minAvailable" in result.status.state.message
    assert [e.reason for e in result.events if e.type == "Warning"] == ["InvalidTemplate"]


def test_a_patch_that_makes_a_good_template_invalid_is_caught_too():
    flow = jobflow("spec: {flows: [{name: a, patch: {jobSpec: {tasks: [{name: nginx, replicas: -1}]}}}]}")
    result = plan(flow, templates=templates_for(flow), jobs=[], now=T0)
    assert result.creates == []
    assert result.status.state.reason == "InvalidTemplate"


def test_a_vcjob_the_api_server_refused_waits_with_the_servers_message():
    result = plan(FLOW, templates=templates_for(FLOW), jobs=[], now=T0,
                  rejections={"a": 'admission webhook "validatejob.volcano.sh" denied the request: queue nope'})
    assert [c.job_name for c in result.creates] == ["test-b"]
    assert result.status.state.reason == "JobRejected"
    assert 'the API server refused vcjob "test-a": admission webhook' in result.status.state.message
    waiting = {w.name: w.message for w in result.status.waiting_flows}
    assert "refused" in waiting["a"]
