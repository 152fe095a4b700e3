"""Deadlines that steer (``jobflow_core.queueing.deadline``, ``.outlook``, the line's order in ``.line``): the state
rules as rows, their hysteresis, the line with at-risk JobFlows in it, and what a plan writes and says."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings, strategies as st

from jobflow_core import plan
from jobflow_core.models import JobTemplateStatus
from jobflow_core.queueing.deadline import (DEADLINE_RULES, DeadlineState, Reading, deadline_events, judge, margin)
from jobflow_core.queueing.line import (AT_RISK_PRIORITY_CLASS, OVERTAKE_SECONDS, PRIORITY_CLASS, InLine, QueueView,
                                        admit, in_line, line_key, line_of_wire, line_to_wire)
from jobflow_core.queueing.outlook import expected_start
from scenario import T0, jobflow, template

S = DeadlineState
DEADLINE = T0 + timedelta(minutes=10)


def reading(*, previous=None, expected=None, now=T0, ended=None, succeeded=False, deadline=DEADLINE,
            slack=timedelta(seconds=30)) -> Reading:
    return Reading(deadline=deadline, now=now, previous=previous, expected=expected, ended=ended, succeeded=succeeded,
                   margin=slack)


# --- the rules, one example each ---------------------------------------------------------------------------------

EXAMPLES = {
    "it succeeded by its deadline": (reading(ended=DEADLINE, succeeded=True), S.MET),
    "it ended after its deadline": (reading(ended=DEADLINE + timedelta(seconds=1), succeeded=True), S.MISSED),
    "it failed before its deadline: nothing is left to steer": (reading(previous=S.AT_RISK, ended=T0), S.AT_RISK),
    "its deadline was missed before: a missed deadline stays missed": (
        reading(previous=S.MISSED, expected=T0), S.MISSED),
    "its deadline passed before it ended": (reading(now=DEADLINE, expected=DEADLINE), S.MISSED),
    "no forecast: it stays as it was": (reading(previous=None, expected=None), S.UNKNOWN),
    "at risk, and not yet expected to end a margin before its deadline": (
        reading(previous=S.AT_RISK, expected=DEADLINE - timedelta(seconds=29)), S.AT_RISK),
    "expected to end after its deadline": (reading(previous=S.ON_TIME, expected=DEADLINE + timedelta(seconds=1)),
                                           S.AT_RISK),
    "expected to end by its deadline": (reading(previous=S.AT_RISK, expected=DEADLINE - timedelta(seconds=30)),
                                        S.ON_TIME),
}


@pytest.mark.parametrize("rule", DEADLINE_RULES, ids=lambda rule: rule.when)
def test_every_rule_has_an_example_that_it_decides(rule):
    example, state = EXAMPLES[rule.when]
    assert judge(example) == (rule, state)


def test_the_margin_is_a_tenth_of_the_window_between_5_s_and_10_min_and_at_least_a_turn_per_stage_to_come():
    assert margin(T0, T0 + timedelta(seconds=20)) == timedelta(seconds=5)
    assert margin(T0, T0 + timedelta(minutes=30)) == timedelta(minutes=3)
    assert margin(T0, T0 + timedelta(hours=6)) == timedelta(minutes=10)
    assert margin(T0, T0 + timedelta(seconds=20), longest=12) == timedelta(seconds=12)
    assert margin(T0, T0 + timedelta(seconds=20), longest=12, turns=3) == timedelta(seconds=36)


ORDER = {S.ON_TIME: 0, S.AT_RISK: 1, S.MISSED: 2}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 120), min_size=1, max_size=30), st.integers(-60, 60))
def test_between_two_changes_the_state_only_moves_forward(steps, start):
    """Time passing with nothing happening: the clock forecast only moves later, so OnTime -> AtRisk -> Missed, never
    back."""
    now, previous, expected = T0, None, DEADLINE + timedelta(seconds=start)
    for step in steps:
        now += timedelta(seconds=step)
        expected = max(expected, now)
        _, state = judge(reading(previous=previous, expected=expected, now=now))
        if previous in ORDER:
            assert ORDER[state] >= ORDER[previous]
        previous = state


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-120, 120), min_size=1, max_size=40))
def test_back_on_time_needs_a_forecast_a_margin_earlier(offsets):
    """Each AtRisk -> OnTime change comes with the forecast having moved earlier, and by at least the margin since it
    was last beyond the deadline's margin: noise smaller than the margin never flaps the state."""
    previous, late = None, None
    for offset in offsets:
        expected = DEADLINE + timedelta(seconds=offset)
        _, state = judge(reading(previous=previous, expected=expected))
        if previous is S.AT_RISK and state is S.ON_TIME:
            assert late is not None and late - expected >= timedelta(seconds=30)
        if state is S.AT_RISK:
            late = max(late or expected, expected) if previous is S.AT_RISK else expected
        previous = state


