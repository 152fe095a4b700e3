"""Child JobFlows (``jobflow_core.flows.children``): a flow whose work is a JobFlow made from a JobFlowTemplate.

The parent plans its children through stand-in vcjobs: the child manifest it creates, the phase and result it reads
back, the stop, suspend and rerun it hands down, and the outputs a JobFlow hands up.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobflow_core import PatchChild, plan
from jobflow_core.flows.children import (CHILD_PHASES, MAX_DEPTH, as_job, outputs_of, phase_of, result_text)
from jobflow_core.models import JobFlow, JobFlowPhase, JobFlowTemplate, VcJobPhase
from jobflow_core.validation.jobflows import validate
from jobflow_core.vocabulary.api import DEPTH, PARENT, PARENT_FLOW, RECORD_FINALIZER, RERUN
from scenario import T0, jobflow, templates_for

PARENT_YAML = """
spec:
  parameters: [{name: base, value: /data}]
  flows:
    - name: prep
      jobFlow:
        template: prepare
        parameters: [{name: dataset, value: "{{params.base}}/a"}]
    - name: train
      dependsOn: {targets: [prep]}
      patch:
        jobSpec:
          tasks:
            - name: nginx
              template:
                spec:
                  containers:
                    - name: nginx
                      env: [{name: DATA, value: "{{targets.prep.result.path}}"}]
    - name: cleanup
      dependsOn: {targets: [prep], outcome: Failed}
