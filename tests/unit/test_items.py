"""``forEach``: items from every source, their vcjobs' names and patches, parallelism, fan-in and conditions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core.flows.items import MAX_ITEMS, expand
from jobflow_core.flows.parameters import Item
from jobflow_core.models import JobFlowPhase, VcJobPhase
from jobflow_core.validation.jobflows import validate, is_dns1123_label
from jobflow_core.vocabulary.naming import is_job_of_flow
from jobflow_core.vocabulary.phase import JobCategory, category_of
from scenario import Cluster, jobflow, template

P = VcJobPhase

SWEEP = """
spec:
  flows:
  - name: train
    forEach:
      parallelism: 2
      items:
      - {lr: 0.1, batch: 32}
      - {lr: 0.1, batch: 64}
      - {lr: 0.01, batch: 32}
      - {lr: 0.01, batch: 64}
      - {lr: 0.001, batch: 32}
      - {lr: 0.001, batch: 64}
    patch:
      jobSpec:
        tasks:
        - name: nginx
          template:
            spec:
              containers:
              - name: nginx
                env:
                - {name: LR, value: "{{item.lr}}"}
                - {name: BATCH, value: "{{item.batch}}"}
                - {name: INDEX, value: "{{index}}"}
  - {name: report, dependsOn: {targets: [train]}}
"""


def running(cluster: Cluster) -> list[str]:
    return sorted(name for name, job in cluster.jobs.items()
                  if category_of(job.phase) not in (JobCategory.DONE, JobCategory.FAILED))


@pytest.mark.parametrize(("for_each", "values"), [
    ("{items: [a, 2, {k: v}]}", ["a", 2, {"k": "v"}]),
    ("{range: {end: 3}}", [0, 1, 2, 3]),
    ("{range: {start: 1, end: 10, step: 4}}", [1, 5, 9]),
    ("{range: {start: 5, count: 2}}", [5, 6]),
    ("{range: {start: 5, end: 4}}", []),
    ("{param: shards}", ["s0", "s1"]),
    ("{result: split}", ["r0"]),
])
def test_items_come_from_a_list_a_range_a_parameter_or_a_result(for_each, values):
    flow = jobflow(f"spec: {{flows: [{{name: a, forEach: {for_each}}}]}}").spec.flows[0]
    expansion = expand(flow, params={"shards": '["s0", "s1"]'}, result_of=lambda target: '["r0"]')
    assert expansion.items == tuple(Item(i, v) for i, v in enumerate(values))


def test_a_result_not_in_yet_leaves_the_items_unknown_and_one_that_is_no_list_says_so():
    flow = jobflow("spec: {flows: [{name: a, forEach: {result: split}}]}").spec.flows[0]
    assert expand(flow, params={}, result_of=lambda target: None).items is None
    assert expand(flow, params={}, result_of=lambda target: "s0 s1").error == \
        "the result of \"split\" is not a JSON list: 's0 s1'"


def test_each_item_is_its_own_vcjob_named_by_index_with_its_values_patched_in_and_its_index_labelled():
    cluster = Cluster(jobflow(SWEEP))
    creates = cluster.step().creates
    assert [c.job_name for c in creates] == ["test-train-0", "test-train-1"]  # parallelism 2
    manifest = creates[1].manifest
    assert manifest["metadata"]["labels"]["flow.volcano.sh/item-index"] == "1"
    pod = manifest["spec"]["tasks"][0]["template"]
    assert pod["metadata"]["annotations"]["flow.volcano.sh/item-index"] == "1"
    assert pod["spec"]["containers"][0]["env"] == [{"name": "LR", "value": "0.1"}, {"name": "BATCH", "value": "64"},
                                                   {"name": "INDEX", "value": "1"}]
    [waiting] = cluster.flow.status.waiting_flows[:1]
    assert waiting.name == "train" and waiting.message == \
        "4 items wait; the first: waiting for a free slot: 0 of its items run (parallelism 2)"


def test_never_more_than_parallelism_items_run_and_the_fan_in_starts_once_after_all_of_them():
    cluster = Cluster(jobflow(SWEEP))
    started: list[str] = []
    for _ in range(20):
        result = cluster.step()
        started += [c.job_name for c in result.creates]
        assert len(running(cluster)) <= 2
        if "test-report" in started:
            assert all(cluster.jobs[f"test-train-{i}"].phase is P.COMPLETED for i in range(6))
        for name in running(cluster)[:1]:
            cluster.move_job(name, P.COMPLETED)
    assert started == [f"test-train-{i}" for i in range(6)] + ["test-report"]
    assert cluster.phase is JobFlowPhase.SUCCEED and cluster.flow.status.progress == "2/2"


def test_a_failed_item_fails_the_fan_out_once_every_item_ended_and_a_condition_can_count_successes():
    flow = jobflow("""
