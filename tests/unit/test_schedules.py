"""When a JobFlowTemplate's schedule starts a run: one example per row of SCHEDULE_RULES, history limits, and
properties over replayed, duplicated and reordered ticks."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core.models import JobFlowPhase, JobFlowTemplate
from jobflow_core.schedules.cron import parse
from jobflow_core.schedules.firing import SCHEDULE_RULES, Verdict, plan_schedule, resume_outlook
from jobflow_core.schedules.runs import Run, scheduled_run_name
from jobflow_core.vocabulary.kube_events import Reason

CREATED = datetime(2026, 11, 24, 9, 0, 30, tzinfo=UTC)


def template(spec: str = "", status: dict | None = None) -> JobFlowTemplate:
    body = yaml.safe_load(f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {{name: nightly, namespace: default, uid: u1, generation: 1, creationTimestamp: "2026-11-24T09:00:30Z"}}
spec:
  jobFlow:
    spec: {{flows: [{{name: a}}]}}
{spec}
""")
    body["status"] = status
    return JobFlowTemplate.model_validate(body)


def at(minute: int, second: int = 0) -> datetime:
    return datetime(2026, 11, 24, 9, minute, second, tzinfo=UTC)


def run(minute: int, phase: JobFlowPhase | None = None, *, ended: datetime | None = None) -> Run:
    return Run(name=scheduled_run_name("nightly", at(minute)), phase=phase, created=at(minute), ended=ended,
               cause="schedule", scheduled=at(minute))


EXAMPLES = {
    Verdict.UNSCHEDULED: (template(), [], at(5)),
    Verdict.INVALID: (template("  schedule: '61 * * * *'"), [], at(5)),
    Verdict.SUSPENDED: (template("  schedule: '* * * * *'\n  suspend: true"), [], at(5)),
    Verdict.IDLE: (template("  schedule: '0 * * * *'"), [], at(5)),
    Verdict.STARTED: (template("  schedule: '* * * * *'"), [run(5)], at(5, 10)),
    Verdict.MISSED: (template("  schedule: '*/5 * * * *'\n  startingDeadlineSeconds: 30"), [], at(5, 45)),
    Verdict.FORBIDDEN: (template("  schedule: '*/5 * * * *'\n  concurrencyPolicy: Forbid"), [run(1)], at(5)),
    Verdict.REPLACE: (template("  schedule: '*/5 * * * *'\n  concurrencyPolicy: Replace"), [run(1)], at(5)),
    Verdict.START: (template("  schedule: '*/5 * * * *'"), [], at(5, 3)),
}


def test_every_rule_has_an_example():
    assert {rule.verdict for rule in SCHEDULE_RULES} == set(EXAMPLES)


@pytest.mark.parametrize("verdict", list(EXAMPLES))
def test_each_example_is_decided_by_its_rule(verdict):
    spec, runs, now = EXAMPLES[verdict]
    assert plan_schedule(spec, runs=runs, now=now).verdict is verdict


def test_a_due_time_starts_its_run_named_by_the_minute_and_says_when_the_next_is():
    decision = plan_schedule(*EXAMPLES[Verdict.START][:1], runs=[], now=at(5, 3))
    assert decision.start.name == f"nightly-{int(at(5).timestamp()) // 60}"
    assert decision.start.scheduled == at(5)
    status = decision.status
    assert (status.last_schedule_time, status.next_schedule_time) == (at(5), at(10))
    assert status.active == [decision.start.name]
    assert status.last_run.cause == "schedule" and status.last_run.scheduled_time == at(5)
    assert [e.reason for e in decision.events] == [Reason.RUN_STARTED]


def test_only_the_most_recent_missed_time_starts_and_the_others_are_counted():
    decision = plan_schedule(template("  schedule: '* * * * *'"), runs=[], now=at(4, 20))  # 09:01..09:04 passed
    assert decision.start.scheduled == at(4)
    assert decision.status.missed_runs == 3
    assert [e.reason for e in decision.events] == [Reason.RUN_STARTED, Reason.MISS_SCHEDULE]


