"""``{{targets.NAME.result}}`` in patches (``jobflow_core.flows.outputs``): what a flow's vcjob gets from its targets,
where a result may go, and what admission refuses."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobflow_core import plan
from jobflow_core.flows.outputs import MAX_VALUE_LENGTH, clean, may_hold_results
from jobflow_core.flows.parameters import substitute
from jobflow_core.models import VcJobPhase
from jobflow_core.planning.starts import Verdict
from jobflow_core.validation.jobflows import validate
from jobflow_core.vocabulary.kube_events import Reason
from scenario import T0, jobflow, templates_for, vcjob

PIPELINE = """
spec:
  parameters: [{name: day, value: "2026-11-25"}]
  flows:
  - name: prepare
  - name: train
    dependsOn: {targets: [prepare]}
  - name: publish
    dependsOn: {targets: [train]}
    patch:
      jobSpec:
        tasks:
        - name: nginx
          template:
            metadata:
              annotations: {data/path: "{{targets.prepare.result.path}}"}
            spec:
              containers:
              - name: nginx
                command: ["publish", "{{ targets.train.result }}"]
                args: ["--path={{targets.prepare.result.path}}", "--day={{params.day}}"]
                env:
                - {name: ROWS, value: "{{targets.prepare.result.rows}}"}
"""


def records(**results: str) -> dict:
    return {"jobStatusList": [{"name": f"test-{flow}", "state": "Completed", "result": text}
                              for flow, text in results.items()]}


def container_of(manifest: dict) -> dict:
    return manifest["spec"]["tasks"][0]["template"]["spec"]["containers"][0]


def starts(flow, name: str, *jobs):
    result = plan(flow, templates=templates_for(flow), jobs=list(jobs), now=T0)
    return next(d for d in result.decisions if d.view.name == name), result


def test_a_flow_gets_its_targets_results_in_env_args_command_and_pod_annotations_directly_or_transitively():
    flow = jobflow(PIPELINE, status=records(prepare='{"path": "s3://b/2026-11-25", "rows": 1200}', train="ok"))
    decision, _ = starts(flow, "publish")
    assert decision.verdict is Verdict.START
    container = container_of(decision.manifest)
    assert container["command"] == ["publish", "ok"]
    assert container["args"] == ["--path=s3://b/2026-11-25", "--day=2026-11-25"]
    assert container["env"] == [{"name": "ROWS", "value": "1200"}]
    assert decision.manifest["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["data/path"] == \
        "s3://b/2026-11-25"
    assert container["image"] == "nginx:1.27"


def test_key_value_results_are_read_as_conditions_read_them():
    flow = jobflow(PIPELINE, status=records(prepare="path=/data/x rows=7", train="done"))
    container = container_of(starts(flow, "publish")[0].manifest)
    assert container["args"][0] == "--path=/data/x" and container["env"][0]["value"] == "7"


def test_a_key_the_result_does_not_have_blocks_the_flow_saying_which_keys_it_has():
    flow = jobflow(PIPELINE, status=records(prepare="path=/data/x", train="done"))
    decision, result = starts(flow, "publish")
    assert (decision.verdict, decision.reason) == (Verdict.BLOCKED, Reason.INVALID_RESULT)
    assert 'the result of "prepare" has no key "rows" (its keys: path)' in decision.message
    assert result.status.state.reason == "InvalidResult" and not result.creates


def test_a_flow_waits_until_the_results_it_reads_are_read_and_asks_for_exactly_those():
    flow = jobflow(PIPELINE)
    jobs = [vcjob(flow, "prepare", VcJobPhase.COMPLETED), vcjob(flow, "train", VcJobPhase.COMPLETED)]
    decision, result = starts(flow, "publish", *jobs)
    assert decision.verdict is Verdict.WAIT
    assert decision.message == 'waiting for the result of "prepare", "train" (its patch reads it)'
    assert not result.creates


def test_the_shell_is_asked_to_read_exactly_the_results_a_patch_reads_and_the_record_keeps_them():
    from jobflow_core import observe, plan_observation

    flow = jobflow(PIPELINE)
    jobs = [vcjob(flow, "prepare", VcJobPhase.COMPLETED), vcjob(flow, "train", VcJobPhase.COMPLETED)]
    observation = observe(flow, jobs=jobs, now=T0)
    assert sorted(observation.results_needed()) == ["test-prepare", "test-train"]
    read = observation.with_answers(results={"test-prepare": "path=/p rows=1", "test-train": "fine"})
    result = plan_observation(read, templates=templates_for(flow))
    [create] = result.creates
    assert container_of(create.manifest)["args"][0] == "--path=/p"
    kept = {r.name: r.result for r in result.status.job_status_list}
    assert kept["test-prepare"] == "path=/p rows=1"  # in the status: the pods may go


FAN_IN = """
spec:
  flows:
  - name: shard
    forEach: {items: [a, b, c]}
  - name: merge
    dependsOn: {targets: [shard], outcome: Finished}
    patch:
      jobSpec:
        tasks:
        - name: nginx
          template:
            spec:
              containers:
              - name: nginx
                args: ["{{targets.shard.results}}", "{{targets.shard.succeeded}}/{{targets.shard.total}}"]