spec:
  flows:
  - {name: shard, forEach: {range: {count: 10}}}
  - {name: merge, dependsOn: {targets: [shard], outcome: Finished}, when: 'targets.shard.succeeded >= 8'}
  - {name: strict, dependsOn: {targets: [shard], outcome: Finished}, when: 'targets.shard.failed == 0'}
""")
    cluster = Cluster(flow)
    assert len(cluster.step().creates) == 10
    for index in range(10):
        cluster.move_job(f"test-shard-{index}", P.FAILED if index in (3, 7) else P.COMPLETED)
        if index < 9:
            assert cluster.step().creates == []  # the fan-out has not ended
    assert [c.flow for c in cluster.step().creates] == ["merge"]
    assert [(s.name, s.reason) for s in cluster.flow.status.skipped_flows] == [("strict", "ConditionFalse")]
    cluster.move("merge", P.COMPLETED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED  # the failures were handled (outcome: Finished)


def test_an_unhandled_item_failure_fails_the_jobflow_naming_the_failed_items():
    cluster = Cluster(jobflow("spec: {flows: [{name: shard, forEach: {items: [a, b, c]}}]}"))
    cluster.step()
    for index, phase in enumerate([P.COMPLETED, P.FAILED, P.COMPLETED]):
        cluster.move_job(f"test-shard-{index}", phase)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    assert '1 of 3 items of flow "shard" failed (index 1; first: vcjob "default/test-shard-1" is Failed)' in \
        cluster.flow.status.state.message


def test_a_fan_out_over_a_targets_result_waits_for_it_then_runs_one_vcjob_per_element():
    flow = jobflow("spec: {flows: [{name: split}, {name: process, dependsOn: {targets: [split]}, "
                   "forEach: {result: split}}]}")
    cluster = Cluster(flow)
    cluster.step()
    cluster.move("split", P.COMPLETED)
    from jobflow_core import observe
    from jobflow_core.planning.planner import plan_observation
    observation = observe(cluster.flow, jobs=list(cluster.jobs.values()), now=cluster.now)
    assert observation.results_needed() == ["test-split"]
    result = plan_observation(observation.with_answers(results={"test-split": '["s0","s1","s2"]'}),
                              templates=cluster.templates)
    assert [c.job_name for c in result.creates] == ["test-process-0", "test-process-1", "test-process-2"]
    [record] = [r for r in result.status.job_status_list if r.name == "test-split"]
    assert record.result == '["s0","s1","s2"]'  # kept: the items stay known when split's pods are gone


def test_an_empty_fan_out_succeeds_once_its_dependencies_are_met():
    cluster = Cluster(jobflow("spec: {flows: [{name: a}, {name: none, dependsOn: {targets: [a]}, forEach: "
                              "{items: []}}, {name: after, dependsOn: {targets: [none]}}]}"))
    assert [c.flow for c in cluster.step().creates] == ["a"]
    cluster.move("a", P.COMPLETED)
    assert [c.flow for c in cluster.step().creates] == ["after"]


def test_an_item_is_retried_under_its_own_name():
    cluster = Cluster(jobflow("spec: {flows: [{name: s, forEach: {items: [x, y]}, "
                              "retry: {limit: 1, backoff: {delaySeconds: 0}}}]}"))
    cluster.step()
    cluster.move_job("test-s-1", P.FAILED)
    assert [c.job_name for c in cluster.step().creates] == ["test-s-1-r1"]
    assert is_job_of_flow("test-s-1-r1", jobflow="test", flow="s")


@pytest.mark.parametrize(("spec", "message"), [
    ("{flows: [{name: a, forEach: {items: [1], range: {count: 2}}}]}", 'flow "a": forEach has items and range'),
    ("{flows: [{name: a, forEach: {range: {start: 1}}}]}", 'flow "a": forEach.range needs end or count'),
    ("{flows: [{name: a, forEach: {param: p}}]}", 'flow "a": forEach.param "p" is not a parameter with a value'),
    ("{parameters: [{name: p, value: x}], flows: [{name: a, forEach: {param: p}}]}",
     "flow \"a\": forEach: parameter \"p\" is not a JSON list: 'x'"),
    ("{flows: [{name: b}, {name: a, forEach: {result: b}}]}",
     'flow "a": forEach.result "b" is not one of its dependsOn.targets'),
    ("{flows: [{name: a, forEach: {items: [1]}}, {name: a-0}]}", 'flow "a-0" has the vcjob name of an item or iteration of flow "a"'),
    (f"{{flows: [{{name: {'a' * 55}, forEach: {{range: {{count: 200}}}}}}]}}",
     f'vcjob name "test-{"a" * 55}-199" of the last item of flow "{"a" * 55}" is not a DNS-1123 label'),
])
def test_a_for_each_that_cannot_run_is_refused_naming_the_problem(spec, message):
    errors = validate(jobflow(f"spec: {spec}"))
    assert any(error.message.startswith(message) for error in errors), errors


@given(st.integers(min_value=0, max_value=MAX_ITEMS - 1), st.integers(min_value=1, max_value=4))
def test_item_names_are_valid_unique_and_belong_to_their_flow(index, attempt):
    from jobflow_core.vocabulary.naming import attempt_job_name
    name = attempt_job_name(jobflow="sweep", flow="train", attempt=attempt, index=index)
    assert is_dns1123_label(name)
    assert is_job_of_flow(name, jobflow="sweep", flow="train")
    assert not is_job_of_flow(name, jobflow="sweep", flow="trai")
    other = attempt_job_name(jobflow="sweep", flow="train", attempt=attempt, index=index + 1)
    assert other != name


@given(st.integers(min_value=0, max_value=12), st.integers(min_value=1, max_value=5), st.data())
@settings(max_examples=60, deadline=None)
def test_parallelism_holds_and_every_item_runs_once_in_index_order_whatever_ends_when(count, limit, data):
    cluster = Cluster(jobflow(f"spec: {{flows: [{{name: s, forEach: {{range: {{count: {count}}}, "
                              f"parallelism: {limit}}}}}]}}"))
    cluster.templates = {"s": template("s")}
    created: list[str] = []
    for _ in range(3 * count + 3):
        for create in cluster.step().creates:
            assert create.job_name not in created
            created.append(create.job_name)
        assert len(running(cluster)) <= limit
        if running(cluster):
            cluster.move_job(data.draw(st.sampled_from(running(cluster))), P.COMPLETED)
    assert created == [f"test-s-{i}" for i in range(count)]
    assert cluster.phase is JobFlowPhase.SUCCEED


def test_kubectl_jobflow_status_shows_a_fan_out_as_one_line_with_its_items_counted():
    from datetime import timedelta

    from display.facts import take
    from kubectl_jobflow.status import render
    cluster = Cluster(jobflow(SWEEP))
    cluster.step()
    cluster.move_job("test-train-0", P.COMPLETED)
    cluster.step()
    cluster.move_job("test-train-1", P.RUNNING)
    snapshot = take(cluster.flow.to_wire(), [job.to_wire() for job in cluster.jobs.values()])
    [train, report] = snapshot.rows
    assert (train.job, train.phase, train.items) == ("test-train-[0-5]", "Running",
                                                     {"Completed": 1, "Running": 1, "Created": 1, "Waiting": 3})
    line = render(snapshot, now=cluster.now + timedelta(seconds=5)).splitlines()[2]
    assert "items: 1/6 Completed, 1/6 Running, 1/6 Created, 3/6 Waiting" in line
    assert report.phase == "Waiting"


def test_a_fan_out_is_summarised_and_its_succeeded_items_are_only_named_even_after_their_vcjobs_are_gone():
    from jobflow_core.planning.status import index_ranges
    cluster = Cluster(jobflow("spec: {flows: [{name: s, forEach: {range: {count: 13}}}]}"))
    cluster.step()
    for index in range(13):
        cluster.move_job(f"test-s-{index}", P.FAILED if index in (3, 7, 10, 11, 12) else P.COMPLETED)
    cluster.step()
    status = cluster.flow.status
    [summary] = status.fan_outs
    assert (summary.total, summary.succeeded, summary.failed, summary.running, summary.waiting) == (13, 8, 5, 0, 0)
    assert summary.failed_indexes == "3,7,10-12" == index_ranges([12, 3, 11, 7, 10])
    assert summary.first_error == 'item 3: vcjob "default/test-s-3" is Failed'
    assert {r.name for r in status.job_status_list} == {f"test-s-{i}" for i in (3, 7, 10, 11, 12)}
    assert len(status.completed_jobs) == 8 and set(status.conditions) == {r.name for r in status.job_status_list}
    cluster.jobs.clear()  # every vcjob deleted (a TTL): the status alone remembers them
    assert cluster.step().creates == []
    assert cluster.flow.status == status and cluster.phase is JobFlowPhase.FAILED


def test_a_thousand_succeeded_items_keep_the_status_small():
    import json
    cluster = Cluster(jobflow("spec: {flows: [{name: s, forEach: {range: {count: 1000}, parallelism: 500}}]}"))
    for _ in range(3):
        cluster.step()
        for name in running(cluster):
            cluster.move_job(name, P.COMPLETED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED
    assert len(json.dumps(cluster.flow.status.to_wire(), default=str)) < 40_000


def test_kubectl_jobflow_status_items_lists_each_item_also_those_only_named_in_the_status():
    from datetime import timedelta

    from display.facts import take
    from kubectl_jobflow.status import render
    cluster = Cluster(jobflow("spec: {flows: [{name: s, forEach: {items: [a, b, c], parallelism: 2}}]}"))
    cluster.step()
    cluster.move_job("test-s-0", P.COMPLETED)
    cluster.step()
    del cluster.jobs["test-s-0"]  # gone: the status names it in completedJobs only
    view = render(take(cluster.flow.to_wire(), [job.to_wire() for job in cluster.jobs.values()]),
                  now=cluster.now + timedelta(seconds=1), items=True)
    assert view.splitlines()[-5:-3] == ["s:", "ITEM   JOB        PHASE"]
    assert [line.split() for line in view.splitlines()[-3:]] == [
        ["0", "test-s-0", "Completed"], ["1", "test-s-1", "Created"], ["2", "test-s-2", "Created"]]


def test_a_rerun_of_a_failed_fan_out_runs_only_its_failed_items_again_and_then_its_dependent():
    from test_control_flow import ask_rerun
    cluster = Cluster(jobflow("spec: {flows: [{name: s, forEach: {items: [a, b, c, d]}}, "
                              "{name: after, dependsOn: {targets: [s]}}]}"))
    cluster.step()
    for index in range(4):
        cluster.move_job(f"test-s-{index}", P.FAILED if index in (1, 3) else P.COMPLETED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    ask_rerun(cluster, "again")
    result = cluster.step()
    assert [c.job_name for c in result.creates] == ["test-s-1-r1", "test-s-3-r1"]
    assert cluster.flow.status.rerun.from_attempt == {"s-1": 2, "s-3": 2}
    assert cluster.phase is JobFlowPhase.RUNNING
    for name in ("test-s-1-r1", "test-s-3-r1"):
        cluster.move_job(name, P.COMPLETED)
    assert [c.flow for c in cluster.step().creates] == ["after"]


@given(st.integers(min_value=-50, max_value=50), st.integers(min_value=-50, max_value=120),
       st.integers(min_value=1, max_value=7))
def test_a_range_is_pythons_range_with_its_end_included(start, end, step):
    flow = jobflow(f"spec: {{flows: [{{name: a, forEach: {{range: {{start: {start}, end: {end}, step: {step}}}}}}}]}}"
                   ).spec.flows[0]
    expansion = expand(flow, params={}, result_of=lambda target: None)
    assert [item.value for item in expansion.items] == list(range(start, end + 1, step))
    assert [item.index for item in expansion.items] == list(range(len(expansion.items)))