def test_a_time_later_than_the_deadline_starts_nothing_and_is_not_counted_twice():
    spec, runs, now = EXAMPLES[Verdict.MISSED]
    decision = plan_schedule(spec, runs=runs, now=now)
    assert decision.start is None and decision.status.missed_runs == 1 and decision.status.last_missed_time == at(5)
    again = plan_schedule(spec.model_copy(update={"status": decision.status}), runs=runs,
                          now=now + timedelta(seconds=30))
    assert again.verdict is Verdict.IDLE and again.status.missed_runs == 1


def test_catching_up_within_the_deadline_starts_the_latest_time():
    spec = template("  schedule: '* * * * *'\n  startingDeadlineSeconds: 90",
                    {"lastScheduleTime": "2026-11-24T09:01:00Z"})
    decision = plan_schedule(spec, runs=[run(1, JobFlowPhase.SUCCEED)], now=at(4, 30))  # down 09:02..09:04
    assert decision.start.scheduled == at(4) and decision.status.missed_runs == 2


def test_forbid_holds_the_run_while_another_is_active_and_starts_it_when_that_ends_within_the_deadline():
    spec = template("  schedule: '*/5 * * * *'\n  concurrencyPolicy: Forbid\n  startingDeadlineSeconds: 120")
    held = plan_schedule(spec, runs=[run(1)], now=at(5, 10))
    assert held.start is None and "still active (concurrencyPolicy Forbid)" in held.status.message
    assert held.status.last_schedule_time is None  # not considered yet: it may start later
    later = plan_schedule(spec.model_copy(update={"status": held.status}),
                          runs=[run(1, JobFlowPhase.SUCCEED, ended=at(6))], now=at(6, 10))
    assert later.verdict is Verdict.START and later.start.scheduled == at(5)
    too_late = plan_schedule(spec.model_copy(update={"status": held.status}),
                             runs=[run(1, JobFlowPhase.SUCCEED, ended=at(8))], now=at(8, 10))
    assert too_late.verdict is Verdict.MISSED


def test_replace_deletes_the_active_runs_before_starting():
    spec, runs, now = EXAMPLES[Verdict.REPLACE]
    decision = plan_schedule(spec, runs=runs, now=now)
    assert decision.replace == (run(1).name,) and decision.start.scheduled == at(5)
    assert decision.status.active == [decision.start.name]


def test_suspend_starts_nothing_and_shows_no_next_time():
    decision = plan_schedule(*EXAMPLES[Verdict.SUSPENDED][:1], runs=[], now=at(5))
    assert decision.start is None and decision.status.next_schedule_time is None
    assert "suspended" in decision.status.message


def test_history_limits_delete_the_oldest_finished_runs_beyond_them():
    spec = template("  schedule: '0 0 1 1 *'\n  successfulJobsHistoryLimit: 2\n  failedJobsHistoryLimit: 0")
    runs = [run(1, JobFlowPhase.SUCCEED), run(2, JobFlowPhase.FAILED), run(3, JobFlowPhase.SUCCEED),
            run(4, JobFlowPhase.SUCCEED), run(5, JobFlowPhase.RUNNING)]
    decision = plan_schedule(spec, runs=runs, now=at(6))
    assert decision.prune == (run(1).name, run(2).name)
    assert decision.status.active == [run(5).name]


def test_active_runs_counts_the_runs_active_names_for_the_printer_column():
    started = plan_schedule(*EXAMPLES[Verdict.START][:1], runs=[run(1), run(2)], now=at(5, 3))
    assert started.status.active_runs == 3 == len(started.status.active)
    assert started.status.to_wire()["activeRuns"] == 3
    ended = plan_schedule(template("  schedule: '0 0 1 1 *'"), runs=[run(1, JobFlowPhase.SUCCEED)], now=at(6))
    assert ended.status.active is None and ended.status.active_runs == 0  # the column says 0, not <none>