# --- the line ----------------------------------------------------------------------------------------------------

def entry(name: str, created: datetime, *, at_risk: datetime | None = None, started: bool = False,
          cpu: int = 8, seconds: int | None = 30, end: datetime | None = None) -> InLine:
    return InLine(namespace="default", name=name, created=created, queue="gpu", started=started, ended=False,
                  reserved={"cpu": cpu * 1000} if started else {}, requests=None if started else {"cpu": cpu * 1000},
                  at_risk=at_risk, seconds=None if started else seconds, expected_end=end)


ENTRIES = st.builds(lambda i, minute, risk: entry(f"f{i}", T0 + timedelta(minutes=minute),
                                                  at_risk=T0 + timedelta(minutes=risk) if risk is not None else None),
                    st.integers(0, 50), st.integers(0, 300), st.none() | st.integers(0, 400))


@settings(max_examples=300, deadline=None)
@given(st.lists(ENTRIES, min_size=2, max_size=10))
def test_an_at_risk_jobflow_stands_ahead_of_every_jobflow_without_one_created_after_it(line):
    for a in line:
        for b in line:
            if a.at_risk is not None and b.at_risk is None and b.created > a.created:
                assert a.key < b.key


@settings(max_examples=300, deadline=None)
@given(st.lists(ENTRIES, min_size=2, max_size=10), st.integers(0, 400))
def test_a_jobflow_is_overtaken_only_within_the_bound_after_its_creation(line, minute):
    """At-risk means its deadline is still ahead (a passed one is Missed, and stands in line as any other), so an
    at-risk JobFlow stands ahead of one created earlier only while that one is younger than OVERTAKE_SECONDS."""
    now = T0 + timedelta(minutes=minute)
    line = [e if e.at_risk is None or e.at_risk > now else entry(e.name, e.created) for e in line]
    for a in line:
        for b in line:
            if a.key < b.key and a.created > b.created:
                assert a.at_risk is not None
                assert now - b.created < timedelta(seconds=OVERTAKE_SECONDS)


def test_earliest_deadline_first_among_at_risk_jobflows():
    late = entry("late", T0, at_risk=T0 + timedelta(minutes=30))
    soon = entry("soon", T0 + timedelta(minutes=5), at_risk=T0 + timedelta(minutes=20))
    plain = entry("plain", T0 - timedelta(minutes=10))
    assert sorted([plain, late, soon], key=lambda e: e.key) == [soon, late, plain]


def test_without_at_risk_jobflows_the_line_is_the_order_of_creation_as_before():
    keys = [line_key(created=T0 + timedelta(seconds=s), name=n, namespace="d")
            for s, n in [(0, "b"), (0, "a"), (1, "a")]]
    assert sorted(keys) == [keys[1], keys[0], keys[2]]


def test_the_line_an_event_carries_keeps_what_the_forecast_and_the_order_read():
    original = entry("x", T0, at_risk=DEADLINE)
    assert line_of_wire(line_to_wire(original)) == original
    running = entry("y", T0, started=True, end=DEADLINE)
    assert line_of_wire(line_to_wire(running)) == running


def test_a_jobflow_as_listed_is_at_risk_by_its_status():
    raw = {"metadata": {"name": "x", "namespace": "d", "creationTimestamp": "2026-01-02T03:04:05Z"},
           "status": {"queue": {"name": "gpu", "state": "Waiting", "requests": {"cpu": "8"}, "expectedSeconds": 30},
                      "deadline": {"at": "2026-01-02T03:14:05Z", "state": "AtRisk"}}}
    found = in_line(raw)
    assert (found.at_risk, found.seconds) == (DEADLINE, 30)
    raw["status"]["deadline"]["state"] = "OnTime"
    assert in_line(raw).at_risk is None


