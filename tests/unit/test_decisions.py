"""The start table (``jobflow_core.planning.starts``): one example per row, and properties of the table as a whole."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import given

from jobflow_core import observe, plan
from jobflow_core.models import VcJobPhase
from jobflow_core.planning.starts import (QUEUE_RULES, READINESS_RULES, START_RULES, TEMPLATE_RULES, FlowFacts, Verdict,
                                          decide)
from jobflow_core.queueing.line import InLine, QueueView
from jobflow_core.vocabulary.kube_events import Reason
from scenario import T0, jobflow, template, templates_for, vcjob
from test_planner_properties import any_worlds
from test_probes import BOCLOUD, templates as tf_templates, tf_job

P = VcJobPhase

A_THEN_B = jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
INVALID_SPEC = jobflow("spec: {flows: [{name: a, dependsOn: {targets: [a]}}]}")
BAD_TEMPLATE = template("b", spec="{minAvailable: 1, tasks: [{name: t, replicas: 1, minAvailable: 2}]}")


def decision_of(flow, name, *jobs, templates=None, rejections=None, queues=None):
    result = plan(flow, templates=templates_for(flow) if templates is None else templates, jobs=list(jobs), now=T0,
                  rejections=rejections, queues=queues)
    return next(d for d in result.decisions if d.view.name == name)


PAST_DEADLINE = jobflow("metadata: {creationTimestamp: '2026-01-02T01:00:00Z'}\n"
                        "spec: {activeDeadlineSeconds: 60, flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
SWITCH = jobflow("""
spec:
  flows:
  - name: train
  - {name: deploy, dependsOn: {targets: [train]}, when: 'targets.train.result.accuracy >= 0.9'}
  - {name: retrain, dependsOn: {targets: [train]}, when: 'targets.train.result.accuracy < 0.9'}
  - {name: broken, dependsOn: {targets: [train]}, when: 'targets.train.result.loss < 0.1'}
""", status={"jobStatusList": [{"name": "test-train", "state": "Completed", "result": "accuracy=0.93"}]})
RETRYING = jobflow("spec: {flows: [{name: a, retry: {limit: 2, backoff: {delaySeconds: 60}}}]}")
SUSPENDED = jobflow("spec: {suspend: true, flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
FAN_OUT = jobflow("""
spec:
  parameters: [{name: shards, value: '["s0", "s1", "s2"]'}]
  flows:
  - name: split
  - {name: process, dependsOn: {targets: [split]}, forEach: {result: split}}
  - {name: shard, forEach: {param: shards, parallelism: 1}}
