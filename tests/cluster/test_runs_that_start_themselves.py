"""JobFlowTemplates on the real control plane: scheduled runs, runs by event, and their CronJob rules.

The engine (handler and event source, in-process) runs with a clock the test moves: no test waits for a wall-clock
minute. A tick is what the PingSource sends every minute (a ``dev.knative.sources.ping`` event) or ``POST /resync``;
the runs are real JobFlows, run by the engine through Volcano's real job controller and scheduler on kwok nodes.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from devcluster.testing import LocalCluster
from engine import Engine, post, start_engine
from installation import kubectl
from jobflow_core.vocabulary.api import JOBFLOWTEMPLATE, RUN_OF
from kubectl_jobflow.cli import run as cli_run
from objects import apply, events_of, template, vcjobs

pytestmark = pytest.mark.cluster


class Clock:
    """The handler's clock: where the test puts it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def to_next_minute(self, *, second: int = 5, minutes: int = 1) -> datetime:
        """Move to ``second`` past the minute ``minutes`` after the current one; the scheduled minute it passed."""
        minute = self.now.replace(second=0, microsecond=0) + timedelta(minutes=minutes)
        self.now = minute + timedelta(seconds=second)
        return minute


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def scheduled(cluster: LocalCluster, namespace: str, clock: Clock) -> Iterator[Engine]:
    running = start_engine(cluster, namespace, handler_config={"CLOCK": clock, "NAMESPACES": (namespace,)})
    yield running
    running.stop()


def jobflowtemplate(name: str, schedule_fields: str, *, flow: str = "a", parameters: str = "[]") -> str:
    return f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {{name: {name}}}
spec:
{schedule_fields}
  jobFlow:
    spec:
      parameters: {parameters}
      flows: [{{name: {flow}}}]