def view(*line: InLine, cpu: int = 32) -> QueueView:
    return QueueView(name="gpu", capacity={"cpu": cpu * 1000}, jobflows=line)


def test_an_at_risk_jobflow_goes_ahead_of_the_room_started_jobflows_not_at_risk_hold():
    full = [entry(f"s{i}", T0 - timedelta(minutes=1), started=True) for i in range(4)]
    needs = {"cpu": 8000}
    assert not admit(view(*full), namespace="default", name="me", created=T0, needs=needs).start
    steered = view(*full).__class__(**{**view(*full).__dict__, "at_risk": DEADLINE})
    assert admit(steered, namespace="default", name="me", created=T0, needs=needs).start
    at_risk_too = [entry(f"r{i}", T0 - timedelta(minutes=1), started=True, at_risk=DEADLINE) for i in range(4)]
    held = QueueView(name="gpu", capacity={"cpu": 32000}, jobflows=tuple(at_risk_too), at_risk=DEADLINE)
    assert not admit(held, namespace="default", name="me", created=T0, needs=needs).start


def test_a_jobflow_started_long_before_an_at_risk_deadline_keeps_its_room():
    old = [entry(f"s{i}", T0 - timedelta(seconds=OVERTAKE_SECONDS + 60), started=True) for i in range(4)]
    steered = QueueView(name="gpu", capacity={"cpu": 32000}, jobflows=tuple(old), at_risk=DEADLINE)
    assert not admit(steered, namespace="default", name="me", created=T0, needs={"cpu": 8000}).start


# --- the line played forward -------------------------------------------------------------------------------------

def me(created: datetime = T0) -> InLine:
    return entry("me", created)


@pytest.mark.parametrize("line, expected", [
    ((), T0),
    (tuple(entry(f"s{i}", T0, started=True, end=T0 + timedelta(seconds=10 * (i + 1))) for i in range(4)),
     T0 + timedelta(seconds=10)),
    ((entry("s", T0, started=True, cpu=32, end=T0 + timedelta(seconds=40)),
      entry("w", T0 - timedelta(seconds=1), cpu=24, seconds=100)), T0 + timedelta(seconds=40)),
    ((entry("s", T0, started=True, cpu=32, end=T0 + timedelta(seconds=40)),
      entry("w", T0 - timedelta(seconds=1), cpu=32, seconds=100)), T0 + timedelta(seconds=140)),
    ((entry("s", T0, started=True, cpu=16, end=T0 - timedelta(seconds=40)),), T0),  # overran: any moment
], ids=["empty", "first-end", "beside-the-one-ahead", "after-the-one-ahead", "overdue"])
def test_the_expected_start_plays_the_line_forward(line, expected):
    assert expected_start(view(*line), me(), needs={"cpu": 8000}, seconds=30, now=T0) == expected


def test_head_of_line_no_one_starts_before_the_one_ahead():
    line = (entry("s", T0, started=True, cpu=24, end=T0 + timedelta(seconds=50)),
            entry("wide", T0 - timedelta(seconds=2), cpu=32, seconds=10))
    assert expected_start(view(*line), me(), needs={"cpu": 8000}, seconds=30, now=T0) == T0 + timedelta(seconds=60)


def test_unknown_run_times_count_as_the_asking_one_s_and_are_unknown_without_it():
    line = (entry("s", T0, started=True, cpu=32, end=None),)
    assert expected_start(view(*line), me(), needs={"cpu": 8000}, seconds=30, now=T0) == T0 + timedelta(seconds=30)
    assert expected_start(view(*line), me(), needs={"cpu": 8000}, seconds=None, now=T0) is None


# --- what a plan writes and says ---------------------------------------------------------------------------------

STAGE = """
minAvailable: 4
queue: gpu
tasks:
- {name: t, replicas: 4, template: {spec: {containers: [{name: c, image: busybox,
   resources: {requests: {cpu: 2}}}]}}}
"""


def timed_templates(seconds: int = 60) -> dict:
    return {name: template(name, spec=STAGE).model_copy(update={"status": JobTemplateStatus.model_validate(
        {"durationP50Seconds": seconds})}) for name in ("a", "b")}


def chain(deadline: datetime | None, *, status: dict | None = None):
    text = (f"metadata: {{name: me, creationTimestamp: '{T0.isoformat()}'}}\n"
            "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]"
            + (f", deadline: '{deadline.isoformat()}'" if deadline else "") + "}")
    return jobflow(text, status=status)


