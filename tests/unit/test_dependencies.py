"""When a flow's targets let it start, by ``dependsOn.outcome``, and when they never will (it is Skipped: the
verdict of the skip table, ``jobflow_core.dag.skips``, which ``skip_of`` asks as the outcomes pass does)."""

import pytest

from jobflow_core.dag.dependencies import check_dependencies
from jobflow_core.dag.skips import ConditionCheck, SkipFacts, settle_readiness
from jobflow_core.models import Flow
from jobflow_core.vocabulary.phase import FlowOutcome

S, F, K = FlowOutcome.SUCCEEDED, FlowOutcome.FAILED, FlowOutcome.SKIPPED


def flow(text: dict) -> Flow:
    return Flow.model_validate(text)


def waiting_on(targets: list[str], outcome: str | None = None) -> Flow:
    depends = {"targets": targets} | ({"outcome": outcome} if outcome else {})
    return flow({"name": "e", "dependsOn": depends})


def skip_of(spec: Flow, outcomes: dict) -> str | None:
    facts = SkipFacts(spec, outcome_of=outcomes.get, live_job=lambda name: None, probe_results={}, now=None,
                      condition=lambda: ConditionCheck(holds=True))
    return settle_readiness(facts).skip


@pytest.mark.parametrize(
    "spec",
    [{"name": "a"}, {"name": "a", "dependsOn": {}}, {"name": "a", "dependsOn": {"targets": []}}],
)
def test_a_flow_without_targets_is_ready_at_once(spec):
    assert check_dependencies(flow(spec), outcome_of=lambda name: None).ready


def test_a_flow_is_ready_when_every_target_succeeded():
    readiness = check_dependencies(waiting_on(["c", "d"]), outcome_of=lambda name: S)
    assert readiness.ready and readiness.waiting_for == ()
    assert skip_of(waiting_on(["c", "d"]), {"c": S, "d": S}) is None


def test_a_target_not_ended_keeps_the_flow_waiting_with_upstreams_words():
    readiness = check_dependencies(waiting_on(["c", "d"]), outcome_of={"c": S, "d": None}.get)
    assert (readiness.ready, readiness.waiting_for) == (False, ("d",))
    assert readiness.message == 'waiting for "d" to be Completed'
    assert skip_of(waiting_on(["c", "d"]), {"c": S, "d": None}) is None


@pytest.mark.parametrize("lost", [F, K])
def test_a_target_that_failed_or_was_skipped_skips_a_flow_waiting_for_success(lost):
    readiness = check_dependencies(waiting_on(["c", "d"]), outcome_of={"c": None, "d": lost}.get)
    assert not readiness.ready
    assert skip_of(waiting_on(["c", "d"]), {"c": None, "d": lost}) == (
        f'"d" {"was Skipped" if lost is K else "Failed"}, and this flow runs only if its targets succeed')


def test_an_error_handler_runs_as_soon_as_one_target_failed():
    readiness = check_dependencies(waiting_on(["c", "d"], "Failed"), outcome_of={"c": None, "d": F}.get)
    assert readiness.ready and readiness.message == '"d" Failed'


def test_an_error_handler_waits_while_a_target_may_still_fail_and_is_skipped_when_none_did():
    waiting = check_dependencies(waiting_on(["c", "d"], "Failed"), outcome_of={"c": S, "d": None}.get)
    assert (waiting.ready, waiting.waiting_for) == (False, ("d",))
    assert skip_of(waiting_on(["c", "d"], "Failed"), {"c": S, "d": None}) is None
    assert not check_dependencies(waiting_on(["c", "d"], "Failed"), outcome_of={"c": S, "d": K}.get).ready
    assert skip_of(waiting_on(["c", "d"], "Failed"), {"c": S, "d": K}) == \
        'no target failed ("c" Succeeded; "d" was Skipped), and this flow runs only if one does'


@pytest.mark.parametrize("ended", [S, F, K])
def test_a_cleanup_runs_once_every_target_ended_whatever_the_outcome(ended):
    assert check_dependencies(waiting_on(["c", "d"], "Finished"), outcome_of={"c": S, "d": ended}.get).ready
    waiting = check_dependencies(waiting_on(["c", "d"], "Finished"), outcome_of={"c": ended, "d": None}.get)
    assert (waiting.ready, waiting.waiting_for) == (False, ("d",))
    assert skip_of(waiting_on(["c", "d"], "Finished"), {"c": ended, "d": None}) is None


def test_a_probe_is_not_what_check_dependencies_looks_at():
    probe = {"taskStatusList": [{"taskName": "ps", "phase": "Running"}]}
    with_probe = flow({"name": "b", "dependsOn": {"targets": ["a"], "probe": probe}})
    assert check_dependencies(with_probe, outcome_of=lambda name: S).ready