def test_default_history_keeps_three_succeeded_and_one_failed():
    runs = [run(m, JobFlowPhase.SUCCEED) for m in range(1, 6)] + [run(m, JobFlowPhase.FAILED) for m in (6, 7)]
    decision = plan_schedule(template(), runs=runs, now=at(8))
    assert decision.prune == (run(1).name, run(2).name, run(6).name)


def test_last_successful_time_is_when_the_latest_successful_run_ended():
    runs = [run(1, JobFlowPhase.SUCCEED, ended=at(2)), run(3, JobFlowPhase.SUCCEED, ended=at(4)),
            run(5, JobFlowPhase.FAILED, ended=at(6))]
    assert plan_schedule(template(), runs=runs, now=at(7)).status.last_successful_time == at(4)


def test_a_changed_schedule_refreshes_the_next_time_with_no_run():
    first = plan_schedule(template("  schedule: '0 * * * *'"), runs=[], now=at(5))
    assert first.status.next_schedule_time == at(5).replace(hour=10, minute=0)
    changed = plan_schedule(template("  schedule: '30 9 * * *'", first.status.to_wire()), runs=[], now=at(6))
    assert changed.verdict is Verdict.IDLE and changed.status.next_schedule_time == at(30)


def test_an_invalid_schedule_says_so_once():
    decision = plan_schedule(*EXAMPLES[Verdict.INVALID][:1], runs=[], now=at(5))
    assert "minute: 61 is out of range" in decision.status.message
    assert [e.reason for e in decision.events] == [Reason.INVALID_SCHEDULE]
    again = plan_schedule(template("  schedule: '61 * * * *'", decision.status.to_wire()), runs=[], now=at(6))
    assert again.events == ()


# Properties: the engine applied to a model cluster, tick after tick.

class Cluster:
    """The template's status and its runs, as the shell would leave them after each decision."""

    def __init__(self, spec: str) -> None:
        self.spec, self.status, self.runs, self.created = spec, None, {}, []

    def tick(self, now: datetime) -> None:
        decision = plan_schedule(template(self.spec, self.status), runs=list(self.runs.values()), now=now)
        for name in decision.replace:
            del self.runs[name]
        if decision.start is not None and decision.start.name not in self.runs:  # 409 AlreadyExists: done
            self.created.append(decision.start.scheduled)
            self.runs[decision.start.name] = Run(decision.start.name, None, now, None, "schedule",
                                                 decision.start.scheduled)
        self.status = decision.status.to_wire()
        for name in decision.prune:
            del self.runs[name]

    def finish_all(self, at_: datetime) -> None:
        self.runs = {name: replace(r, phase=JobFlowPhase.SUCCEED, ended=at_) for name, r in self.runs.items()}


SPECS = st.sampled_from(["  schedule: '* * * * *'", "  schedule: '*/3 * * * *'\n  startingDeadlineSeconds: 50",
                         "  schedule: '*/2 * * * *'\n  concurrencyPolicy: Forbid",
                         "  schedule: '*/2 * * * *'\n  concurrencyPolicy: Replace",
                         "  schedule: '7,8,9 9,10 * * *'\n  timeZone: Europe/Berlin"])
OFFSETS = st.lists(st.integers(0, 180 * 60), min_size=1, max_size=25)


@settings(max_examples=80, deadline=None)
@given(spec=SPECS, offsets=OFFSETS, copies=st.integers(1, 3))
def test_a_tick_delivered_many_times_starts_what_it_starts_once(spec, offsets, copies):
    once, many = Cluster(spec), Cluster(spec)
    for offset in sorted(offsets):
        now = CREATED + timedelta(seconds=offset)
        once.tick(now)
        for _ in range(copies):
            many.tick(now)
    assert many.created == once.created and many.status == once.status