""")
EDITED_AFTER_SUCCESS = jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}",
                               status={"state": {"phase": "Succeed"},
                                       "jobStatusList": [{"name": "test-a", "state": "Completed"}]})
GANG_OF_8_CPU = template("a", spec="""
minAvailable: 4
tasks:
- {name: t, replicas: 4, template: {spec: {containers: [{name: c, image: busybox, resources: {requests: {cpu: 2}}}]}}}
""")
QUEUE_OF_4_CPU = {"default": QueueView(name="default", capacity={"cpu": 4000})}
QUEUE_FULL = {"default": QueueView(name="default", capacity={"cpu": 8000}, jobflows=(
    InLine(namespace="default", name="older", created=None, queue="default", started=True, ended=False,
           reserved={"cpu": 8000}),))}
WIDE_MIDDLE = jobflow("spec: {wholeFlowAdmission: true, flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}, "
                      "{name: c, dependsOn: {targets: [a]}}]}")
QUEUE_OF_12_CPU = {"default": QueueView(name="default", capacity={"cpu": 12000})}
READS_RESULT = ("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}, patch: {jobSpec: {tasks: [{name: nginx, "
                "template: {spec: {containers: [{name: nginx, args: ['{{targets.a.result.path}}']}]}}}]}}}]}")
MEMOIZED = jobflow("spec: {parameters: [{name: day, value: '1'}], flows: [{name: a, memoize: {key: 'params.day'}}, "
                   "{name: b, memoize: {key: 'params.nope'}}]}")


def memo_decision(name: str):
    from jobflow_core import observe
    from jobflow_core.flows.memo import Entry, declared_key

    observation = observe(MEMOIZED, jobs=[], now=T0)
    view = next(v for v in observation.views if v.name == name)
    memo = {declared_key(namespace="default", template="a", value="1"): Entry("default/old-a", T0)}
    return decide(FlowFacts(view, observation=observation, templates=templates_for(MEMOIZED), rejections={},
                            memo=memo))


GATE = ("metadata: {annotations: ANSWER}\n"
        "spec: {flows: [{name: a}, {name: ok, dependsOn: {targets: [a]}, approval: {timeoutSeconds: 60}}, "
        "{name: b, dependsOn: {targets: [ok]}}]}")


def gate_decision(answer: str | None, *, ended=T0):
    annotations = {"approval.flow.volcano.sh/ok": answer} if answer else {}
    flow = jobflow(GATE.replace("ANSWER", json.dumps(annotations)))
    observation = observe(flow, jobs=[vcjob(flow, "a", P.COMPLETED, changed=ended)], now=T0)
    view = next(v for v in observation.views if v.name == "ok")
    return decide(FlowFacts(view, observation=observation, templates={}, rejections={}))


KEEP_GOING = jobflow("spec: {failurePolicy: KeepGoing, flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")

ROWS = {
    "the JobFlow is being deleted, or its spec is invalid":
        lambda: decision_of(INVALID_SPEC, "a"),
    "its deadline passed":
        lambda: decision_of(PAST_DEADLINE, "b", vcjob(PAST_DEADLINE, "a", P.RUNNING)),
    "the JobFlow failed fast, and the flow is not finally":
        lambda: decision_of(A_THEN_B, "b", vcjob(A_THEN_B, "a", P.FAILED)),
    "its dependencies can no longer be met":
        lambda: decision_of(KEEP_GOING, "b", vcjob(KEEP_GOING, "a", P.FAILED)),
    "its condition is false":
        lambda: decision_of(SWITCH, "retrain"),
    "the JobFlow is suspended":
        lambda: decision_of(SUSPENDED, "b", vcjob(SUSPENDED, "a", P.COMPLETED)),
    "its next attempt waits out the retry backoff":
        lambda: decision_of(RETRYING, "a", vcjob(RETRYING, "a", P.FAILED)),
    "its probe can never pass as written":
        lambda: decision_of(jobflow(BOCLOUD.model_dump_json().replace("worker", "chief")), "next",
                            tf_job(BOCLOUD, P.RUNNING), templates=tf_templates(BOCLOUD)),
    "its condition cannot be evaluated":
        lambda: decision_of(SWITCH, "broken"),
    "its targets are not ready":
        lambda: decision_of(A_THEN_B, "b", vcjob(A_THEN_B, "a", P.RUNNING)),
    "it is an approval gate, approved":
        lambda: gate_decision('{"jobName": "test-ok", "decision": "Approved", "user": "alice"}'),
    "it is an approval gate, rejected":
        lambda: gate_decision('{"jobName": "test-ok", "decision": "reject", "user": "bob", "message": "no"}'),
    "it is an approval gate whose timeout passed":
        lambda: gate_decision(None, ended=T0 - timedelta(seconds=61)),
    "it is an approval gate without an answer":
        lambda: gate_decision('{"jobName": "test-ok-r2", "decision": "Approved", "user": "alice"}'),
    "the results its patch reads are not known yet":
        lambda: decision_of(jobflow(READS_RESULT), "b", vcjob(jobflow(READS_RESULT), "a", P.COMPLETED)),
    "its patch cannot take its targets' results":
        lambda: decision_of(jobflow(READS_RESULT, status={"jobStatusList": [
            {"name": "test-a", "state": "Completed", "result": "size=3"}]}), "b"),
    "its items are not known yet":
        lambda: decision_of(FAN_OUT, "process", vcjob(FAN_OUT, "split", P.COMPLETED)),
    "its items cannot be worked out":
        lambda: decision_of(FAN_OUT.model_copy(update={"status": jobflow("{}", status={"jobStatusList": [
            {"name": "test-split", "state": "Completed", "result": "s0 s1"}]}).status}), "process"),
    "its forEach already runs parallelism items":
        lambda: [d for d in plan(FAN_OUT, templates=templates_for(FAN_OUT), jobs=[], now=T0).decisions
                 if d.view.name == "shard"][1],
    "a vcjob this JobFlow does not control holds its name":
        lambda: decision_of(A_THEN_B, "a", vcjob(A_THEN_B, "a", owner_uid="someone-else")),
    "the JobFlow already succeeded":
        lambda: decision_of(EDITED_AFTER_SUCCESS, "b"),
    "its JobTemplate does not exist":
        lambda: decision_of(A_THEN_B, "a", templates={}),
    "its JobTemplate, patched, would make an invalid vcjob":
        lambda: decision_of(A_THEN_B, "b", vcjob(A_THEN_B, "a", P.COMPLETED), templates={"b": BAD_TEMPLATE}),
    "its memoize.key cannot be evaluated":
        lambda: memo_decision("b"),
    "a Completed run of its memoize key is recent enough":
        lambda: memo_decision("a"),
    "the API server refused its vcjob":
        lambda: decision_of(A_THEN_B, "a", rejections={"a": "queue x is not found"}),
    "its gang asks more than its queue can ever hold":
        lambda: decision_of(A_THEN_B, "a", templates={"a": GANG_OF_8_CPU}, queues=QUEUE_OF_4_CPU),
    "its JobFlow wants whole-flow admission, and a stage of it asks more than its queue can ever hold":
        lambda: decision_of(WIDE_MIDDLE, "a", templates=dict.fromkeys("abc", GANG_OF_8_CPU), queues=QUEUE_OF_12_CPU),
    "its JobFlow has not started and its queue has no room for it yet, or its JobFlow started and at-risk JobFlows "
    "that overtook it hold the queue":
        lambda: decision_of(A_THEN_B, "a", templates={"a": GANG_OF_8_CPU}, queues=QUEUE_FULL),
    "otherwise":
        lambda: decision_of(A_THEN_B, "b", vcjob(A_THEN_B, "a", P.COMPLETED)),
}


def test_every_row_of_the_table_has_an_example_here():
    assert [rule.when for rule in START_RULES] == list(ROWS)


@pytest.mark.parametrize("rule", START_RULES, ids=lambda rule: rule.when)
def test_each_row_decides_its_example(rule):
    decision = ROWS[rule.when]()
    assert decision.rule is rule
    assert (decision.verdict, decision.reason) == (rule.verdict, rule.reason)
    assert (decision.manifest is not None) == (rule.verdict is Verdict.START)


def test_the_messages_say_what_the_flow_waits_for_or_what_to_fix():
    assert ROWS["the JobFlow is being deleted, or its spec is invalid"]().message == \
        "not started: the JobFlow is Failed"
    assert ROWS["the JobFlow failed fast, and the flow is not finally"]().message == \
        "not started: the JobFlow is Failed"
    assert ROWS["its dependencies can no longer be met"]().message == \
        '"a" Failed, and this flow runs only if its targets succeed'
    assert ROWS["its targets are not ready"]().message == 'waiting for "a" to be Completed'
    assert ROWS["its JobTemplate does not exist"]().message == \
        'JobTemplate "default/a" not found: create it (kubectl apply -f ...) and the flow will continue'
    assert "minAvailable" in ROWS["its JobTemplate, patched, would make an invalid vcjob"]().message
    assert ROWS["the API server refused its vcjob"]().message.startswith(
        'the API server refused vcjob "test-a": queue x is not found')


def test_the_blocking_rows_name_the_reason_the_status_reports():
    flow = A_THEN_B
    result = plan(flow, templates={}, jobs=[], now=T0)
    assert result.status.state.reason == Reason.TEMPLATE_NOT_FOUND
    assert [w.message for w in result.status.waiting_flows] == [
        'JobTemplate "default/a" not found: create it (kubectl apply -f ...) and the flow will continue',
        'waiting for "a" to be Completed',
    ]


class _NoTemplates(dict):
    def get(self, key, default=None):
        raise AssertionError(f"a readiness rule read the JobTemplate {key!r}")


@given(any_worlds)
def test_the_readiness_rules_never_read_a_jobtemplate(world):
    observation = observe(world.flow, jobs=world.jobs)
    for view in observation.views:
        if view.needs_job:
            decide(FlowFacts(view, observation=observation, templates=_NoTemplates(), rejections={}),
                   READINESS_RULES)


@given(any_worlds)
def test_every_flow_that_needs_a_vcjob_gets_one_decision_and_only_starting_flows_are_created(world):
    result = world.run()
    needing = [view.name for view in observe(world.flow, jobs=world.jobs).views if view.needs_job]
    assert [decision.view.name for decision in result.decisions] == needing
    started = [d.view.name for d in result.decisions if d.verdict is Verdict.START]
    assert [create.flow for create in result.creates] == started


@given(any_worlds)
def test_a_blocked_flow_always_shows_its_reason_in_the_status(world):
    result = world.run()
    reasons = {d.reason for d in result.decisions if d.verdict is Verdict.BLOCKED}
    if reasons:
        assert result.status.state.reason is not None
        assert all(d.message in result.status.state.message
                   for d in result.decisions if d.verdict is Verdict.BLOCKED)


def test_the_template_rules_come_after_every_readiness_rule_and_start_is_last():
    assert START_RULES[: len(READINESS_RULES)] == READINESS_RULES
    assert START_RULES[len(READINESS_RULES):-1] == (*TEMPLATE_RULES, *QUEUE_RULES)
    assert START_RULES[-1].verdict is Verdict.START


def test_a_switch_on_a_targets_result_runs_exactly_one_branch():
    result = plan(SWITCH, templates=templates_for(SWITCH), jobs=[], now=T0)
    assert [create.flow for create in result.creates] == ["deploy"]
    assert [(s.name, s.reason) for s in result.status.skipped_flows] == [("retrain", "ConditionFalse")]
    assert result.status.state.reason == "ConditionError"
    assert "no such member in mapping: 'loss'" in result.status.state.message