"""


def prepare_template(namespace: str = "default") -> JobFlowTemplate:
    return JobFlowTemplate.model_validate({
        "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
        "metadata": {"name": "prepare", "namespace": namespace, "uid": "jft-uid"},
        "spec": {"jobFlow": {"spec": {
            "parameters": [{"name": "dataset", "value": "none"}, {"name": "size", "value": "10"}],
            "outputs": [{"name": "path", "value": "{{targets.fetch.result.out}}"}],
            "flows": [{"name": "fetch"}]}}}})


def child_of(parent: JobFlow, manifest: dict, *, phase: JobFlowPhase | None = None, reason: str | None = None,
             outputs: dict | None = None, rerun: str | None = None, ended: bool = True, **spec) -> JobFlow:
    """The child ``manifest`` as the API server returns it, in ``phase``."""
    data = json.loads(json.dumps(manifest))
    data["metadata"]["uid"] = "child-" + data["metadata"]["name"]
    data["metadata"]["creationTimestamp"] = "2026-01-02T03:04:05Z"
    data["spec"].update(spec)
    status: dict = {}
    if phase is not None:
        status["state"] = {"phase": phase.value, **({"reason": reason} if reason else {})}
    if outputs is not None:
        status["outputs"] = outputs
    if rerun is not None:
        status["rerun"] = {"id": rerun}
    if ended and phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
        status["jobStatusList"] = [{"name": "x", "endTimestamp": "2026-01-02T03:10:00Z"}]
    data["status"] = status
    return JobFlow.model_validate(data)


def first_plan(parent: JobFlow):
    return plan(parent, templates=templates_for(parent), jobs=[], now=T0,
                flow_templates={"prepare": prepare_template()})


def test_the_child_is_a_jobflow_named_owned_and_labelled_like_a_flows_vcjob():
    parent = jobflow(PARENT_YAML)
    [create] = first_plan(parent).creates
    manifest = create.manifest
    assert manifest["kind"] == "JobFlow" and manifest["metadata"]["name"] == "test-prep"
    assert manifest["metadata"]["labels"] == {PARENT: "test", PARENT_FLOW: "prep",
                                              "flow.volcano.sh/child-template": "prepare", DEPTH: "1"}
    assert manifest["metadata"]["ownerReferences"][0]["uid"] == parent.metadata.uid
    assert manifest["metadata"]["finalizers"] == [RECORD_FINALIZER]
    assert manifest["spec"]["parameters"] == [{"name": "dataset", "value": "/data/a"}, {"name": "size", "value": "10"}]
    assert manifest["spec"]["flows"] == [{"name": "fetch"}]
    assert create.event.message == "created child JobFlow test-prep from JobFlowTemplate prepare"


def test_a_child_that_succeeded_hands_its_outputs_to_the_flow_that_reads_them():
    parent = jobflow(PARENT_YAML)
    manifest = first_plan(parent).creates[0].manifest
    child = child_of(parent, manifest, phase=JobFlowPhase.SUCCEED, outputs={"path": "/data/a/out"})
    result = plan(parent, templates=templates_for(parent), jobs=[as_job(child)], now=T0 + timedelta(minutes=5),
                  flow_templates={"prepare": prepare_template()})
    [create] = result.creates
    assert create.manifest["metadata"]["name"] == "test-train"
    env = create.manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "DATA", "value": "/data/a/out"}]
    record = next(r for r in result.status.job_status_list if r.name == "test-prep")
    assert record.state is VcJobPhase.COMPLETED and json.loads(record.result) == {"path": "/data/a/out"}


def test_a_failed_child_runs_the_outcome_failed_handler_and_skips_what_needed_it():
    parent = jobflow(PARENT_YAML)
    manifest = first_plan(parent).creates[0].manifest
    child = child_of(parent, manifest, phase=JobFlowPhase.FAILED)
    result = plan(parent, templates=templates_for(parent), jobs=[as_job(child)], now=T0 + timedelta(minutes=5),
                  flow_templates={"prepare": prepare_template()})
    assert [c.job_name for c in result.creates] == ["test-cleanup"]
    assert [s.name for s in result.status.skipped_flows] == ["train"]


@pytest.mark.parametrize(("phase", "reason", "expected"), [
    (None, None, VcJobPhase.NEW), (JobFlowPhase.PENDING, None, VcJobPhase.PENDING),
    (JobFlowPhase.RUNNING, None, VcJobPhase.RUNNING), (JobFlowPhase.SUSPENDED, None, VcJobPhase.RUNNING),
    (JobFlowPhase.SUCCEED, None, VcJobPhase.COMPLETED), (JobFlowPhase.FAILED, None, VcJobPhase.FAILED),
    (JobFlowPhase.FAILED, "Stopped", VcJobPhase.ABORTED), (JobFlowPhase.FAILED, "Terminated", VcJobPhase.ABORTED),
    (JobFlowPhase.TERMINATING, None, VcJobPhase.TERMINATING)])
def test_the_childs_phase_is_its_flows_run_phase(phase, reason, expected):
    parent = jobflow(PARENT_YAML)
    child = child_of(parent, first_plan(parent).creates[0].manifest, phase=phase, reason=reason)
    assert phase_of(child) is expected and as_job(child).phase is expected


def test_every_jobflow_phase_has_a_row():
    assert set(CHILD_PHASES) == {None, *JobFlowPhase}


def test_a_stopped_parent_stops_its_running_child_once_asked():
    parent = jobflow(PARENT_YAML.replace("spec:\n", "spec:\n  shutdown: Stop\n", 1))
    manifest = first_plan(jobflow(PARENT_YAML)).creates[0].manifest
    running = as_job(child_of(parent, manifest, phase=JobFlowPhase.RUNNING))
    patches = plan(parent, templates={}, jobs=[running], now=T0).of(PatchChild)
    assert [(p.name, p.patch) for p in patches] == [("test-prep", {"spec": {"shutdown": "Stop"}})]
    asked = as_job(child_of(parent, manifest, phase=JobFlowPhase.RUNNING, shutdown="Stop"))
    assert plan(parent, templates={}, jobs=[asked], now=T0).of(PatchChild) == []


def test_suspend_cascades_down_and_resume_takes_back_only_what_it_did():
    suspended = jobflow(PARENT_YAML.replace("spec:\n", "spec:\n  suspend: true\n", 1))
    manifest = first_plan(jobflow(PARENT_YAML)).creates[0].manifest
    running = as_job(child_of(suspended, manifest, phase=JobFlowPhase.RUNNING))
    [patch] = plan(suspended, templates={}, jobs=[running], now=T0).of(PatchChild)
    assert patch.patch["spec"] == {"suspend": True}
    marked = dict(manifest, metadata={**manifest["metadata"], "annotations": {
        "flow.volcano.sh/suspended-by-parent": "true"}})
    held = as_job(child_of(suspended, marked, phase=JobFlowPhase.SUSPENDED, suspend=True))
    assert plan(suspended, templates={}, jobs=[held], now=T0).of(PatchChild) == []
    resumed = jobflow(PARENT_YAML)
    [patch] = plan(resumed, templates={}, jobs=[held], now=T0).of(PatchChild)
    assert patch.patch["spec"] == {"suspend": None}
    by_user = as_job(child_of(resumed, manifest, phase=JobFlowPhase.SUSPENDED, suspend=True))
    assert plan(resumed, templates={}, jobs=[by_user], now=T0).of(PatchChild) == []


def test_a_rerun_of_the_parent_asks_the_failed_child_to_rerun_and_waits_for_it():
    parent = jobflow(PARENT_YAML.split("    - name: cleanup")[0])
    manifest = first_plan(parent).creates[0].manifest
    failed = child_of(parent, manifest, phase=JobFlowPhase.FAILED, reason="Stopped", shutdown="Stop")
    ended = plan(parent, templates=templates_for(parent), jobs=[as_job(failed)], now=T0,
                 flow_templates={"prepare": prepare_template()})
    assert ended.status.state.phase is JobFlowPhase.FAILED
    assert ended.status.end_timestamp == as_job(failed).status.state.last_transition_time  # the child's end
    after = parent.model_copy(update={"status": ended.status})
    asked = after.model_copy(update={"metadata": after.metadata.model_copy(update={"annotations": {RERUN: "r1"}})})
    result = plan(asked, templates=templates_for(parent), jobs=[as_job(failed)], now=T0 + timedelta(minutes=1),
                  flow_templates={"prepare": prepare_template()})
    assert result.status.rerun.child_reruns == {"test-prep": "r1"}
    assert "test-prep" not in (result.status.rerun.from_attempt or {})
    # As kubectl jobflow retry asks: the stop handed down and an old flow list go with the request.
    assert [(p.name, p.patch) for p in result.of(PatchChild)] == [("test-prep", {
        "metadata": {"annotations": {RERUN: "r1", "flow.volcano.sh/rerun-flows": None}}, "spec": {"shutdown": None}})]
    assert result.status.state.phase is not JobFlowPhase.FAILED
    assert not any(c.job_name.startswith("test-prep") for c in result.creates)  # no new child
    taken = child_of(parent, manifest, phase=JobFlowPhase.RUNNING, rerun="r1")
    again = asked.model_copy(update={"status": result.status})
    later = plan(again, templates=templates_for(parent), jobs=[as_job(taken)], now=T0 + timedelta(minutes=2),
                 flow_templates={"prepare": prepare_template()})
    assert later.of(PatchChild) == [] and later.status.state.phase is JobFlowPhase.RUNNING


def test_a_failed_child_downstream_of_a_flow_that_runs_again_is_made_anew_not_rerun():
    from scenario import vcjob

    parent = jobflow("""