@settings(max_examples=80, deadline=None)
@given(spec=SPECS, offsets=OFFSETS, data=st.data())
def test_reordered_ticks_never_start_a_time_twice_nor_move_the_last_schedule_time_back(spec, offsets, data):
    cluster = Cluster(spec)
    order = data.draw(st.permutations(offsets))
    last = None
    for offset in order:
        cluster.tick(CREATED + timedelta(seconds=offset))
        current = (cluster.status or {}).get("lastScheduleTime")
        assert last is None or (current is not None and current >= last)
        last = current
        if data.draw(st.booleans()):
            cluster.finish_all(CREATED + timedelta(seconds=offset))
    assert len(cluster.created) == len(set(cluster.created))
    schedule = parse(yaml.safe_load(spec)["schedule"], time_zone=yaml.safe_load(spec).get("timeZone"))
    assert all(schedule.latest_at_or_before(t) == t for t in cluster.created)


@settings(max_examples=80, deadline=None)
@given(offsets=OFFSETS)
def test_with_a_steady_clock_each_tick_starts_the_latest_time_of_its_window_and_counts_the_rest(offsets):
    cluster = Cluster("  schedule: '*/2 * * * *'")
    schedule = parse("*/2 * * * *")
    expected, previous = [], CREATED
    for offset in sorted(set(offsets)):
        now = CREATED + timedelta(seconds=offset)
        cluster.tick(now)
        latest = schedule.latest_at_or_before(now)
        if latest is not None and latest > previous:
            expected.append(latest)
            previous = latest
    assert cluster.created == expected
    everything = schedule.count_between(after=CREATED, until=expected[-1], cap=10_000) if expected else 0
    assert (cluster.status or {}).get("missedRuns", 0) == everything - len(expected)


def test_resuming_says_the_next_scheduled_time_when_nothing_passed_while_suspended():
    suspended = template("  schedule: '*/5 * * * *'\n  suspend: true", {"lastScheduleTime": "2026-11-24T09:05:00Z"})
    assert resume_outlook(suspended, now=at(7)) == "the next scheduled time is 2026-11-24T09:10:00Z"


def test_resuming_starts_the_last_time_missed_while_suspended_with_no_deadline():
    suspended = template("  schedule: '*/5 * * * *'\n  suspend: true", {"lastScheduleTime": "2026-11-24T09:05:00Z"})
    assert resume_outlook(suspended, now=at(22)) == (
        "the run for 2026-11-24T09:20:00Z, the last scheduled time that passed while it was suspended, starts at the "
        "engine's next look; then the next scheduled time is 2026-11-24T09:25:00Z")
    resumed = template("  schedule: '*/5 * * * *'", {"lastScheduleTime": "2026-11-24T09:05:00Z"})
    assert plan_schedule(resumed, runs=[], now=at(22)).start.scheduled == at(20)


def test_resuming_within_the_deadline_names_it_and_past_it_counts_the_times_as_missed():
    spec = "  schedule: '*/5 * * * *'\n  suspend: true\n  startingDeadlineSeconds: 60"
    suspended = template(spec, {"lastScheduleTime": "2026-11-24T09:05:00Z"})
    assert resume_outlook(suspended, now=at(20, 30)).endswith(
        "starts at the engine's next look, if that is within startingDeadlineSeconds=60 of it; then the next "
        "scheduled time is 2026-11-24T09:25:00Z")
    assert resume_outlook(suspended, now=at(22)) == (
        "3 scheduled time(s) passed while it was suspended, the last at 2026-11-24T09:20:00Z, more than "
        "startingDeadlineSeconds=60 ago: no run starts for them (counted as missed); the next scheduled time is "
        "2026-11-24T09:25:00Z")
    resumed = template(spec.replace("suspend: true", "suspend: false"), {"lastScheduleTime": "2026-11-24T09:05:00Z"})
    assert plan_schedule(resumed, runs=[], now=at(22)).verdict is Verdict.MISSED


def suspended_with_active(policy: str, *active: str) -> JobFlowTemplate:
    return template(f"  schedule: '*/5 * * * *'\n  suspend: true\n  concurrencyPolicy: {policy}",
                    {"lastScheduleTime": "2026-11-24T09:05:00Z", "active": list(active)})