def full_queue(end: datetime, *, at_risk_class: str | None = AT_RISK_PRIORITY_CLASS,
               held_at_risk: datetime | None = None) -> dict:
    line = tuple(entry(f"s{i}", T0 - timedelta(minutes=1), started=True, end=end, at_risk=held_at_risk)
                 for i in range(4))
    return {"gpu": QueueView(name="gpu", capacity={"cpu": 32000}, jobflows=line, priority_class=PRIORITY_CLASS,
                             at_risk_priority_class=at_risk_class)}


def test_a_waiting_jobflow_expected_to_finish_after_its_deadline_is_at_risk_and_goes_ahead():
    # Behind four JobFlows that hold the queue for 10 more minutes, a 2-minute chain due in 5 minutes is at risk.
    result = plan(chain(T0 + timedelta(minutes=5)), templates=timed_templates(), jobs=[], now=T0,
                  queues=full_queue(T0 + timedelta(minutes=10)))
    deadline = result.status.deadline
    assert (deadline.state, deadline.expected_completion) == ("AtRisk", T0 + timedelta(minutes=12))
    assert "goes ahead in its queue's line" in deadline.message
    [create] = result.creates
    assert create.manifest["spec"]["priorityClassName"] == AT_RISK_PRIORITY_CLASS
    [warning] = [e for e in result.events if e.reason == "DeadlineAtRisk"]
    assert warning.type == "Warning" and warning.message == deadline.message
    assert result.status.recheck_seconds == 30


def test_the_same_jobflow_with_time_to_spare_is_on_time_and_waits_its_turn():
    result = plan(chain(T0 + timedelta(minutes=20)), templates=timed_templates(), jobs=[], now=T0,
                  queues=full_queue(T0 + timedelta(minutes=10)))
    assert result.status.deadline.state == "OnTime" and result.creates == []
    assert result.status.queue.state == "Waiting" and result.status.queue.expected_seconds == 120
    assert not [e for e in result.events if e.reason.startswith("Deadline")]


def test_a_change_of_state_is_said_once():
    # The queue is held by JobFlows at risk themselves: it stays in line, at risk, and says so once.
    queues = full_queue(T0 + timedelta(minutes=10), held_at_risk=T0 + timedelta(minutes=4))
    first = plan(chain(T0 + timedelta(minutes=5)), templates=timed_templates(), jobs=[], now=T0, queues=queues)
    assert first.status.deadline.state == "AtRisk" and first.creates == []
    again = plan(chain(T0 + timedelta(minutes=5), status=first.status.to_wire()), templates=timed_templates(),
                 jobs=[], now=T0 + timedelta(seconds=5), queues=queues)
    assert again.status.deadline == first.status.deadline
    assert not [e for e in again.events if e.reason.startswith("Deadline")]


def test_once_steered_ahead_and_started_it_is_judged_by_its_own_forecast():
    """Started at once, the 2-minute chain is expected at T0+2m05 against a 5-minute deadline: with a flow's time
    (60 s) to spare it is on time again; due at T0+3 it stays at risk (its next stages keep the at-risk class)."""
    for due, state in ((T0 + timedelta(minutes=5), "OnTime"), (T0 + timedelta(minutes=3), "AtRisk")):
        first = plan(chain(due), templates=timed_templates(), jobs=[], now=T0,
                     queues=full_queue(T0 + timedelta(minutes=10)))
        again = plan(chain(due, status=first.status.to_wire()), templates=timed_templates(),
                     jobs=[], now=T0 + timedelta(seconds=5), queues=full_queue(T0 + timedelta(minutes=10)))
        assert (first.status.deadline.state, again.status.deadline.state) == ("AtRisk", state)
        assert [e.reason for e in again.events if e.reason.startswith("Deadline")] == (
            ["DeadlineOnTime"] if state == "OnTime" else [])


def test_without_the_at_risk_priority_class_it_gets_the_started_one():
    result = plan(chain(T0 + timedelta(minutes=5)), templates=timed_templates(), jobs=[], now=T0,
                  queues=full_queue(T0 + timedelta(minutes=10), at_risk_class=None))
    assert result.creates[0].manifest["spec"]["priorityClassName"] == PRIORITY_CLASS


