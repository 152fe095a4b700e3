"""The shell of JobFlowTemplate runs, in memory: ticks, a template's own event, POST /trigger, and a run's end."""

from datetime import datetime, timedelta

import yaml

from handlers import create_app
from handlers.jobflows import Reconciler
from jobflow_core.models import JobFlowTemplate
from jobflow_core.schedules.runs import Cause, Start, manual_run_name, run_manifest
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, MEMO_CACHE, VCJOB
from memory_kube import T0, MemoryKube
from scenario import TEMPLATE_SPEC

TEMPLATE = {
    "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
    "metadata": {"name": "etl", "namespace": "default"},
    "spec": {"schedule": "* * * * *", "startingDeadlineSeconds": 30,
             "triggers": [{"name": "ready", "type": "com.example.ready", "parameters": {"date": "data.date"}}],
             "jobFlow": {"spec": {"parameters": [{"name": "date", "value": "none"}], "flows": [{"name": "a"}]}}},
}
PING = {"ce-specversion": "1.0", "ce-id": "p", "ce-type": "dev.knative.sources.ping", "ce-source": "/ping"}


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def setup():
    kube, clock = MemoryKube(), Clock(T0)
    kube.put(TEMPLATE)
    return kube, clock, create_app({"KUBE": kube, "CLOCK": clock}).test_client()


def runs(kube: MemoryKube) -> list[str]:
    return kube.names(JOBFLOW, "default")


def test_a_tick_starts_the_due_run_once_however_often_it_comes():
    kube, clock, app = setup()
    clock.now = T0.replace(second=0) + timedelta(minutes=1, seconds=5)
    for _ in range(3):
        assert app.post("/", headers=PING).status_code == 202
    assert runs(kube) == [f"etl-{int((clock.now - timedelta(seconds=5)).timestamp()) // 60}"]
    status = kube.stored(JOBFLOWTEMPLATE, "default", "etl")["status"]
    assert status["active"] == runs(kube) and status["lastRun"]["cause"] == "schedule"
    assert status["activeRuns"] == 1


def test_the_templates_own_event_writes_its_next_time_and_a_late_tick_starts_nothing():
    kube, clock, app = setup()
    reply = app.post("/", headers={**PING, "ce-type": "dev.knative.apiserver.ref.add", "ce-kind": "JobFlowTemplate",
                                   "ce-apiversion": "flow.volcano.sh/v1alpha1", "ce-name": "etl",
                                   "ce-namespace": "default"})
    assert reply.status_code == 202
    assert kube.stored(JOBFLOWTEMPLATE, "default", "etl")["status"]["nextScheduleTime"]
    clock.now = T0.replace(second=0) + timedelta(minutes=1, seconds=45)  # 45 s late, the deadline is 30 s
    app.post("/", headers=PING)
    assert runs(kube) == [] and kube.stored(JOBFLOWTEMPLATE, "default", "etl")["status"]["missedRuns"] == 1
    assert [reason for _, _, reason, _ in kube.events] == ["MissSchedule"]


def test_post_trigger_starts_one_run_per_event_id_and_answers_202_to_an_event_nobody_wants():
    kube, _, app = setup()
    event = {"ce-specversion": "1.0", "ce-id": "e1", "ce-type": "com.example.ready", "ce-source": "/s",
             "content-type": "application/json"}
    for _ in range(2):
        assert app.post("/trigger", headers=event, data=b'{"date": "2026-11-24"}').status_code == 202
    [name] = runs(kube)
    assert kube.stored(JOBFLOW, "default", name)["spec"]["parameters"] == [{"name": "date", "value": "2026-11-24"}]
    status = kube.stored(JOBFLOWTEMPLATE, "default", "etl")["status"]
    assert (status["active"], status["activeRuns"], status["lastRun"]["name"]) == ([name], 1, name)
    assert app.post("/trigger", headers={**event, "ce-type": "other"}, data=b"{}").status_code == 202
    assert runs(kube) == [name]
    app.post("/", headers=PING)  # the next look finds the run told already
    assert [(reason, message) for on, _, reason, message in kube.events if on == "etl"] == [
        ("RunStarted", f"started run {name} for event e1 from /s (trigger ready)")]


def test_post_trigger_refuses_what_is_not_a_cloudevent_with_400():
    _, _, app = setup()
    reply = app.post("/trigger", data=b"{}")
    assert reply.status_code == 400 and "not a valid CloudEvent" in reply.get_json()["error"]


def test_an_event_the_trigger_cannot_read_starts_nothing_and_warns_on_the_template():
    kube, _, app = setup()
    event = {"ce-specversion": "1.0", "ce-id": "e2", "ce-type": "com.example.ready", "ce-source": "/s",
             "content-type": "application/json"}
    assert app.post("/trigger", headers=event, data=b'{"size": 1}').status_code == 202
    assert runs(kube) == []
    [(name, kind, reason, message)] = kube.events
    assert (name, kind, reason) == ("etl", "Warning", "RunRejected") and "parameter date = 'data.date'" in message