spec:
  flows:
    - {name: a}
    - {name: prep, dependsOn: {targets: [a], outcome: Finished}, jobFlow: {template: prepare}}
""")
    child = as_job(child_of(parent, first_plan_of(parent, vcjob(parent, "a", VcJobPhase.FAILED)), phase=JobFlowPhase.FAILED))
    jobs = [vcjob(parent, "a", VcJobPhase.FAILED), child]
    ended = plan(parent, templates=templates_for(parent), jobs=jobs, now=T0, flow_templates={
        "prepare": prepare_template()})
    assert ended.status.state.phase is JobFlowPhase.FAILED
    asked = parent.model_copy(update={"status": ended.status, "metadata": parent.metadata.model_copy(
        update={"annotations": {RERUN: "r1"}})})
    result = plan(asked, templates=templates_for(parent), jobs=jobs, now=T0, flow_templates={
        "prepare": prepare_template()})
    assert result.status.rerun.from_attempt == {"a": 2, "prep": 2} and not result.status.rerun.child_reruns
    assert result.of(PatchChild) == [] and [c.job_name for c in result.creates] == ["test-a-r1"]


def first_plan_of(parent: JobFlow, *jobs) -> dict:
    """The child manifest ``parent`` creates once ``jobs`` are as given."""
    made = plan(parent, templates=templates_for(parent), jobs=list(jobs), now=T0,
                flow_templates={"prepare": prepare_template()})
    return next(c.manifest for c in made.creates if c.manifest["kind"] == "JobFlow")


def test_outputs_are_worked_out_from_results_once_the_jobflow_succeeded():
    flow = jobflow("""