def test_a_deadline_passed_is_missed_once_and_fails_nothing():
    status = {"deadline": {"at": (T0 + timedelta(minutes=5)).isoformat(), "state": "AtRisk"}}
    result = plan(chain(T0 + timedelta(minutes=5), status=status), templates=timed_templates(), jobs=[],
                  now=T0 + timedelta(minutes=6), queues=full_queue(T0 + timedelta(minutes=10)))
    assert result.status.deadline.state == "Missed" and result.status.state.phase != "Failed"
    [warning] = [e for e in result.events if e.reason == "DeadlineMissed"]
    assert warning.type == "Warning"
    assert result.status.recheck_seconds is None or result.status.recheck_seconds > 0


def test_deadline_events_are_said_against_the_written_state():
    on_time = {"at": DEADLINE, "state": "OnTime"}
    from jobflow_core.models import DeadlineStatus
    at_risk = DeadlineStatus(at=DEADLINE, state="AtRisk", message="m")
    assert [e.reason for e in deadline_events(DeadlineStatus(**on_time), at_risk)] == ["DeadlineAtRisk"]
    assert deadline_events(at_risk, at_risk) == []
    back = DeadlineStatus(at=DEADLINE, state="OnTime", message="m")
    assert [e.reason for e in deadline_events(at_risk, back)] == ["DeadlineOnTime"]
    assert deadline_events(None, back) == []


def test_a_jobflow_without_a_deadline_writes_nothing_new():
    result = plan(chain(None), templates=timed_templates(), jobs=[], now=T0, queues=full_queue(T0))
    assert result.status.deadline is None


def test_a_started_jobflow_at_risk_gives_its_next_stage_the_at_risk_class_and_ends_met_or_missed():
    from scenario import vcjob
    from jobflow_core.models import VcJobPhase
    flow = chain(T0 + timedelta(seconds=90), status={"jobStatusList": [{"name": "me-a", "state": "Completed"}],
                                                     "deadline": {"at": (T0 + timedelta(seconds=90)).isoformat(),
                                                                  "state": "AtRisk"}})
    done_a = vcjob(flow, "a", VcJobPhase.COMPLETED, created=T0)
    result = plan(flow, templates=timed_templates(), jobs=[done_a], now=T0 + timedelta(seconds=45),
                  queues=full_queue(T0 + timedelta(minutes=10)))
    assert result.status.deadline.state == "AtRisk"  # b: 60 s from now, after T0+90 s
    [create] = result.creates
    assert create.manifest["spec"]["priorityClassName"] == AT_RISK_PRIORITY_CLASS
    done_b = vcjob(flow, "b", VcJobPhase.COMPLETED, created=T0 + timedelta(seconds=45),
                   changed=T0 + timedelta(seconds=100))
    ended = plan(flow.model_copy(update={"status": result.status}), templates=timed_templates(),
                 jobs=[done_a, done_b], now=T0 + timedelta(seconds=101), queues={})
    assert ended.status.state.phase == "Succeed" and ended.status.deadline.state == "Missed"
    assert [e.reason for e in ended.events if e.reason.startswith("Deadline")] == ["DeadlineMissed"]


def test_a_jobflowtemplate_sets_each_run_s_deadline_after_its_scheduled_time():
    from jobflow_core.models import JobFlowTemplate
    from jobflow_core.schedules.runs import Cause, Start, run_manifest
    jft = JobFlowTemplate.model_validate({
        "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
        "metadata": {"name": "nightly", "namespace": "default", "uid": "u"},
        "spec": {"schedule": "0 0 * * *", "deadlineSeconds": 21600,
                 "jobFlow": {"spec": {"flows": [{"name": "a"}]}}}})
    scheduled = run_manifest(jft, Start(name="nightly-1", cause=Cause.SCHEDULE, scheduled=T0), now=T0 + timedelta(
        minutes=3))
    assert scheduled["spec"]["deadline"] == "2026-01-02T09:04:05Z"
    by_hand = run_manifest(jft, Start(name="nightly-2", cause=Cause.MANUAL), now=T0)
    assert by_hand["spec"]["deadline"] == "2026-01-02T09:04:05Z"
    plain = run_manifest(jft.model_copy(update={"spec": jft.spec.model_copy(update={"deadline_seconds": None})}),
                         Start(name="nightly-3", cause=Cause.MANUAL), now=T0)
    assert "deadline" not in plain["spec"]


