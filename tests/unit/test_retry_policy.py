"""``spec.retryPolicy`` (upstream's proposal, volcano-sh/apis PR #191) read as the JobFlow-wide default of
``retry``, which a flow's own ``retry`` (or ``retryPolicy``) overrides (``jobflow_core.flows.retries``)."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobflow_core import plan
from jobflow_core.flows.retries import delay_seconds, effective_retry, with_retry_policies
from jobflow_core.models import RetryPolicy, VcJobPhase
from jobflow_core.validation.jobflows import validate
from jobflow_core.vocabulary.durations import parse_go_duration
from scenario import T0, jobflow, templates_for, vcjob

P = VcJobPhase

PROPOSAL = """
spec:
  retryPolicy: {maxRetries: 2, policy: OnFailure, backoff: {type: Exponential, baseDelay: 10s, maxDelay: 15s}}
  flows:
  - name: a
  - name: b
    dependsOn: {targets: [a]}
    retry: {limit: 0}
  - name: c
    retryPolicy: {maxRetries: 1, backoff: {type: Constant, baseDelay: 1m}}
"""


def flows_of(text: str) -> dict:
    return {flow.name: flow for flow in with_retry_policies(jobflow(text)).spec.flows}


def test_the_jobflow_wide_policy_reads_as_retry_and_a_flows_own_retry_or_policy_overrides_it():
    flows = flows_of(PROPOSAL)
    a, b, c = flows["a"].retry, flows["b"].retry, flows["c"].retry
    assert (a.limit, a.retry_on, a.backoff.delay_seconds, a.backoff.factor, a.backoff.max_delay_seconds) == \
        (2, None, 10, 2.0, 15)
    assert [delay_seconds(flows["a"], after=n) for n in (1, 2)] == [10, 15]  # 10, 20 capped at 15
    assert b.limit == 0
    assert (c.limit, c.backoff.delay_seconds, c.backoff.factor) == (1, 60, 1.0)


@pytest.mark.parametrize("policy, expected", [
    ({"maxRetries": 3}, (3, None, 30, 2.0, 300)),               # the proposal's defaults: OnFailure, 30s, 5m
    ({"maxRetries": 3, "policy": "Never"}, None),
    ({"policy": "OnFailure"}, None),                              # maxRetries defaults to 0: no retry
    ({"maxRetries": 1, "policy": "Always"}, (1, [P.FAILED, P.TERMINATED, P.ABORTED, P.COMPLETED], 30, 2.0, 300)),
    ({"maxRetries": 2, "backoff": {"baseDelay": "1.5s", "maxDelay": "1h"}}, (2, None, 2, 2.0, 3600)),
])
def test_each_shape_of_the_proposal_reads_as_the_retry_it_means(policy, expected):
    retry = effective_retry(flows_of("spec: {flows: [{name: a}]}")["a"], default=RetryPolicy.model_validate(policy))
    got = None if retry is None else (retry.limit, retry.retry_on, retry.backoff.delay_seconds, retry.backoff.factor,
                                      retry.backoff.max_delay_seconds)
    assert got == expected


def test_a_jobflow_without_retry_policy_is_the_very_same_object():
    upstream = jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
    assert with_retry_policies(upstream) is upstream


def test_a_failed_flow_runs_again_after_the_policys_backoff_and_not_before():
    flow = jobflow(PROPOSAL)
    failed = vcjob(flow, "a", P.FAILED, changed=T0)
    early = plan(flow, templates=templates_for(flow), jobs=[failed], now=T0 + timedelta(seconds=9))
    assert "test-a-r1" not in [c.job_name for c in early.creates]
    later = plan(flow, templates=templates_for(flow), jobs=[failed], now=T0 + timedelta(seconds=10))
    assert "test-a-r1" in [c.job_name for c in later.creates]


def test_always_runs_a_success_again_and_the_dependents_wait_for_the_last_attempt():
    flow = jobflow("spec: {retryPolicy: {maxRetries: 1, policy: Always, backoff: {baseDelay: 0s}}, flows: [{name: a},"
                   " {name: b, dependsOn: {targets: [a]}}]}")
    first = vcjob(flow, "a", P.COMPLETED, changed=T0)
    result = plan(flow, templates=templates_for(flow), jobs=[first], now=T0 + timedelta(seconds=1))
    assert [c.job_name for c in result.creates] == ["test-a-r1"]
    second = vcjob(flow, "a-r1", P.COMPLETED, changed=T0)  # vcjob test-a-r1
    result = plan(flow, templates=templates_for(flow), jobs=[first, second], now=T0 + timedelta(seconds=2))
    assert [c.job_name for c in result.creates] == ["test-b"]


def test_admission_refuses_a_duration_kubernetes_cannot_read_naming_the_field():
    errors = [str(e) for e in validate(jobflow("spec: {retryPolicy: {maxRetries: 1, backoff: {baseDelay: 1d}}, "
                                               "flows: [{name: a, retryPolicy: {maxRetries: 101}}]}"))]
    assert errors == [
        "spec.retryPolicy.backoff.baseDelay '1d' is not a duration (write it as Kubernetes does: 30s, 5m, 1h30m "
        "(no d or min))",
        'flow "a": retryPolicy.maxRetries 101 is not from 0 to 100 (lower it)',
    ]


def test_the_last_retry_named_by_a_policy_must_fit_a_vcjob_name():
    [error] = validate(jobflow("metadata: {name: " + "j" * 55 + "}\nspec: {retryPolicy: {maxRetries: 10}, "
                               "flows: [{name: abcd}]}"))
    assert "of the last retry of flow \"abcd\"" in str(error)


@given(st.integers(min_value=0, max_value=10 ** 6), st.sampled_from(["s", "m", "h", "ms"]))
def test_go_durations_read_as_their_seconds(number, unit):
    scale = {"s": 1, "m": 60, "h": 3600, "ms": 0.001}[unit]
    assert parse_go_duration(f"{number}{unit}") == pytest.approx(number * scale)
    assert parse_go_duration(f"{number}d") is None