"""


def test_a_fan_in_reads_its_fan_outs_results_as_a_json_list_and_its_counts():
    flow = jobflow(FAN_IN, status={"jobStatusList": [
        {"name": "test-shard-0", "state": "Completed", "result": "x=1"},
        {"name": "test-shard-1", "state": "Completed", "result": '["p"]'},
        {"name": "test-shard-2", "state": "Failed", "result": "oops"}]})
    decision, _ = starts(flow, "merge")
    assert container_of(decision.manifest)["args"] == ['[{"x":1},["p"],"oops"]', "2/3"]


@given(st.text(max_size=300))
def test_any_result_lands_as_one_string_the_rest_of_the_vcjob_unchanged(text):
    flow = jobflow(PIPELINE.replace("{{targets.prepare.result.path}}", "{{targets.prepare.result}}")
                   .replace("{{targets.prepare.result.rows}}", "{{targets.prepare.result}}"),
                   status=records(prepare=text, train="t"))
    plain = jobflow(PIPELINE.replace("{{targets.prepare.result.path}}", "{{targets.prepare.result}}")
                    .replace("{{targets.prepare.result.rows}}", "{{targets.prepare.result}}"),
                    status=records(prepare="PLAIN", train="t"))
    got, base = starts(flow, "publish")[0].manifest, starts(plain, "publish")[0].manifest
    expected = json.loads(json.dumps(base).replace("PLAIN", json.dumps(clean(text))[1:-1]))
    assert got == expected  # quotes, newlines, {{params.day}} or YAML in a result change nothing else


def test_control_characters_are_dropped_and_a_substituted_value_is_not_read_again():
    assert clean("a\x00b\x1bc\td\ne\x7f") == "ab" + "c\td\ne"
    assert substitute(["{{targets.a.result}}"], params={"day": "X"}, targets={"targets.a.result": "{{params.day}}"},
                      path=("tasks", 0, "template", "spec", "containers", 0, "args")) == ["{{params.day}}"]


def test_a_result_over_the_size_limit_blocks_the_flow():
    flow = jobflow(FAN_IN, status={"jobStatusList": [
        {"name": f"test-shard-{i}", "state": "Completed", "result": "x" * 6000} for i in range(3)]})
    decision, _ = starts(flow, "merge")
    assert (decision.verdict, decision.reason) == (Verdict.BLOCKED, Reason.INVALID_RESULT)
    assert f"more than {MAX_VALUE_LENGTH}" in decision.message


@pytest.mark.parametrize("path, allowed", [
    (("tasks", 0, "template", "spec", "containers", 0, "env", 2, "value"), True),
    (("tasks", 0, "template", "spec", "initContainers", 1, "args", 0), True),
    (("tasks", 3, "template", "spec", "containers", 0, "command", 0), True),
    (("tasks", 0, "template", "metadata", "annotations", "x"), True),
    (("tasks", 0, "template", "metadata", "annotations", "data.example.com/rows"), True),
    (("tasks", 0, "template", "metadata", "annotations", "kubernetes.io.example.com/x"), True),
    (("tasks", 0, "template", "metadata", "annotations", "container.apparmor.security.beta.kubernetes.io/main"),
     False),
    (("tasks", 0, "template", "metadata", "annotations", "seccomp.security.alpha.kubernetes.io/pod"), False),
    (("tasks", 0, "template", "metadata", "annotations", "kubernetes.io/psp"), False),
    (("tasks", 0, "template", "metadata", "annotations", "cluster-autoscaler.kubernetes.io/safe-to-evict"), False),
    (("tasks", 0, "template", "metadata", "annotations", "k8s.io/x"), False),
    (("tasks", 0, "template", "metadata", "annotations", "sidecar.istio.io/inject"), False),
    (("tasks", 0, "template", "metadata", "annotations", "proxy.istio.io/config"), False),
    (("tasks", 0, "template", "metadata", "annotations", "scheduling.volcano.sh/queue-name"), False),
    (("tasks", 0, "template", "metadata", "annotations", "volcano.sh/preemptable"), False),
    (("tasks", 0, "template", "metadata", "annotations", "flow.volcano.sh/attempt"), False),
    (("tasks", 0, "template", "spec", "containers", 0, "image"), False),
    (("tasks", 0, "template", "spec", "containers", 0, "env", 0, "name"), False),
    (("tasks", 0, "template", "spec", "serviceAccountName"), False),
    (("tasks", 0, "template", "spec", "volumes", 0, "hostPath", "path"), False),
    (("tasks", 0, "template", "metadata", "labels", "x"), False),
    (("tasks", 0, "name"), False),
    (("queue",), False),
    (("schedulerName",), False),
])
def test_results_may_go_only_where_they_cannot_widen_what_the_pod_may_do(path, allowed):
    assert may_hold_results(path) is allowed


def test_a_result_out_of_place_fails_a_jobflow_that_bypassed_admission_and_the_builder_leaves_it_as_written():
    from jobflow_core.flows.vcjobs import job_spec
    from scenario import template

    text = PIPELINE.replace('command: ["publish", "{{ targets.train.result }}"]', 'image: "{{targets.train.result}}"')
    flow = jobflow(text, status=records(prepare="path=/p rows=1", train="evil:latest"))
    result = plan(flow, templates=templates_for(flow), jobs=[], now=T0)
    assert (result.status.state.phase, result.status.state.reason) == ("Failed", "InvalidSpec")
    assert not result.creates
    [publish] = [f for f in flow.spec.flows if f.name == "publish"]
    spec = job_spec(template("publish"), flow=publish, params={}, targets={"targets.train.result": "evil:latest"})
    assert spec["tasks"][0]["template"]["spec"]["containers"][0]["image"] == "{{targets.train.result}}"


def messages(text: str) -> list[str]:
    return [str(error) for error in validate(jobflow(text))]


def test_admission_refuses_a_result_out_of_place_naming_where_and_what_to_do():
    [error] = messages(PIPELINE.replace('command: ["publish", "{{ targets.train.result }}"]',
                                        'image: "{{targets.train.result}}"'))
    assert error.startswith('flow "publish": {{targets.train.result}} stands in '
                            "patch.jobSpec.tasks[0].template.spec.containers[0].image, where a result may not go")
    assert "env value, args, command or a pod annotation" in error


def test_admission_refuses_a_flow_that_is_not_a_target_directly_or_transitively():
    found = messages(PIPELINE.replace("dependsOn: {targets: [train]}", "dependsOn: {targets: []}"))
    assert len(found) == 4  # prepare (three times: each place says where) and train
    error = found[1]
    assert error == ('flow "publish": {{targets.train.result}} reads "train", which is not among its '
                     'targets, directly or through them (add "train" to dependsOn.targets, or fix the name)')
    assert messages(PIPELINE) == []


def test_admission_refuses_unknown_fields_the_wrong_field_for_a_fan_out_and_a_probe():
    assert messages(FAN_IN.replace("shard.results", "shard.result"))[0].endswith(
        '"shard" runs forEach and has one result per item (use targets.shard.results (a JSON list))')
    assert messages(PIPELINE.replace("targets.train.result }}", "targets.train.phase }}"))[0].startswith(
        'flow "publish": {{targets.train.phase}} in patch.jobSpec.tasks[0].template.spec.containers[0].command[1] '
        "names nothing")
    probed = PIPELINE.replace("dependsOn: {targets: [train]}",
                              "dependsOn: {targets: [train], probe: {taskStatusList: [{taskName: t, phase: Running}]}}")
    assert any("its probe lets it start before its targets end" in m for m in messages(probed))


NOTIFY = """
spec:
  failurePolicy: KeepGoing
  flows:
  - name: train
  - name: evaluate
  - name: notify-failure
    finally: true
    when: jobflow.outcome == "Failed"
    patch:
      jobSpec:
        tasks:
        - name: nginx
          template:
            spec:
              containers:
              - name: nginx
                args: ["{{jobflow.name}}", "{{jobflow.failedFlows}}", "{{jobflow.firstError}}"]
  - name: clean-up
    finally: true
    when: jobflow.outcome == "Succeeded" && size(jobflow.failedFlows) == 0