def test_with_a_sink_the_change_to_at_risk_is_a_cloudevent_recorded_with_the_status_once():
    first = plan(chain(T0 + timedelta(minutes=5)), templates=timed_templates(), jobs=[], now=T0, notify=True,
                 queues=full_queue(T0 + timedelta(minutes=10), held_at_risk=T0 + timedelta(minutes=4)))
    [sent] = [n for n in first.status.notifications.pending if "deadline" in n.type]
    assert (sent.type, sent.subject, sent.data["state"]) == ("sh.volcano.flow.jobflow.deadline.atrisk", "me", "AtRisk")
    again = plan(chain(T0 + timedelta(minutes=5), status=first.status.to_wire()), templates=timed_templates(),
                 jobs=[], now=T0 + timedelta(seconds=5), notify=True,
                 queues=full_queue(T0 + timedelta(minutes=10), held_at_risk=T0 + timedelta(minutes=4)))
    assert [n.id for n in again.status.notifications.pending] == [n.id for n in first.status.notifications.pending]


def test_a_first_stage_volcano_still_holds_pending_has_not_begun_for_the_clock_forecast():
    from scenario import vcjob
    from jobflow_core.models import VcJobPhase
    flow = chain(T0 + timedelta(seconds=180), status={"deadline": {"at": (T0 + timedelta(seconds=180)).isoformat(),
                                                                   "state": "AtRisk"}})
    for phase, state in ((VcJobPhase.PENDING, "AtRisk"), (VcJobPhase.RUNNING, "OnTime")):
        # a: created at T0, 60 s; b: 60 s; margin: the longest flow, 60 s. At T0+20: Pending, it ends at T0+140
        # at best (at risk: not a margin before T0+180); Running since T0, at T0+120 (on time by the margin).
        job = vcjob(flow, "a", phase, created=T0)
        result = plan(flow, templates=timed_templates(), jobs=[job], now=T0 + timedelta(seconds=20),
                      queues=full_queue(T0))
        assert result.status.deadline.state == state, phase


def test_a_jobflow_with_a_deadline_never_reconciled_stands_in_line_as_at_risk():
    raw = {"metadata": {"name": "x", "namespace": "d", "creationTimestamp": "2026-01-02T03:04:05Z"},
           "spec": {"deadline": "2026-01-02T03:14:05Z"}}
    assert in_line(raw).at_risk == DEADLINE
    raw["status"] = {"deadline": {"at": "2026-01-02T03:14:05Z", "state": "OnTime"}}
    assert in_line(raw).at_risk is None


def test_while_another_jobflow_s_end_is_pending_there_is_no_forecast_and_nothing_is_said():
    from jobflow_core import plan_observation
    from jobflow_core.dag.awaits import Run, Seen
    from jobflow_core.models import JobFlowPhase
    from jobflow_core.planning.observation import observe
    jf = jobflow(f"metadata: {{name: me, creationTimestamp: '{T0.isoformat()}'}}\n"
                 "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}], dependsOn: {jobFlows: [{name: up}]},"
                 f" deadline: '{(T0 + timedelta(minutes=3)).isoformat()}'}}")
    running = Run("up", "uid-up", T0, JobFlowPhase.RUNNING, None, None, frozenset())
    result = plan_observation(observe(jf, jobs=[], now=T0, awaited=Seen(jobflows={"up": running})),
                              templates=timed_templates(), queues=full_queue(T0 + timedelta(minutes=10)))
    assert result.status.deadline.state == "Unknown"
    assert not [e for e in result.events if e.reason.startswith("Deadline")]


def test_a_missed_deadline_stays_missed_even_when_a_later_look_sees_an_earlier_end():
    """A recheck at the deadline that had not seen the last vcjob's end wrote Missed; the end, seen later, was
    before it: the state never goes back (nor is Met said after Missed)."""
    due = T0 + timedelta(seconds=90)
    flow = chain(due, status={"jobStatusList": [{"name": "me-a", "state": "Completed"}],
                              "deadline": {"at": due.isoformat(), "state": "Missed"}})
    done_a = vcjob_of(flow, "a", created=T0)
    done_b = vcjob_of(flow, "b", created=T0 + timedelta(seconds=45), changed=T0 + timedelta(seconds=80))
    ended = plan(flow, templates=timed_templates(), jobs=[done_a, done_b], now=T0 + timedelta(seconds=101),
                 queues={})
    assert (ended.status.state.phase, ended.status.deadline.state) == ("Succeed", "Missed")
    assert not [e for e in ended.events if e.reason.startswith("Deadline")]