def test_a_tick_whose_status_write_loses_a_race_reads_again_and_finds_the_run_it_started():
    """The template's attempts are those of the one write loop (handlers.writes.rewrite): the next attempt lists the
    run the lost one created and records it, instead of starting another."""
    kube, clock, app = setup()
    clock.now = T0.replace(second=0) + timedelta(minutes=1, seconds=5)
    real, races = kube.replace_jobflowtemplate_status, iter([True])

    def other_writer_first(template: dict) -> dict:
        if next(races, False):
            kube.put(kube.stored(JOBFLOWTEMPLATE, "default", "etl"))  # another handler wrote meanwhile
        return real(template)

    kube.replace_jobflowtemplate_status = other_writer_first
    assert app.post("/", headers=PING).status_code == 202
    [run] = runs(kube)
    status = kube.stored(JOBFLOWTEMPLATE, "default", "etl")["status"]
    assert status["active"] == [run] and status["lastRun"]["name"] == run
    assert next(races, None) is None  # the race was lost once
    assert [reason for on, _, reason, _ in kube.events if on == "etl"] == ["RunStarted"]  # by the attempt that wrote


def test_a_run_by_hand_is_told_on_the_template_at_its_next_look_once():
    """``kubectl jobflow run`` creates the JobFlow itself and records nothing: the template's next look tells it."""
    kube, clock, app = setup()
    template = JobFlowTemplate.model_validate(kube.stored(JOBFLOWTEMPLATE, "default", "etl"))
    start = Start(name=manual_run_name("etl", T0), cause=Cause.MANUAL)
    kube.create_jobflow(run_manifest(template, start))
    for _ in range(2):
        assert app.post("/", headers=PING).status_code == 202
    assert [(kind, reason, message) for on, kind, reason, message in kube.events if on == "etl"] == [
        ("Normal", "RunStarted", f"started run {start.name} by hand")]
    assert kube.stored(JOBFLOWTEMPLATE, "default", "etl")["status"]["lastRun"]["name"] == start.name


def test_two_scheduled_runs_share_a_memoized_step_and_the_second_reuses_the_first():
    """A JobFlowTemplate's runs differ in name, labels, annotations (scheduled time) and owner: none of it is in
    the memoize key, so the next tick's run reuses the step the previous one ran (jobflow_core.flows.memo)."""
    kube, clock = MemoryKube(), Clock(T0)
    memoized = {"flows": [{"name": "a", "memoize": {}}, {"name": "b", "dependsOn": {"targets": ["a"]}}]}
    kube.put(TEMPLATE | {"spec": TEMPLATE["spec"] | {"jobFlow": {"spec": memoized}}})
    for name in ("a", "b"):
        kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
                  "metadata": {"name": name, "namespace": "default"}, "spec": yaml.safe_load(TEMPLATE_SPEC)})
    app, reconciler = create_app({"KUBE": kube, "CLOCK": clock}).test_client(), Reconciler(kube, clock=clock)

    clock.now = T0.replace(second=0) + timedelta(minutes=1, seconds=5)
    app.post("/", headers=PING)
    [first] = runs(kube)
    reconciler.jobflow("default", first)
    kube.pods["default"] = [{"metadata": {"name": f"{first}-a-nginx-0", "labels": {"volcano.sh/job-name": f"{first}-a"}},
                             "status": {"containerStatuses": [{"state": {"terminated": {"message": "path=/d/1"}}}]}}]
    kube.move("default", f"{first}-a", "Completed")
    reconciler.jobflow("default", first)
    assert list(kube.get_configmap("default", MEMO_CACHE)["data"])  # stored once it Completed

    clock.now += timedelta(minutes=1)
    app.post("/", headers=PING)
    [second] = [name for name in runs(kube) if name != first]
    reconciler.jobflow("default", second)
    assert kube.stored(VCJOB, "default", f"{second}-a") is None
    assert kube.stored(VCJOB, "default", f"{second}-b") is not None
    [record] = [r for r in kube.stored(JOBFLOW, "default", second)["status"]["jobStatusList"]
                if r["name"] == f"{second}-a"]
    assert (record["reason"], record["cachedFrom"], record["result"]) == ("Cached", f"default/{first}-a", "path=/d/1")


def test_an_event_run_after_a_run_by_hand_tells_both_at_once_in_the_order_they_started():
    kube, _, app = setup()
    template = JobFlowTemplate.model_validate(kube.stored(JOBFLOWTEMPLATE, "default", "etl"))
    by_hand = Start(name=manual_run_name("etl", T0), cause=Cause.MANUAL)
    kube.create_jobflow(run_manifest(template, by_hand))
    event = {"ce-specversion": "1.0", "ce-id": "e1", "ce-type": "com.example.ready", "ce-source": "/s",
             "content-type": "application/json"}
    assert app.post("/trigger", headers=event, data=b'{"date": "2026-11-24"}').status_code == 202
    [by_event] = [name for name in runs(kube) if name != by_hand.name]
    assert [message for on, _, reason, message in kube.events if on == "etl"] == [
        f"started run {by_hand.name} by hand", f"started run {by_event} for event e1 from /s (trigger ready)"]
