"""Why a flow is Skipped (``jobflow_core.dag.skips``): one example per row, the table as docs/reference.md shows it, and
the rows' order as the JobFlow sees it."""

import re
from datetime import timedelta
from pathlib import Path

import pytest

from jobflow_core import plan
from jobflow_core.dag.skips import SKIP_RULES, ConditionCheck, SkipFacts, decide_skip
from jobflow_core.models import Flow, VcJobPhase
from jobflow_core.vocabulary.kube_events import Reason
from jobflow_core.vocabulary.phase import FlowOutcome
from scenario import T0, jobflow, templates_for, vcjob

P = VcJobPhase
S, F, K = FlowOutcome.SUCCEEDED, FlowOutcome.FAILED, FlowOutcome.SKIPPED
REFERENCE = Path(__file__).parents[2] / "docs" / "reference.md"

OWNER = jobflow("spec: {flows: [{name: a}]}")
PROBE = {"taskStatusList": [{"taskName": "nginx", "phase": "Running"}]}


def facts(spec: dict, outcomes: dict, *, jobs: dict | None = None, now=T0,
          condition: ConditionCheck | None = None) -> SkipFacts:
    def evaluated() -> ConditionCheck:
        assert condition is not None, "the condition is evaluated only when a rule needs it"
        return condition

    return SkipFacts(Flow.model_validate(spec), outcome_of=outcomes.get, live_job=(jobs or {}).get,
                     probe_results={}, now=now, condition=evaluated)


def waiting_on(targets: list[str], **depends) -> dict:
    return {"name": "e", "dependsOn": {"targets": targets} | depends}


ROWS = {
    "it has no probe, waits for its targets to succeed, and one Failed or was Skipped":
        lambda: facts(waiting_on(["c", "d"]), {"c": None, "d": F}),
    "it has no probe, waits for a target to fail, and every target ended without failing":
        lambda: facts(waiting_on(["c", "d"], outcome="Failed"), {"c": S, "d": K}),
    "its probe can pass as written, but a target it has not passed against ended or was Skipped":
        lambda: facts(waiting_on(["a"], probe=PROBE), {"a": S}, jobs={"a": vcjob(OWNER, "a", P.COMPLETED)}),
    "its probe can pass as written, but did not pass within its timeoutSeconds":
        lambda: facts(waiting_on(["a"], probe=PROBE | {"timeoutSeconds": 60}), {"a": None},
                      jobs={"a": vcjob(OWNER, "a", P.RUNNING)}, now=T0 + timedelta(seconds=61)),
    "its dependencies are met and its when condition is false":
        lambda: facts(waiting_on(["c"]) | {"when": "targets.c.result.accuracy >= 0.9"}, {"c": S},
                      condition=ConditionCheck(holds=False)),
}


def test_every_row_of_the_table_has_an_example_here():
    assert [rule.when for rule in SKIP_RULES] == list(ROWS)


@pytest.mark.parametrize("rule", SKIP_RULES, ids=lambda rule: rule.when)
def test_each_row_decides_its_example(rule):
    decided = decide_skip(ROWS[rule.when]())
    assert decided is not None and decided[0] is rule


def test_the_messages_say_what_can_no_longer_happen():
    messages = {when: decide_skip(example())[1] for when, example in ROWS.items()}
    assert list(messages.values()) == [
        '"d" Failed, and this flow runs only if its targets succeed',
        'no target failed ("c" Succeeded; "d" was Skipped), and this flow runs only if one does',
        '"a" Succeeded before its probe passed, so the probe never will',
        "its probe did not pass within 60s of its last target's vcjob being created (waiting for probes: task "
        "'nginx' of vcjob 'test-a': 0/1 pods Running)",
        "its condition 'targets.c.result.accuracy >= 0.9' is false",
    ]


