"""A flow may start when every target's vcjob is Completed, and only then."""

import pytest

from jobflow_core.dependencies import check_dependencies, starts_allowed
from jobflow_core.models import Flow, JobFlowPhase, VcJobPhase

P = VcJobPhase


def flow(text: dict) -> Flow:
    return Flow.model_validate(text)


@pytest.mark.parametrize(
    "spec",
    [{"name": "a"}, {"name": "a", "dependsOn": {}}, {"name": "a", "dependsOn": {"targets": []}}],
)
def test_a_flow_without_targets_is_ready_at_once(spec):
    assert check_dependencies(flow(spec), phase_of=lambda name: None).ready


def test_a_flow_is_ready_when_every_target_is_completed():
    readiness = check_dependencies(
        flow({"name": "e", "dependsOn": {"targets": ["c", "d"]}}), phase_of=lambda name: P.COMPLETED
    )
    assert readiness.ready and readiness.waiting_for == ()


@pytest.mark.parametrize("target_phase", [None, *(p for p in VcJobPhase if p is not P.COMPLETED)])
def test_any_other_target_phase_keeps_the_flow_waiting(target_phase):
    phases = {"c": P.COMPLETED, "d": target_phase}
    readiness = check_dependencies(flow({"name": "e", "dependsOn": {"targets": ["c", "d"]}}), phase_of=phases.get)
    assert not readiness.ready
    assert readiness.waiting_for == ("d",)
    assert readiness.message == 'waiting for "d" to be Completed'


def test_a_probe_does_not_change_readiness_yet():
    probe = {"taskStatusList": [{"taskName": "ps", "phase": "Running"}]}
    with_probe = flow({"name": "b", "dependsOn": {"targets": ["a"], "probe": probe}})
    assert check_dependencies(with_probe, phase_of=lambda name: P.COMPLETED).ready


@pytest.mark.parametrize("phase", list(JobFlowPhase))
def test_nothing_new_starts_once_the_jobflow_is_failed_or_terminating(phase):
    assert starts_allowed(phase) == (phase not in (JobFlowPhase.FAILED, JobFlowPhase.TERMINATING))
