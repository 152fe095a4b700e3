"""The forecast: expected starts, the expected completion and the critical path, from earlier runs' medians."""

from __future__ import annotations

from datetime import timedelta

from jobflow_core import plan
from jobflow_core.insight.template_stats import EndedJob, record_runs
from jobflow_core.models import VcJobPhase
from jobflow_core.vocabulary.phase import FlowOutcome
from scenario import T0, Cluster, jobflow, template
from seeds import diamond_flows, diamond_yaml

P = VcJobPhase
ALARM = {"name": "alarm", "dependsOn": {"targets": ["e"], "outcome": "Failed"}}
"""An error handler: it runs only if ``e`` fails."""
DIAMOND = diamond_yaml(metadata={"creationTimestamp": "2026-01-02T03:04:05Z"}, flows=[*diamond_flows(), ALARM])
MEDIANS = {"a": 60, "b": 120, "c": 300, "d": 30, "e": 60, "alarm": 10}


def ran(name: str, seconds: int):
    """A JobTemplate whose earlier runs took ``seconds`` (its median)."""
    runs = [EndedJob(template=name, name=f"old-{name}-{i}", uid=f"{name}-{i}", outcome=FlowOutcome.SUCCEEDED,
                seconds=seconds, end_time=T0 - timedelta(days=1, minutes=i)) for i in range(3)]
    made = template(name)
    return made.model_copy(update={"status": record_runs(None, runs)})


def test_waiting_flows_get_expected_starts_and_the_jobflow_a_completion_and_its_critical_path():
    flow = jobflow(DIAMOND)
    templates = {name: ran(name, seconds) for name, seconds in MEDIANS.items()}
    status = plan(flow, templates=templates, jobs=[], now=T0).status
    assert {e.flow: e.seconds for e in status.estimates} == MEDIANS
    starts = {w.name: w.expected_start for w in status.waiting_flows}
    assert starts == {"b": T0 + timedelta(seconds=60), "c": T0 + timedelta(seconds=180),
                      "d": T0 + timedelta(seconds=180), "e": T0 + timedelta(seconds=480), "alarm": None}
    assert status.expected_completion == T0 + timedelta(seconds=540)
    assert status.critical_path == ["a", "b", "c", "e"]  # the error handler is not expected to run


def test_observed_times_replace_estimates_and_an_unknown_estimate_makes_the_completion_unknown():
    cluster = Cluster(jobflow(DIAMOND), templates={name: ran(name, s) for name, s in MEDIANS.items()})
    cluster.step()
    cluster.move("a", P.COMPLETED)  # a took 2 minutes in the fake clock, not 60 s
    cluster.step()
    ended = cluster.jobs["test-a"].status.state.last_transition_time
    starts = {w.name: w.expected_start for w in cluster.flow.status.waiting_flows}
    assert starts["c"] == ended + timedelta(seconds=120)  # b starts when a ended (in this very plan), runs 120 s
    unknown = Cluster(jobflow(DIAMOND), templates={**{n: ran(n, s) for n, s in MEDIANS.items()}, "d": template("d")})
    unknown.step()
    status = unknown.flow.status
    assert status.expected_completion is None and status.critical_path is None
    assert {w.name: w.expected_start for w in status.waiting_flows}["d"] is not None  # d's start is known
    assert {w.name: w.expected_start for w in status.waiting_flows}["e"] is None  # after d: unknown
    assert [e for e in status.estimates if e.flow == "d"][0].seconds is None


def test_kubectl_jobflow_status_says_when_flows_should_start_and_the_jobflow_end():
    from display.facts import take
    from kubectl_jobflow.status import render
    cluster = Cluster(jobflow(DIAMOND), templates={name: ran(name, s) for name, s in MEDIANS.items()})
    cluster.step()
    view = render(take(cluster.flow.to_wire(), [job.to_wire() for job in cluster.jobs.values()]),
                  now=T0 + timedelta(seconds=30))
    assert "Expected to end in 8m30s, critical path a -> b -> c -> e (from earlier runs of its JobTemplates)" in view
    [b] = [line for line in view.splitlines() if line.lstrip("└─ ").startswith("b ")]
    assert b.endswith('waiting for "a" to be Completed; expected to start in 30s')