"""


def test_a_finally_flow_reads_the_jobflows_outcome_in_its_condition_and_patch():
    flow = jobflow(NOTIFY)
    failed = vcjob(flow, "train", VcJobPhase.FAILED)
    result = plan(flow, templates=templates_for(flow), jobs=[failed, vcjob(flow, "evaluate", VcJobPhase.COMPLETED)],
                  now=T0)
    [create] = result.creates
    assert create.job_name == "test-notify-failure"
    assert container_of(create.manifest)["args"] == ["test", "train", "vcjob test-train ended Failed"]
    assert [(s.name, s.reason) for s in result.status.skipped_flows] == [("clean-up", "ConditionFalse")]


def test_on_success_the_cleanup_runs_and_the_notification_is_skipped():
    flow = jobflow(NOTIFY)
    jobs = [vcjob(flow, "train", VcJobPhase.COMPLETED), vcjob(flow, "evaluate", VcJobPhase.COMPLETED)]
    result = plan(flow, templates=templates_for(flow), jobs=jobs, now=T0)
    assert [c.job_name for c in result.creates] == ["test-clean-up"]
    assert [(s.name, s.reason) for s in result.status.skipped_flows] == [("notify-failure", "ConditionFalse")]


def test_a_handled_failure_is_no_failure_of_the_jobflow():
    flow = jobflow(NOTIFY.replace("  - name: evaluate\n", "  - name: evaluate\n    dependsOn: {targets: [train], "
                                                          "outcome: Failed}\n"))
    jobs = [vcjob(flow, "train", VcJobPhase.FAILED), vcjob(flow, "evaluate", VcJobPhase.COMPLETED)]
    assert [c.job_name for c in plan(flow, templates=templates_for(flow), jobs=jobs, now=T0).creates] == \
        ["test-clean-up"]


def test_only_a_finally_flow_may_read_the_outcome():
    text = NOTIFY.replace("  - name: notify-failure\n    finally: true\n", "  - name: notify-failure\n")
    found = [m for m in messages(text) if "only a finally flow" in m]
    assert len(found) == 2 and found[0].startswith('flow "notify-failure": {{jobflow.failedFlows}}: only a finally '
                                                   "flow reads the JobFlow's outcome")


def test_a_failed_fan_outs_first_error_names_its_first_failed_item():
    flow = jobflow("""
spec:
  failurePolicy: KeepGoing
  flows:
  - name: shard
    forEach: {items: [a, b, c]}
  - name: notify
    finally: true
    patch: {jobSpec: {tasks: [{name: nginx, template: {spec: {containers: [
      {name: nginx, args: ["{{jobflow.failedFlows}}", "{{jobflow.firstError}}"]}]}}}]}}
""")
    jobs = [vcjob(flow, "shard-0", VcJobPhase.COMPLETED), vcjob(flow, "shard-1", VcJobPhase.TERMINATED),
            vcjob(flow, "shard-2", VcJobPhase.FAILED)]
    [create] = plan(flow, templates=templates_for(flow), jobs=jobs, now=T0).creates
    assert container_of(create.manifest)["args"] == ["shard", "vcjob test-shard-1 ended Terminated"]