def test_resuming_under_forbid_says_the_missed_run_waits_for_the_active_runs_naming_them():
    outlook = resume_outlook(suspended_with_active("Forbid", run(5).name, "nightly-m1"), now=at(22))
    assert outlook == (
        "the run for 2026-11-24T09:20:00Z, the last scheduled time that passed while it was suspended, waits: "
        f"{run(5).name}, nightly-m1 is still active (concurrencyPolicy Forbid); it starts when that ends; then the "
        "next scheduled time is 2026-11-24T09:25:00Z")
    resumed = template("  schedule: '*/5 * * * *'\n  concurrencyPolicy: Forbid",
                       {"lastScheduleTime": "2026-11-24T09:05:00Z"})
    assert plan_schedule(resumed, runs=[run(5)], now=at(22)).verdict is Verdict.FORBIDDEN


def test_resuming_under_replace_says_the_active_runs_are_deleted_and_the_missed_run_starts():
    outlook = resume_outlook(suspended_with_active("Replace", run(5).name), now=at(22))
    assert outlook == (
        "the run for 2026-11-24T09:20:00Z, the last scheduled time that passed while it was suspended, starts at the "
        f"engine's next look, which first deletes the active run(s) {run(5).name} (concurrencyPolicy Replace); then "
        "the next scheduled time is 2026-11-24T09:25:00Z")
    resumed = template("  schedule: '*/5 * * * *'\n  concurrencyPolicy: Replace",
                       {"lastScheduleTime": "2026-11-24T09:05:00Z"})
    assert plan_schedule(resumed, runs=[run(5)], now=at(22)).replace == (run(5).name,)


@pytest.mark.parametrize("policy", ["Allow", "Forbid", "Replace"])
def test_resuming_with_no_active_run_starts_the_missed_run_whatever_the_policy(policy):
    assert resume_outlook(suspended_with_active(policy), now=at(22)) == (
        "the run for 2026-11-24T09:20:00Z, the last scheduled time that passed while it was suspended, starts at the "
        "engine's next look; then the next scheduled time is 2026-11-24T09:25:00Z")


def test_resuming_when_the_missed_times_run_is_active_already_says_it_exists():
    assert resume_outlook(suspended_with_active("Forbid", run(20).name), now=at(22)) == (
        "the run for 2026-11-24T09:20:00Z, the last scheduled time that passed while it was suspended, exists already "
        f"({run(20).name}); then the next scheduled time is 2026-11-24T09:25:00Z")


def test_resuming_a_template_with_no_usable_schedule_says_why():
    assert resume_outlook(template("  suspend: true"), now=at(5)) == (
        "it has no schedule: its runs start by event or by hand")
    assert resume_outlook(template("  schedule: '61 * * * *'\n  suspend: true"), now=at(5)).endswith(
        "fix spec.schedule or spec.timeZone: no run is scheduled until then")


def by_hand(second: int) -> Run:
    return Run(name=f"nightly-m{int(at(3, second).timestamp())}", phase=JobFlowPhase.RUNNING,
               created=at(3, second), ended=None, cause="manual", scheduled=None)


def started(decision) -> list[str]:
    return [event.message for event in decision.events if event.reason is Reason.RUN_STARTED]


def test_a_run_by_hand_is_told_at_the_next_look_once():
    runs = [run(1, JobFlowPhase.SUCCEED), by_hand(10)]
    last = {"name": run(1).name, "cause": "schedule", "scheduledTime": "2026-11-24T09:01:00Z"}
    first = plan_schedule(template("  schedule: '0 * * * *'", {"lastRun": last}), runs=runs, now=at(4))
    assert started(first) == [f"started run {by_hand(10).name} by hand"]
    assert first.status.last_run.name == by_hand(10).name
    again = plan_schedule(template("  schedule: '0 * * * *'", first.status.to_wire()), runs=runs, now=at(5))
    assert started(again) == []