def vcjob_of(flow, name: str, **times):
    from scenario import vcjob
    from jobflow_core.models import VcJobPhase
    return vcjob(flow, name, VcJobPhase.COMPLETED, **times)


def test_a_run_started_by_hand_gets_its_deadline_after_its_creation():
    """``kubectl jobflow run`` and the dashboard's Run now go through apiclient.steering.start_run."""
    from apiclient.steering import start_run

    class Cluster:
        created: list[dict] = []

        def find(self, api_type, namespace, name):
            return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
                    "metadata": {"name": name, "namespace": namespace, "uid": "u"},
                    "spec": {"deadlineSeconds": 3600, "jobFlow": {"spec": {"flows": [{"name": "a"}]}}}}

        def create(self, api_type, namespace, body):
            self.created.append(body)
            return body

    cluster = Cluster()
    start_run(cluster, "default", "nightly", {}, now=T0)
    [run] = cluster.created
    assert run["spec"]["deadline"] == "2026-01-02T04:04:05Z"


def test_a_stage_counts_from_when_volcano_first_ran_it_not_from_its_creation():
    from scenario import vcjob
    from jobflow_core.models import VcJob, VcJobPhase
    due = T0 + timedelta(seconds=180)
    flow = chain(due, status={"deadline": {"at": due.isoformat(), "state": "AtRisk"}})
    wire = vcjob(flow, "a", VcJobPhase.RUNNING, created=T0).to_wire()
    wire["status"]["conditions"] = [{"status": "Pending", "lastTransitionTime": "2026-01-02T03:04:05Z"},
                                    {"status": "Running", "lastTransitionTime": "2026-01-02T03:04:35Z"}]
    result = plan(flow, templates=timed_templates(), jobs=[VcJob.model_validate(wire)],
                  now=T0 + timedelta(seconds=40), queues=full_queue(T0))
    assert result.status.deadline.state == "AtRisk"  # ran at T0+30: ends T0+150, not a margin (60 s) before


def test_a_started_jobflow_overtaken_by_at_risk_ones_holds_its_next_stage_and_keeps_its_room():
    from scenario import vcjob
    from jobflow_core.models import VcJobPhase
    flow = jobflow(f"metadata: {{name: other, creationTimestamp: '{T0.isoformat()}'}}\n"
                   "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}",
                   status={"jobStatusList": [{"name": "other-a", "state": "Running"}],
                           "queue": {"name": "gpu", "state": "Admitted", "reserved": {"cpu": "8"}}})
    done = vcjob(flow, "a", VcJobPhase.COMPLETED, created=T0)
    risky = tuple(entry(f"r{i}", T0 + timedelta(minutes=1), started=True, at_risk=DEADLINE) for i in range(4))
    view = {"gpu": QueueView(name="gpu", capacity={"cpu": 32000}, jobflows=risky)}
    held = plan(flow, templates=timed_templates(), jobs=[done], now=T0 + timedelta(minutes=2), queues=view)
    assert held.creates == [] and held.status.state.reason == "WaitingForQueue"
    assert held.status.queue.state == "Held" and held.status.queue.reserved == {"cpu": "8"}
    assert "4 JobFlows at risk of missing their deadline hold 32 CPU" in held.status.queue.message
    assert in_line({"metadata": {"name": "other", "namespace": "default"}, "status": held.status.to_wire()}).held
    # Three at risk leave room for it; at-risk ones that did not overtake it (created after it, due more than the
    # hour after its creation) never hold it.
    far = T0 + timedelta(hours=2)
    for line in (risky[:3], tuple(entry(f"e{i}", T0 + timedelta(minutes=1), started=True, at_risk=far)
                                  for i in range(4))):
        view = {"gpu": QueueView(name="gpu", capacity={"cpu": 32000}, jobflows=line)}
        goes = plan(flow, templates=timed_templates(), jobs=[done], now=T0 + timedelta(minutes=2), queues=view)
        assert [c.manifest["metadata"]["name"] for c in goes.creates] == ["other-b"]