spec:
  parameters: [{name: bucket, value: s3://b}]
  outputs:
    - {name: path, value: "{{params.bucket}}/{{targets.a.result.key}}"}
    - {name: whole, value: "{{targets.a.result}}"}
  flows: [{name: a}]
""")
    found, problems = outputs_of(flow, {"a": {"result": {"key": "k1"}, "resultText": '{"key":"k1"}'}})
    assert found == {"path": "s3://b/k1", "whole": '{"key":"k1"}'} and problems == []
    found, problems = outputs_of(flow, {"a": {"result": {}, "resultText": "{}"}})
    assert "path" not in found and 'no key "key"' in problems[0]


@given(st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=20), max_size=5))
def test_a_childs_result_reads_back_as_its_outputs(outputs):
    parent = jobflow(PARENT_YAML)
    child = child_of(parent, first_plan(parent).creates[0].manifest, phase=JobFlowPhase.SUCCEED, outputs=outputs)
    assert json.loads(result_text(child)) == outputs and as_job(child).result == result_text(child)


def test_a_child_flow_refuses_what_belongs_to_a_vcjob():
    flow = jobflow("""
spec:
  flows:
    - {name: a, jobTemplate: t, jobFlow: {template: x, parameters: [{name: p, value: "1"}, {name: p, value: "2"}]}}
""")
    messages = [error.message for error in validate(flow)]
    assert any("jobTemplate on a child JobFlow flow" in m for m in messages)
    assert any('sets "p" twice' in m for m in messages)


def test_undeclared_parameters_and_a_nesting_too_deep_block_the_flow():
    parent = jobflow(PARENT_YAML.replace("{name: dataset,", "{name: datasett,"))
    decision = next(d for d in first_plan(parent).decisions if d.view.name == "prep")
    assert decision.verdict == "blocked" and "datasett" in decision.message and "declares: dataset, size" in \
        decision.message
    deep = jobflow(PARENT_YAML)
    deep = deep.model_copy(update={"metadata": deep.metadata.model_copy(update={"labels": {DEPTH: str(MAX_DEPTH)}})})
    decision = next(d for d in first_plan(deep).decisions if d.view.name == "prep")
    assert decision.verdict == "blocked" and "more than 5" in decision.message


def test_a_child_of_a_started_parent_counts_as_started_in_its_queues_line():
    from jobflow_core.queueing.line import PRIORITY_CLASS, InLine, QueueView, in_line
    from jobflow_core.vocabulary.api import PARENT_STARTED
    from scenario import template, vcjob

    assert PARENT_STARTED not in first_plan(jobflow(PARENT_YAML)).creates[0].manifest["metadata"]["annotations"]
    parent = jobflow(PARENT_YAML.replace("  flows:\n", "  flows:\n    - {name: first}\n", 1))
    ran = plan(parent, templates=templates_for(parent), jobs=[vcjob(parent, "first", VcJobPhase.COMPLETED)],
               now=T0, flow_templates={"prepare": prepare_template()})
    [child] = [c.manifest for c in ran.creates if c.manifest["kind"] == "JobFlow"]
    assert child["metadata"]["annotations"][PARENT_STARTED] == "true"
    # The child's first vcjob: a full queue whose line has someone older waiting would hold a new JobFlow back.
    spec = ("{minAvailable: 1, queue: gpu, tasks: [{name: t, replicas: 1, template: {spec: {containers: "
            "[{name: c, image: busybox, resources: {requests: {cpu: 8}}}]}}}]}")
    older = InLine(namespace="default", name="aaa", created=T0 - timedelta(days=1), queue="gpu", started=False,
                   ended=False, requests={"cpu": 8000})
    queues = {"gpu": QueueView(name="gpu", capacity={"cpu": 8000}, jobflows=(older,))}
    for annotated, expected in ((False, None), (True, PRIORITY_CLASS)):
        meta = {**child["metadata"], "uid": "c-uid", "creationTimestamp": "2026-01-02T03:04:05Z",
                "annotations": {PARENT_STARTED: "true"} if annotated else {}}
        made = JobFlow.model_validate({**child, "metadata": meta})
        result = plan(made, templates={"fetch": template("fetch", spec=spec)}, jobs=[], now=T0, queues=queues)
        if expected is None:
            assert result.creates == []  # waits behind the older JobFlow
        else:
            assert result.creates[0].manifest["spec"]["priorityClassName"] == PRIORITY_CLASS
        assert in_line({"metadata": meta, "status": {}}).started is annotated


def test_a_memoized_child_is_stored_with_its_outputs_and_reused_by_the_next_jobflow():
    from jobflow_core.planning.planner import Memoize

    text = PARENT_YAML.replace("      jobFlow:\n        template: prepare", "      memoize: {}\n      jobFlow:\n"
                               "        template: prepare", 1)
    parent = jobflow(text)
    manifest = first_plan(parent).creates[0].manifest
    key = manifest["metadata"]["annotations"]["flow.volcano.sh/memo-key"]
    done = child_of(parent, manifest, phase=JobFlowPhase.SUCCEED, outputs={"path": "/d/x"})
    ended = plan(parent, templates=templates_for(parent), jobs=[as_job(done)], now=T0 + timedelta(minutes=5),
                 flow_templates={"prepare": prepare_template()})
    [stored] = ended.of(Memoize)
    assert stored.key == key and json.loads(stored.entry.result) == {"path": "/d/x"}
    again = jobflow(text.replace("spec:\n", "spec:\n", 1)).model_copy(update={"metadata": parent.metadata.model_copy(
        update={"name": "again", "uid": "other"})})
    reused = plan(again, templates=templates_for(again), jobs=[], now=T0 + timedelta(minutes=10),
                  flow_templates={"prepare": prepare_template()}, memo={key: stored.entry})
    assert [c.job_name for c in reused.creates] == ["again-train"]  # no child made: the stored run stands for it
    env = reused.creates[0].manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "DATA", "value": "/d/x"}]


def test_a_retry_policy_makes_a_new_child_as_its_next_attempt():
    text = PARENT_YAML.replace("      jobFlow:\n        template: prepare", "      retry: {limit: 1}\n      jobFlow:\n"
                               "        template: prepare", 1)
    parent = jobflow(text)
    manifest = first_plan(parent).creates[0].manifest
    failed = child_of(parent, manifest, phase=JobFlowPhase.FAILED)
    later = plan(parent, templates=templates_for(parent), jobs=[as_job(failed)], now=T0 + timedelta(hours=1),
                 flow_templates={"prepare": prepare_template()})
    assert [c.job_name for c in later.creates] == ["test-prep-r1"]
    assert later.creates[0].manifest["kind"] == "JobFlow"
    assert later.of(PatchChild) == []  # the failed child is left as it is: history


@pytest.mark.parametrize("ended", [JobFlowPhase.SUCCEED, JobFlowPhase.FAILED])
def test_a_child_being_deleted_keeps_the_end_its_status_records_so_its_parent_never_makes_it_again(ended):
    parent = jobflow(PARENT_YAML)
    manifest = first_plan(parent).creates[0].manifest
    child = child_of(parent, manifest, phase=ended)
    deleting = child.model_copy(update={"metadata": child.metadata.model_copy(update={
        "deletion_timestamp": T0 + timedelta(minutes=9)})})
    own = plan(deleting, templates={}, jobs=[], now=T0 + timedelta(minutes=9))
    assert own.status.state.phase is ended  # not Terminating
    as_seen = child_of(parent, manifest, phase=own.status.state.phase)
    result = plan(parent, templates=templates_for(parent), jobs=[as_job(as_seen)], now=T0 + timedelta(minutes=9),
                  flow_templates={"prepare": prepare_template()})
    assert "test-prep" not in [c.job_name for c in result.creates]
    plain = deleting.model_copy(update={"metadata": deleting.metadata.model_copy(update={"labels": {}})})
    assert plan(plain, templates={}, jobs=[], now=T0).status.state.phase is JobFlowPhase.TERMINATING  # as before


def test_a_childs_end_is_its_status_end_timestamp_or_its_last_records():
    from jobflow_core.flows.children import ended_at

    parent = jobflow(PARENT_YAML)
    manifest = first_plan(parent).creates[0].manifest
    assert ended_at(child_of(parent, manifest, phase=JobFlowPhase.SUCCEED)).minute == 10  # its records'
    stamped = child_of(parent, manifest, phase=JobFlowPhase.SUCCEED, ended=False)
    stamped = stamped.model_copy(update={"status": stamped.status.model_copy(update={
        "end_timestamp": T0 + timedelta(minutes=3)})})
    assert ended_at(stamped) == T0 + timedelta(minutes=3)
    written = plan(parent, templates=templates_for(parent), jobs=[], now=T0)  # a JobFlow that has not ended
    assert written.status.end_timestamp is None