def test_every_run_since_last_run_is_told_oldest_first_with_the_due_run_told_once_after_them():
    runs = [run(1, JobFlowPhase.SUCCEED), by_hand(30), by_hand(10),
            replace(run(2), cause="event", scheduled=None, name="nightly-e1", trigger="ready", event_id="x",
                    event_source="/s", created=at(3, 50))]
    last = {"name": run(1).name, "cause": "schedule"}
    decision = plan_schedule(template("  schedule: '*/5 * * * *'", {"lastRun": last}), runs=runs, now=at(5, 3))
    assert started(decision) == [f"started run {by_hand(10).name} by hand", f"started run {by_hand(30).name} by hand",
                                 "started run nightly-e1 for event x from /s (trigger ready)",
                                 f"started run {decision.start.name} for the scheduled time 2026-11-24T09:05:00Z"]


def test_a_run_made_by_a_look_whose_status_write_was_lost_is_told_by_the_next():
    decision = plan_schedule(*EXAMPLES[Verdict.STARTED][:1], runs=[run(5)], now=at(5, 10))
    assert started(decision) == [f"started run {run(5).name} for the scheduled time 2026-11-24T09:05:00Z"]


def test_when_the_run_last_run_names_is_gone_only_the_newest_run_is_told():
    last = {"name": "nightly-pruned", "cause": "manual"}
    decision = plan_schedule(template("", {"lastRun": last}), runs=[run(1, JobFlowPhase.FAILED), by_hand(10)],
                             now=at(4))
    assert started(decision) == [f"started run {by_hand(10).name} by hand"]
    told = {"name": by_hand(10).name, "cause": "manual"}
    assert started(plan_schedule(template("", {"lastRun": told}), runs=[by_hand(10)], now=at(4))) == []


def test_runs_created_in_the_same_second_are_each_told_once_whatever_their_names():
    """The cluster's order: by hand, then by an event, then by the schedule, in one second of creation time (names
    sort the other way: ``nightly-2...`` < ``nightly-e...`` < ``nightly-m...``)."""
    def made(name: str, cause: str, **more) -> Run:
        return Run(name=name, phase=JobFlowPhase.RUNNING, created=at(3, 1), ended=None, cause=cause, scheduled=None,
                   **more)

    manual, scheduled = made("nightly-m1", "manual"), made("nightly-29", "schedule")
    event = made("nightly-e1", "event", trigger="ready", event_id="x", event_source="/s")
    spec = "  schedule: '0 * * * *'"
    first = plan_schedule(template(spec), runs=[manual], now=at(4))
    assert started(first) == ["started run nightly-m1 by hand"]
    then = plan_schedule(template(spec, first.status.to_wire()), runs=[event, manual], now=at(4))
    assert started(then) == ["started run nightly-e1 for event x from /s (trigger ready)"]
    after_start = {**then.status.to_wire(), "lastRun": {"name": "nightly-29", "cause": "schedule"},
                   "active": ["nightly-29", "nightly-e1", "nightly-m1"]}
    everyone = [scheduled, event, manual]
    assert started(plan_schedule(template(spec, after_start), runs=everyone, now=at(4))) == []
    ended = [replace(run, phase=JobFlowPhase.SUCCEED, ended=at(3, 30)) for run in everyone]
    assert started(plan_schedule(template(spec, {**after_start, "active": None}), runs=ended, now=at(4))) == []


def test_a_refused_run_stays_told_in_the_status_until_the_spec_changes_or_a_run_starts():
    from jobflow_core.schedules.firing import refused

    why = refused("nightly-29380865", 'strict decoding error: unknown field "spec.flows[1].dependOn"')
    told = {"lastScheduleTime": "2026-11-24T09:05:00Z", "observedGeneration": 1, "message": why}
    hourly = "  schedule: '0 * * * *'"
    assert plan_schedule(template(hourly, told), runs=[], now=at(7)).status.message == why  # a later look
    changed = template(hourly, told).model_copy(update={"metadata": template().metadata.model_copy(
        update={"generation": 2})})
    assert plan_schedule(changed, runs=[], now=at(7)).status.message is None  # the spec was fixed
    every_minute = plan_schedule(template("  schedule: '* * * * *'", told), runs=[], now=at(7, 5))
    assert every_minute.start is not None and every_minute.status.message is None  # a new run starts