@pytest.mark.parametrize("example", [
    lambda: facts({"name": "e"}, {}),
    lambda: facts(waiting_on(["c", "d"]), {"c": S, "d": None}),
    lambda: facts(waiting_on(["c", "d"], outcome="Failed"), {"c": S, "d": None}),
    lambda: facts(waiting_on(["c", "d"], outcome="Finished"), {"c": F, "d": K}),
    lambda: facts(waiting_on(["a"], probe=PROBE | {"timeoutSeconds": 60}), {"a": None},
                  jobs={"a": vcjob(OWNER, "a", P.RUNNING)}, now=T0 + timedelta(seconds=59)),
    lambda: facts(waiting_on(["c"]) | {"when": "true"}, {"c": S}, condition=ConditionCheck(holds=True)),
    lambda: facts(waiting_on(["c"]) | {"when": "x"}, {"c": S}, condition=ConditionCheck(holds=None, message="?")),
], ids=["no targets", "a target not ended", "an error handler's target may still fail", "a cleanup",
        "a probe within its timeout", "a true condition", "a condition not evaluated yet"])
def test_otherwise_the_flow_is_not_skipped(example):
    assert decide_skip(example()) is None


def test_a_probe_that_cannot_pass_as_written_is_no_skip_but_a_blocker():
    bad = {"taskStatusList": [{"taskName": "wrker", "phase": "Running"}], "timeoutSeconds": 60}
    example = facts(waiting_on(["a"], probe=bad), {"a": S}, jobs={"a": vcjob(OWNER, "a", P.COMPLETED)},
                    now=T0 + timedelta(seconds=61))
    assert decide_skip(example) is None
    assert example.readiness.errors


def test_a_condition_is_not_evaluated_for_a_flow_its_targets_already_skip():
    example = facts(waiting_on(["c"]) | {"when": "true"}, {"c": F})  # facts() fails if the condition is asked for
    assert decide_skip(example)[0] is SKIP_RULES[0]


def test_the_first_row_that_holds_wins():
    ended_and_timed_out = facts(waiting_on(["a"], probe=PROBE | {"timeoutSeconds": 60}), {"a": S},
                                jobs={"a": vcjob(OWNER, "a", P.COMPLETED)}, now=T0 + timedelta(seconds=61))
    assert decide_skip(ended_and_timed_out)[0] is SKIP_RULES[2]


def test_a_probe_flow_ignores_its_outcome_rows():
    passed = {"taskStatusList": [{"taskName": "nginx", "phase": "Succeeded"}]}
    example = facts(waiting_on(["a"], probe=passed, outcome="Failed"), {"a": S},
                    jobs={"a": vcjob(OWNER, "a", P.COMPLETED)})
    assert example.readiness.ready and decide_skip(example) is None


def test_the_reason_of_each_row_is_what_skipped_flows_and_the_event_carry():
    flow = jobflow("""
spec:
  failurePolicy: KeepGoing
  flows:
  - name: a
  - {name: b, dependsOn: {targets: [a]}}
  - {name: c, dependsOn: {targets: [a], outcome: Failed}, when: 'targets.a.outcome == "Failed"'}
  - {name: d, dependsOn: {targets: [a], outcome: Finished}, when: 'targets.a.outcome == "Succeeded"'}
""")
    result = plan(flow, templates=templates_for(flow), jobs=[vcjob(flow, "a", P.FAILED)], now=T0)
    assert [(s.name, s.reason) for s in result.status.skipped_flows] == [
        ("b", Reason.DEPENDENCY_NOT_MET), ("d", Reason.CONDITION_FALSE)]
    assert [(e.reason, e.message.split(":")[0]) for e in result.events if e.message.startswith("flow")] == [
        (Reason.DEPENDENCY_NOT_MET, 'flow "b" skipped'), (Reason.CONDITION_FALSE, 'flow "d" skipped')]


def test_docs_reference_shows_the_table_row_for_row():
    text = REFERENCE.read_text()
    section = text[text.index("Why a flow is Skipped is decided in one table"):]
    rows = re.findall(r"^\| (.+?) \| (.+?) \|$", section.split("\n\n")[1], flags=re.MULTILINE)[2:]
    assert [(when.replace("`", ""), reason.strip("`")) for when, reason in rows] == \
        [(rule.when, rule.reason.value) for rule in SKIP_RULES] + [("otherwise", "not skipped")]
