"""When a flow's targets let it start, by ``dependsOn.outcome``, and when they never will (it is Skipped)."""

import pytest

from jobflow_core.dependencies import check_dependencies
from jobflow_core.models import Flow
from jobflow_core.phase import FlowOutcome

S, F, K = FlowOutcome.SUCCEEDED, FlowOutcome.FAILED, FlowOutcome.SKIPPED


def flow(text: dict) -> Flow:
    return Flow.model_validate(text)


def waiting_on(targets: list[str], outcome: str | None = None) -> Flow:
    depends = {"targets": targets} | ({"outcome": outcome} if outcome else {})
    return flow({"name": "e", "dependsOn": depends})


@pytest.mark.parametrize(
    "spec",
    [{"name": "a"}, {"name": "a", "dependsOn": {}}, {"name": "a", "dependsOn": {"targets": []}}],
)
def test_a_flow_without_targets_is_ready_at_once(spec):
    assert check_dependencies(flow(spec), outcome_of=lambda name: None).ready


def test_a_flow_is_ready_when_every_target_succeeded():
    readiness = check_dependencies(waiting_on(["c", "d"]), outcome_of=lambda name: S)
    assert readiness.ready and readiness.waiting_for == () and readiness.skip is None


def test_a_target_not_ended_keeps_the_flow_waiting_with_upstreams_words():
    readiness = check_dependencies(waiting_on(["c", "d"]), outcome_of={"c": S, "d": None}.get)
    assert (readiness.ready, readiness.waiting_for, readiness.skip) == (False, ("d",), None)
    assert readiness.message == 'waiting for "d" to be Completed'


@pytest.mark.parametrize("lost", [F, K])
def test_a_target_that_failed_or_was_skipped_skips_a_flow_waiting_for_success(lost):
    readiness = check_dependencies(waiting_on(["c", "d"]), outcome_of={"c": None, "d": lost}.get)
    assert not readiness.ready
    assert readiness.skip == (f'"d" {"was Skipped" if lost is K else "Failed"}, and this flow runs only if its '
                              "targets succeed")


def test_an_error_handler_runs_as_soon_as_one_target_failed():
    readiness = check_dependencies(waiting_on(["c", "d"], "Failed"), outcome_of={"c": None, "d": F}.get)
    assert readiness.ready and readiness.message == '"d" Failed'


def test_an_error_handler_waits_while_a_target_may_still_fail_and_is_skipped_when_none_did():
    waiting = check_dependencies(waiting_on(["c", "d"], "Failed"), outcome_of={"c": S, "d": None}.get)
    assert (waiting.ready, waiting.waiting_for, waiting.skip) == (False, ("d",), None)
    skipped = check_dependencies(waiting_on(["c", "d"], "Failed"), outcome_of={"c": S, "d": K}.get)
    assert skipped.skip == 'no target failed ("c" Succeeded; "d" was Skipped), and this flow runs only if one does'


@pytest.mark.parametrize("ended", [S, F, K])
def test_a_cleanup_runs_once_every_target_ended_whatever_the_outcome(ended):
    assert check_dependencies(waiting_on(["c", "d"], "Finished"), outcome_of={"c": S, "d": ended}.get).ready
    waiting = check_dependencies(waiting_on(["c", "d"], "Finished"), outcome_of={"c": ended, "d": None}.get)
    assert (waiting.ready, waiting.waiting_for, waiting.skip) == (False, ("d",), None)


def test_a_probe_is_not_what_check_dependencies_looks_at():
    probe = {"taskStatusList": [{"taskName": "ps", "phase": "Running"}]}
    with_probe = flow({"name": "b", "dependsOn": {"targets": ["a"], "probe": probe}})
    assert check_dependencies(with_probe, outcome_of=lambda name: S).ready
