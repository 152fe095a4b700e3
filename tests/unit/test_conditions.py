"""``flows[].when``: CEL over the targets' outcomes, vcjob status and results (termination messages)."""

import pytest

from jobflow_core.flows.conditions import compile_error, evaluate, parse_result, result_of_pods
from scenario import jobflow
from jobflow_core.validation.jobflows import validate


@pytest.mark.parametrize(("text", "value"), [
    ("accuracy=0.93", {"accuracy": 0.93}),
    ("epochs=50, loss=0.01\nmodel=resnet", {"epochs": 50, "loss": 0.01, "model": "resnet"}),
    ('{"accuracy": 0.93, "shards": [1, 2]}', {"accuracy": 0.93, "shards": [1, 2]}),
    ("[1, 2, 3]", [1, 2, 3]),
    ("done, nothing to report", "done, nothing to report"),
    ("", ""),
    (None, ""),
])
def test_a_result_is_json_else_key_value_pairs_else_text(text, value):
    assert parse_result(text) == value


def test_a_vcjobs_result_is_the_first_termination_message_in_pod_name_order():
    def pod(name, *messages):
        return {"metadata": {"name": name}, "status": {"containerStatuses": [
            {"state": {"terminated": {"message": m}}} if m is not None else {"state": {"running": {}}}
            for m in messages]}}
    assert result_of_pods([pod("t-worker-1", "second"), pod("t-worker-0", None, " first\n")]) == "first"
    assert result_of_pods([pod("t-worker-0", ""), pod("t-worker-1")]) == ""


def test_conditions_read_outcomes_status_and_results_and_say_what_is_wrong():
    variables = {"targets": {"train": {"outcome": "Succeeded", "result": {"accuracy": 0.93},
                                       "status": {"retryCount": 2}}}}
    assert evaluate('targets.train.outcome == "Succeeded" && targets.train.result.accuracy >= 0.9',
                    variables=variables).holds
    assert not evaluate("targets.train.status.retryCount > 3", variables=variables).holds
    assert evaluate("targets.train.result.loss < 1", variables=variables).error == \
        "it cannot be evaluated: no such member in mapping: 'loss'"
    assert evaluate("targets.train.status.retryCount", variables=variables).error == "it gives IntType 2, not a bool"


def test_a_condition_that_is_not_cel_is_refused_at_admission_with_the_column():
    assert compile_error("targets.train.result.accuracy >=") is not None
    [error] = validate(jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}, when: 'a >= '}]}"))
    assert error.message == ('flow "b": when is not a valid CEL expression: a CEL syntax error at column 3 of '
                             "'a >= '")


def test_only_a_condition_that_reads_results_waits_for_the_pods_to_be_read():
    from jobflow_core import observe
    from jobflow_core.models import VcJobPhase
    from scenario import vcjob
    flow = jobflow("""
spec:
  flows:
  - {name: train}
  - {name: deploy, dependsOn: {targets: [train]}, when: 'targets.train.result.accuracy >= 0.9'}
  - {name: notify, dependsOn: {targets: [train]}, when: 'targets.train.status.retryCount == 0'}
""")
    observation = observe(flow, jobs=[vcjob(flow, "train", VcJobPhase.COMPLETED, retry_count=0)])
    assert observation.results_needed() == ["test-train"]
    assert observation.readiness["notify"].ready and not observation.readiness["deploy"].ready


def test_conditions_a_sender_makes_up_do_not_grow_memory_past_the_programs_cache():
    # Every admission review or JobFlow may carry a condition never seen before: a compiled program is ~50 KiB, so
    # an unbounded (or large) cache keyed by that text grows the handler by as much as its senders like.
    import gc
    import tracemalloc

    from jobflow_core.flows.conditions import CACHED_PROGRAMS

    compile_error("true")  # the CEL implementation loaded, its parser built
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for index in range(4 * CACHED_PROGRAMS):
        assert compile_error(f"targets.a.result.accuracy >= {index} && jobflow.name != 'x{index}'") is None
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 5 * 2**20, f"{grown / 2**20:.1f} MiB kept by {4 * CACHED_PROGRAMS} conditions"