"""


def tick(engine: Engine, *, event_id: str = "tick") -> None:
    """One PingSource event, as its adapter sends it."""
    status, body = post(engine.handler.url, b"", {
        "ce-specversion": "1.0", "ce-id": event_id, "ce-type": "dev.knative.sources.ping",
        "ce-source": "/apis/v1/namespaces/volcano-jobflow/pingsources/jobflow-resync"})
    assert status == 202, body


def the_template(cluster: LocalCluster, namespace: str, name: str) -> dict:
    return cluster.custom.get_namespaced_custom_object(JOBFLOWTEMPLATE.group, JOBFLOWTEMPLATE.version, namespace,
                                                       JOBFLOWTEMPLATE.plural, name)


def runs(cluster: LocalCluster, namespace: str, name: str) -> dict[str, dict]:
    listed = cluster.custom.list_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                                          label_selector=f"{RUN_OF}={name}")["items"]
    return {item["metadata"]["name"]: item for item in listed if not item["metadata"].get("deletionTimestamp")}


def run_name(name: str, minute: datetime) -> str:
    return f"{name}-{int(minute.timestamp()) // 60}"


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


JFT_COLUMNS = ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST-SCHEDULE", "NEXT-SCHEDULE", "LAST-RUN", "AGE"]


def kubectl_get_jft(cluster: LocalCluster, namespace: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """``kubectl get jft`` as a user reads it: the header, and each row's cells by column (cut where the header's
    words start, since a schedule has spaces)."""
    header, *rows = kubectl(cluster, "get", "jft", "-n", namespace).splitlines()
    names = header.split()
    starts = [header.index(f" {name} ") + 1 if index else 0 for index, name in enumerate(names[:-1])]
    starts.append(header.rindex(f" {names[-1]}") + 1)
    table = {}
    for row in rows:
        cells = [row[start:end].strip() for start, end in zip(starts, [*starts[1:], None])]
        table[cells[0]] = dict(zip(names, cells))
    return names, table


def test_a_schedule_in_a_time_zone_starts_one_run_per_scheduled_time_at_the_right_times(
        cluster: LocalCluster, namespace: str, scheduled: Engine, clock: Clock) -> None:
    apply(cluster, namespace, template("a"))
    # 30 minutes past every hour in Kolkata (+05:30) is every full hour in UTC.
    apply(cluster, namespace, jobflowtemplate("hourly", "  schedule: '30 * * * *'\n  timeZone: Asia/Kolkata"))
    next_hour = clock.now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    shown = cluster.wait_until("nextScheduleTime from the template's own event", lambda: (
        the_template(cluster, namespace, "hourly").get("status") or {}).get("nextScheduleTime"), timeout=30)
    assert shown == stamp(next_hour)

    clock.now = next_hour - timedelta(seconds=1)
    tick(scheduled)
    assert runs(cluster, namespace, "hourly") == {}

    clock.now = next_hour + timedelta(seconds=3)
    for _ in range(3):  # one tick delivered three times
        tick(scheduled, event_id="same-ping")
    first = run_name("hourly", next_hour)
    assert list(runs(cluster, namespace, "hourly")) == [first]
    run = runs(cluster, namespace, "hourly")[first]
    assert run["metadata"]["annotations"]["flow.volcano.sh/scheduled-time"] == stamp(next_hour)
    assert run["metadata"]["ownerReferences"][0]["kind"] == "JobFlowTemplate"
    status = the_template(cluster, namespace, "hourly")["status"]
    assert (status["lastScheduleTime"], status["nextScheduleTime"]) == (stamp(next_hour),
                                                                       stamp(next_hour + timedelta(hours=1)))
    assert status["lastRun"] == {"name": first, "cause": "schedule", "scheduledTime": stamp(next_hour)}
    cluster.wait_until("the run's vcjob", lambda: vcjobs(cluster, namespace).get(f"{first}-a"), timeout=30)

    clock.now = next_hour + timedelta(minutes=59)
    tick(scheduled)
    assert list(runs(cluster, namespace, "hourly")) == [first]
    clock.now = next_hour + timedelta(hours=1, seconds=2)
    tick(scheduled)
    second = run_name("hourly", next_hour + timedelta(hours=1))
    assert sorted(runs(cluster, namespace, "hourly")) == sorted([first, second])
    assert any(reason == "RunStarted" for _, reason, _ in events_of(cluster, namespace, "hourly"))


def test_a_changed_schedule_shows_its_next_time_at_once(cluster: LocalCluster, namespace: str, scheduled: Engine,
                                                        clock: Clock) -> None:
    apply(cluster, namespace, jobflowtemplate("daily", "  schedule: '0 3 * * *'"))
    cluster.wait_until("nextScheduleTime", lambda: (the_template(cluster, namespace, "daily").get("status") or {})
                       .get("nextScheduleTime"), timeout=30)
    cluster.custom.patch_namespaced_custom_object(JOBFLOWTEMPLATE.group, JOBFLOWTEMPLATE.version, namespace,
                                                  JOBFLOWTEMPLATE.plural, "daily", {"spec": {"schedule": "0 4 * * *"}})
    shown = cluster.wait_until("the new nextScheduleTime", lambda: (
        the_template(cluster, namespace, "daily").get("status") or {}).get("nextScheduleTime", "").endswith(
        "T04:00:00Z") and the_template(cluster, namespace, "daily")["status"]["nextScheduleTime"], timeout=30)
    assert shown.endswith("T04:00:00Z")


def test_forbid_skips_while_a_run_is_active(cluster: LocalCluster, namespace: str, scheduled: Engine,
                                            clock: Clock) -> None:
    apply(cluster, namespace, template("a", keep_running=True))
    apply(cluster, namespace, jobflowtemplate("once", "  schedule: '* * * * *'\n  concurrencyPolicy: Forbid"))
    first_minute = clock.to_next_minute()
    tick(scheduled)
    first = run_name("once", first_minute)
    cluster.wait_until("the first run running", lambda: (
        (runs(cluster, namespace, "once").get(first, {}).get("status") or {}).get("state", {}).get("phase")
        == "Running"), timeout=60)
    clock.to_next_minute()
    tick(scheduled)
    assert list(runs(cluster, namespace, "once")) == [first]
    status = the_template(cluster, namespace, "once")["status"]
    assert "still active (concurrencyPolicy Forbid)" in status["message"] and status["active"] == [first]
    header, table = kubectl_get_jft(cluster, namespace)
    assert header == JFT_COLUMNS  # ACTIVE is a count, not the JSON list of names; LAST-RUN shows by default
    row = table["once"]
    assert (row["SCHEDULE"], row["ACTIVE"], row["LAST-RUN"]) == ("* * * * *", "1", first)
    assert row["NEXT-SCHEDULE"] == status["nextScheduleTime"]


def test_replace_stops_the_active_run_and_starts_the_new_one(cluster: LocalCluster, namespace: str,
                                                             scheduled: Engine, clock: Clock) -> None:
    apply(cluster, namespace, template("a", keep_running=True))
    apply(cluster, namespace, jobflowtemplate("latest", "  schedule: '* * * * *'\n  concurrencyPolicy: Replace"))
    first_minute = clock.to_next_minute()
    tick(scheduled)
    first = run_name("latest", first_minute)
    cluster.wait_until("the first run's vcjob", lambda: vcjobs(cluster, namespace).get(f"{first}-a"), timeout=30)
    second_minute = clock.to_next_minute()
    tick(scheduled)
    second = run_name("latest", second_minute)
    assert list(runs(cluster, namespace, "latest")) == [second]
    cluster.wait_until("the replaced run's vcjob gone (garbage-collected with its JobFlow)",
                       lambda: f"{first}-a" not in vcjobs(cluster, namespace), timeout=60)
    cluster.wait_until("the new run's vcjob", lambda: vcjobs(cluster, namespace).get(f"{second}-a"), timeout=30)
    assert any(reason == "RunReplaced" for _, reason, _ in events_of(cluster, namespace, "latest"))


@pytest.mark.parametrize("deadline, starts", [(90, True), (20, False)])
def test_a_handler_down_for_three_minutes_catches_up_within_the_deadline(
        cluster: LocalCluster, namespace: str, clock: Clock, deadline: int, starts: bool) -> None:
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, jobflowtemplate(
        "catchup", f"  schedule: '* * * * *'\n  startingDeadlineSeconds: {deadline}"))
    engine = start_engine(cluster, namespace, handler_config={"CLOCK": clock, "NAMESPACES": (namespace,)})
    try:
        first_minute = clock.to_next_minute()
        tick(engine)
    finally:
        engine.stop()  # the handler is down: three scheduled minutes pass without a tick
    last_minute = clock.to_next_minute(minutes=3, second=30)
    engine = start_engine(cluster, namespace, handler_config={"CLOCK": clock, "NAMESPACES": (namespace,)})
    try:
        tick(engine)
        made = sorted(runs(cluster, namespace, "catchup"))
        status = the_template(cluster, namespace, "catchup")["status"]
    finally:
        engine.stop()
    if starts:  # only the most recent missed time starts; the two before it are counted as missed
        assert made == sorted([run_name("catchup", first_minute), run_name("catchup", last_minute)])
        assert status["missedRuns"] == 2 and status["lastScheduleTime"] == stamp(last_minute)
    else:  # 30 s late is beyond a 20 s deadline: no run, all three counted
        assert made == [run_name("catchup", first_minute)]
        assert status["missedRuns"] == 3 and status["lastMissedTime"] == stamp(last_minute)
        assert any(reason == "MissSchedule" for _, reason, _ in events_of(cluster, namespace, "catchup"))


def test_history_limits_delete_the_oldest_finished_runs(cluster: LocalCluster, namespace: str, scheduled: Engine,
                                                        clock: Clock) -> None:
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, jobflowtemplate("pruned", "  schedule: '* * * * *'\n  successfulJobsHistoryLimit: 1"))
    made = []
    for _ in range(3):
        made.append(run_name("pruned", clock.to_next_minute()))
        tick(scheduled)
        cluster.wait_until(f"run {made[-1]} Succeed", lambda: (
            (runs(cluster, namespace, "pruned").get(made[-1], {}).get("status") or {}).get("state", {}).get("phase")
            == "Succeed"), timeout=60)
    cluster.wait_until("only the newest run kept", lambda: list(runs(cluster, namespace, "pruned")) == [made[-1]],
                       timeout=30)
    status = the_template(cluster, namespace, "pruned")["status"]
    assert "active" not in status and status["lastSuccessfulTime"]
    _, table = kubectl_get_jft(cluster, namespace)
    assert (table["pruned"]["ACTIVE"], table["pruned"]["LAST-RUN"]) == ("0", made[-1])


def test_suspend_stops_scheduled_runs(cluster: LocalCluster, namespace: str, scheduled: Engine,
                                      clock: Clock) -> None:
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, jobflowtemplate("paused", "  schedule: '* * * * *'\n  suspend: true"))
    for _ in range(2):
        clock.to_next_minute()
        tick(scheduled)
    assert runs(cluster, namespace, "paused") == {}
    status = the_template(cluster, namespace, "paused")["status"]
    assert "nextScheduleTime" not in status and status["message"].startswith("suspended")


def test_suspend_and_resume_jft_by_the_command_line_hold_the_schedule_then_start_the_time_it_missed(
        cluster: LocalCluster, namespace: str, scheduled: Engine, clock: Clock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("kubectl_jobflow.control.utc_now", clock)  # the command reads the engine's (moved) clock
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, jobflowtemplate("held", "  schedule: '* * * * *'"))
    first = run_name("held", clock.to_next_minute())
    tick(scheduled)
    assert list(runs(cluster, namespace, "held")) == [first]

    assert jobflow_cli(cluster, "suspend", "jft/held", "-n", namespace) == (0, (
        f"Suspended JobFlowTemplate: {namespace}/held: no scheduled run starts until it is resumed (its active runs "
        "go on; runs by event or by hand still start)\n"), "")
    assert the_template(cluster, namespace, "held")["spec"]["suspend"] is True
    missed_minute = clock.to_next_minute()
    tick(scheduled)
    assert list(runs(cluster, namespace, "held")) == [first]
    assert the_template(cluster, namespace, "held")["status"]["message"].startswith("suspended")

    assert jobflow_cli(cluster, "resume", "jft/held", "-n", namespace) == (0, (
        f"Resumed JobFlowTemplate: {namespace}/held: the run for {stamp(missed_minute)}, the last scheduled time "
        "that passed while it was suspended, starts at the engine's next look; then the next scheduled time is "
        f"{stamp(missed_minute + timedelta(minutes=1))}\n"), "")
    assert the_template(cluster, namespace, "held")["spec"]["suspend"] is False
    tick(scheduled)
    assert sorted(runs(cluster, namespace, "held")) == sorted([first, run_name("held", missed_minute)])
    status = the_template(cluster, namespace, "held")["status"]
    assert status["lastScheduleTime"] == stamp(missed_minute)
    assert status["nextScheduleTime"] == stamp(missed_minute + timedelta(minutes=1))


def send_event(engine: Engine, *, event_id: str, data: str) -> None:
    status, body = post(engine.handler.url + "trigger", data.encode(), {
        "ce-specversion": "1.0", "ce-id": event_id, "ce-type": "com.example.data.ready",
        "ce-source": "/storage/landing", "content-type": "application/json"})
    assert status == 202, body


def test_a_cloudevent_starts_a_run_whose_vcjobs_carry_its_data_and_the_same_id_twice_starts_one(
        cluster: LocalCluster, namespace: str, scheduled: Engine) -> None:
    apply(cluster, namespace, template("load"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: etl}
spec:
  triggers:
  - name: data-ready
    type: com.example.data.ready
    condition: has(data.date)
    parameters: {date: data.date}
  jobFlow:
    spec:
      parameters: [{name: date, value: none}]
      flows:
      - name: load
        patch:
          jobSpec:
            tasks:
            - name: main
              template:
                metadata:
                  annotations: {example.com/date: "{{params.date}}"}
""")
    for _ in range(2):
        send_event(scheduled, event_id="landing-42", data='{"date": "2026-11-24"}')
    [name] = runs(cluster, namespace, "etl")
    job = cluster.wait_until("the run's vcjob", lambda: vcjobs(cluster, namespace).get(f"{name}-load"), timeout=30)
    assert job["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["example.com/date"] == "2026-11-24"
    annotations = runs(cluster, namespace, "etl")[name]["metadata"]["annotations"]
    assert (annotations["flow.volcano.sh/event-id"], annotations["flow.volcano.sh/trigger"]) == ("landing-42",
                                                                                                   "data-ready")
    send_event(scheduled, event_id="no-date", data='{"size": 3}')  # the condition is false: no run
    assert list(runs(cluster, namespace, "etl")) == [name]


def jobflow_cli(cluster: LocalCluster, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_run([*argv, "--kubeconfig", str(cluster.state.kubeconfig)], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_a_run_by_hand_and_the_history_that_says_what_started_each_run(
        cluster: LocalCluster, namespace: str, scheduled: Engine, clock: Clock) -> None:
    apply(cluster, namespace, template("load"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: etl}
spec:
  schedule: '0 * * * *'
  triggers: [{name: data-ready, type: com.example.data.ready, parameters: {date: data.date}}]
  jobFlow:
    spec:
      parameters: [{name: date, value: none}]
      flows: [{name: load}]
""")
    code, out, err = jobflow_cli(cluster, "run", "etl", "-n", namespace, "-p", "date=2026-11-25")
    assert code == 0, err
    [manual] = runs(cluster, namespace, "etl")
    assert out.startswith(f"Started run: {namespace}/{manual} (JobFlowTemplate etl)")
    assert runs(cluster, namespace, "etl")[manual]["spec"]["parameters"] == [{"name": "date", "value": "2026-11-25"}]
    code, _, err = jobflow_cli(cluster, "run", "etl", "-n", namespace, "-p", "lr=1")
    assert code == 1 and "declares no parameter lr (it declares: date)" in err

    send_event(scheduled, event_id="landing-7", data='{"date": "2026-11-24"}')
    hour = clock.now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    clock.now = hour + timedelta(seconds=2)
    tick(scheduled)
    cluster.wait_until("three runs Succeed", lambda: all(
        (run.get("status") or {}).get("state", {}).get("phase") == "Succeed"
        for run in runs(cluster, namespace, "etl").values()) and len(runs(cluster, namespace, "etl")) == 3,
        timeout=60)

    code, out, err = jobflow_cli(cluster, "history", "etl", "-n", namespace)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["RUN", "STARTED-BY", "PHASE", "START", "DURATION"]
    started_by = sorted(" ".join(line.split()[1:-3]) for line in lines[1:])
    assert started_by == sorted(["manual", "event landing-7 (data-ready)", f"schedule {stamp(hour)}"])
    assert all(line.split()[-3] == "Succeed" for line in lines[1:])
    told = [message for _, reason, message in events_of(cluster, namespace, "etl") if reason == "RunStarted"]
    assert sorted(message.split()[2] for message in told) == sorted(runs(cluster, namespace, "etl"))  # each once
    assert f"started run {manual} by hand" in told


def test_our_event_source_wakes_the_template_at_its_next_time_with_no_tick(
        cluster: LocalCluster, namespace: str, scheduled: Engine, clock: Clock) -> None:
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, jobflowtemplate("punctual", "  schedule: '* * * * *'"))
    shown = cluster.wait_until("nextScheduleTime", lambda: (
        the_template(cluster, namespace, "punctual").get("status") or {}).get("nextScheduleTime"), timeout=30)
    minute = datetime.fromisoformat(shown.replace("Z", "+00:00"))
    assert runs(cluster, namespace, "punctual") == {}
    clock.now = minute + timedelta(seconds=2)  # the time comes; nobody sends a tick
    cluster.wait_until("the run started by the event source's wake-up", lambda: list(
        runs(cluster, namespace, "punctual")) == [run_name("punctual", minute)], timeout=15)


def test_a_scheduled_run_whose_template_holds_an_unknown_field_is_refused_visibly_never_run_pruned(
        cluster: LocalCluster, namespace: str, scheduled: Engine, clock: Clock) -> None:
    """Stored without the webhook (a JobFlowTemplate's ``jobFlow.spec`` is kept as it is), the typo reaches the
    engine, whose run asks for strict fields: the API server refuses it, and the template says so."""
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, jobflowtemplate("typo", "  schedule: '* * * * *'").replace(
        "flows: [{name: a}]", "flows: [{name: a}, {name: b, dependOn: {targets: [a]}}]"))
    minute = clock.to_next_minute()
    tick(scheduled)

    assert runs(cluster, namespace, "typo") == {}
    status = the_template(cluster, namespace, "typo")["status"]
    message = status["message"]
    assert message.startswith(f"the API server refused run {run_name('typo', minute)}: ")
    assert 'unknown field "spec.flows[1].dependOn"' in message and message.endswith("; fix spec.jobFlow")
    assert "lastRun" not in status  # the refused run never was
    [(kind, said)] = [(kind, said) for kind, reason, said in events_of(cluster, namespace, "typo")
                      if reason == "RunRejected"]
    assert kind == "Warning" and said == message
    tick(scheduled)  # a later look, before the next scheduled time: the refusal stands
    assert the_template(cluster, namespace, "typo")["status"]["message"] == message
