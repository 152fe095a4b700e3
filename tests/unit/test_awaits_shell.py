"""A JobFlow that waits for another, through the shell (``handlers``) on the in-memory API server: the waiter labels
itself, the awaited JobFlow's end wakes it (no resync), its binding is recorded once and outlives the awaited run, and
repeated, reordered and racing reconciles start its flow once."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from handlers.dispatch import Dispatcher
from handlers.jobflows import Reconciler
from jobflow_core.dag.awaits import WAITS_FOR_JOBFLOW, WAITS_FOR_TEMPLATE
from jobflow_core.vocabulary.api import JOBFLOW, RUN_OF, VCJOB
from memory_kube import MemoryKube
from scenario import TEMPLATE_SPEC

NS = "default"


def jobflow(name: str, *, flow: str, depends: dict | None = None, labels: dict | None = None) -> dict:
    spec: dict = {"flows": [{"name": flow}]}
    if depends is not None:
        spec["dependsOn"] = depends
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {}}, "spec": spec}


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    for name in ("train", "evaluate"):
        kube.put({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
                  "metadata": {"name": name, "namespace": NS}, "spec": yaml.safe_load(TEMPLATE_SPEC)})
    return kube


def handler(kube: MemoryKube) -> Dispatcher:
    return Dispatcher(Reconciler(kube, clock=lambda: kube.now))


def status(kube: MemoryKube, name: str) -> dict:
    return (kube.stored(JOBFLOW, NS, name) or {}).get("status") or {}


def awaited(kube: MemoryKube, name: str) -> list[dict]:
    return status(kube, name).get("awaitedJobFlows") or []


def finish(kube: MemoryKube, dispatcher: Dispatcher, job: str, phase: str = "Completed"):
    kube.move(NS, job, phase)
    return dispatcher.vcjob(NS, job, controller=job.rsplit("-", 1)[0], deleted=False)


def test_created_before_it_the_waiter_starts_from_the_awaited_end_without_a_resync(kube):
    dispatcher = handler(kube)
    kube.put(jobflow("eval", flow="evaluate", depends={"jobFlows": [{"name": "nightly"}]}))
    dispatcher.jobflow(NS, "eval")
    waiting = status(kube, "eval")["waitingFlows"][0]
    assert waiting["waitingFor"] == ["JobFlow/nightly"]
    assert 'JobFlow "nightly" to be created' in waiting["message"]
    assert kube.stored(JOBFLOW, NS, "eval")["metadata"]["labels"] == {WAITS_FOR_JOBFLOW + "nightly": "true"}

    kube.put(jobflow("nightly", flow="train"))
    dispatcher.jobflow(NS, "nightly")
    assert kube.stored(VCJOB, NS, "eval-evaluate") is None
    finish(kube, dispatcher, "nightly-train")  # nightly Succeed: its reconcile wakes eval

    assert kube.stored(VCJOB, NS, "eval-evaluate") is not None
    [entry] = awaited(kube, "eval")
    uid = kube.stored(JOBFLOW, NS, "nightly")["metadata"]["uid"]
    assert (entry["name"], entry["jobFlow"], entry["uid"], entry["phase"]) == ("JobFlow/nightly", "nightly", uid,
                                                                               "Succeed")
    assert not kube.stored(JOBFLOW, NS, "eval")["metadata"]["labels"], "ended: nothing left to wake it for"


def test_a_failed_awaited_jobflow_fails_the_waiter_unless_it_waits_for_any_end(kube):
    dispatcher = handler(kube)
    kube.put(jobflow("strict", flow="evaluate", depends={"jobFlows": [{"name": "nightly"}]}))
    kube.put(jobflow("any", flow="evaluate", depends={"jobFlows": [{"name": "nightly"}], "outcome": "Finished"}))
    kube.put(jobflow("nightly", flow="train"))
    for name in ("strict", "any", "nightly"):
        dispatcher.jobflow(NS, name)
    finish(kube, dispatcher, "nightly-train", "Failed")

    assert status(kube, "strict")["state"]["phase"] == "Failed"
    assert status(kube, "strict")["state"]["reason"] == "DependencyFailed"
    assert kube.stored(VCJOB, NS, "strict-evaluate") is None
    assert kube.stored(VCJOB, NS, "any-evaluate") is not None


def test_a_template_dependency_binds_the_newest_run_within_its_window_and_keeps_it(kube):
    dispatcher = handler(kube)
    kube.put(jobflow("nightly-1", flow="train", labels={RUN_OF: "nightly"}))  # yesterday's
    dispatcher.jobflow(NS, "nightly-1")
    finish(kube, dispatcher, "nightly-1-train")
    kube.now += timedelta(hours=20)
    kube.put(jobflow("eval", flow="evaluate", depends={"jobFlows": [{"template": "nightly", "withinSeconds": 7200}]}))
    dispatcher.jobflow(NS, "eval")
    assert kube.stored(VCJOB, NS, "eval-evaluate") is None, "yesterday's run is outside the window"
    assert kube.stored(JOBFLOW, NS, "eval")["metadata"]["labels"] == {WAITS_FOR_TEMPLATE + "nightly": "true"}

    kube.put(jobflow("nightly-2", flow="train", labels={RUN_OF: "nightly"}))
    dispatcher.jobflow(NS, "nightly-2")
    finish(kube, dispatcher, "nightly-2-train")  # its end wakes the template's waiters, which bind it
    [entry] = awaited(kube, "eval")
    assert (entry["jobFlow"], entry["phase"]) == ("nightly-2", "Succeed")
    assert kube.stored(VCJOB, NS, "eval-evaluate") is not None

    kube.remove(JOBFLOW, NS, "nightly-2")
    dispatcher.jobflow(NS, "nightly-2")  # its deletion event
    for _ in range(3):
        dispatcher.jobflow(NS, "eval")
    assert awaited(kube, "eval") == [entry], "the binding and the recorded end outlive the run"


def test_a_bound_run_deleted_before_it_ended_and_a_timeout_fail_the_dependency(kube):
    dispatcher = handler(kube)
    kube.put(jobflow("nightly", flow="train"))
    kube.put(jobflow("eval", flow="evaluate", depends={"jobFlows": [{"name": "nightly"}]}))
    kube.put(jobflow("late", flow="evaluate", depends={"jobFlows": [{"name": "never", "timeoutSeconds": 60}]}))
    for name in ("nightly", "eval", "late"):
        dispatcher.jobflow(NS, name)
    kube.remove(JOBFLOW, NS, "nightly")
    dispatcher.jobflow(NS, "nightly")
    assert awaited(kube, "eval")[0]["reason"] == "Deleted"
    assert status(kube, "eval")["state"]["phase"] == "Failed"

    assert status(kube, "late")["recheckSeconds"] > 0
    kube.now += timedelta(seconds=61)
    dispatcher.resync()
    assert awaited(kube, "late")[0]["reason"] == "TimedOut"
    assert status(kube, "late")["state"]["reason"] == "DependencyFailed"


def test_repeated_and_reordered_reconciles_start_the_waiter_once_on_one_binding(kube):
    first, second, third = handler(kube), handler(kube), handler(kube)
    kube.put(jobflow("nightly-1", flow="train", labels={RUN_OF: "nightly"}))
    kube.put(jobflow("eval", flow="evaluate", depends={"jobFlows": [{"template": "nightly"}]}))
    first.jobflow(NS, "eval")
    bound = awaited(kube, "eval")[0]
    kube.put(jobflow("nightly-2", flow="train", labels={RUN_OF: "nightly"}))  # newer: never chosen now
    for dispatcher in (second, third, first):
        dispatcher.jobflow(NS, "eval")
        dispatcher.jobflow(NS, "nightly-1")
    assert awaited(kube, "eval")[0]["uid"] == bound["uid"]
    finish(kube, second, "nightly-1-train")
    created = kube.stored(VCJOB, NS, "eval-evaluate")
    for dispatcher in (third, first, second):
        dispatcher.jobflow(NS, "eval")
        dispatcher.jobflow(NS, "nightly-1")
    assert kube.stored(VCJOB, NS, "eval-evaluate")["metadata"]["uid"] == created["metadata"]["uid"]
    assert awaited(kube, "eval")[0]["jobFlow"] == "nightly-1"


def test_two_jobflows_bound_to_each_other_both_fail_and_the_first_to_see_it_says_cycle(kube):
    dispatcher = handler(kube)
    kube.put(jobflow("a", flow="train", depends={"jobFlows": [{"name": "b"}]}))
    kube.put(jobflow("b", flow="evaluate", depends={"jobFlows": [{"name": "a"}]}))
    for _ in range(2):
        dispatcher.jobflow(NS, "a")
        dispatcher.jobflow(NS, "b")
    entries = sorted((awaited(kube, name)[0].get("reason", ""), awaited(kube, name)[0].get("phase", ""))
                     for name in ("a", "b"))
    assert entries == [("", "Failed"), ("Cycle", "")], "one sees the cycle, the other sees it fail"
    assert {status(kube, name)["state"]["phase"] for name in ("a", "b")} == {"Failed"}
    assert kube.stored(VCJOB, NS, "a-train") is None and kube.stored(VCJOB, NS, "b-evaluate") is None


def test_a_history_limit_does_not_prune_a_run_a_jobflow_waits_for_before_it_saw_the_end(kube):
    from jobflow_core.vocabulary.api import JOBFLOWTEMPLATE

    dispatcher = handler(kube)
    kube.put({"apiVersion": JOBFLOWTEMPLATE.api_version, "kind": JOBFLOWTEMPLATE.kind,
              "metadata": {"name": "nightly", "namespace": NS},
              "spec": {"successfulJobsHistoryLimit": 0, "jobFlow": {"spec": {"flows": [{"name": "train"}]}}}})
    kube.put(jobflow("nightly-1", flow="train", labels={RUN_OF: "nightly"}))
    kube.put(jobflow("eval", flow="evaluate", depends={"jobFlows": [{"name": "nightly-1"}]}))
    dispatcher.hand_back = True  # as under our event source: the waiter is handed back, reconciled later
    dispatcher.jobflow(NS, "eval")
    dispatcher.jobflow(NS, "nightly-1")
    finish(kube, dispatcher, "nightly-1-train")  # its end looks at the template, whose limit of 0 prunes it
    assert kube.stored(JOBFLOW, NS, "nightly-1") is not None, "eval has not seen it end yet"
    dispatcher.jobflow(NS, "eval")  # the handed-back event
    assert awaited(kube, "eval")[0]["phase"] == "Succeed"
    dispatcher.jobflowtemplate(NS, "nightly")  # the next look prunes it
    assert kube.stored(JOBFLOW, NS, "nightly-1") is None


def test_a_resync_wakes_a_waiter_it_reconciled_before_the_jobflow_it_waits_for_ended(kube):
    dispatcher = handler(kube)
    kube.put(jobflow("a-deploy", flow="evaluate", depends={"jobFlows": [{"name": "z-build"}]}))
    kube.put(jobflow("z-build", flow="train"))
    dispatcher.resync()
    kube.move(NS, "z-build-train", "Completed")  # its event is lost: the next resync finds it
    dispatcher.resync()  # lists a-deploy first (still waiting), then ends z-build, which wakes a-deploy
    assert kube.stored(VCJOB, NS, "a-deploy-evaluate") is not None


def test_a_history_limit_keeps_a_run_that_an_unbound_waiter_may_still_bind(kube):
    from jobflow_core.vocabulary.api import JOBFLOWTEMPLATE

    dispatcher = handler(kube)
    dispatcher.hand_back = True
    kube.put({"apiVersion": JOBFLOWTEMPLATE.api_version, "kind": JOBFLOWTEMPLATE.kind,
              "metadata": {"name": "nightly", "namespace": NS},
              "spec": {"successfulJobsHistoryLimit": 0, "jobFlow": {"spec": {"flows": [{"name": "train"}]}}}})
    kube.put(jobflow("eval", flow="evaluate", depends={"jobFlows": [{"template": "nightly", "withinSeconds": 600}]}))
    dispatcher.jobflow(NS, "eval")  # no run yet: unbound
    kube.put(jobflow("nightly-1", flow="train", labels={RUN_OF: "nightly"}))
    dispatcher.jobflow(NS, "nightly-1")
    finish(kube, dispatcher, "nightly-1-train")
    assert kube.stored(JOBFLOW, NS, "nightly-1") is not None, "eval may bind it: kept"
    dispatcher.jobflow(NS, "eval")
    assert awaited(kube, "eval")[0]["jobFlow"] == "nightly-1"
    assert kube.stored(VCJOB, NS, "eval-evaluate") is not None
    dispatcher.jobflowtemplate(NS, "nightly")
    assert kube.stored(JOBFLOW, NS, "nightly-1") is None, "seen to end: pruned at the next look"


def test_a_plan_that_adds_a_wait_label_reads_what_it_waits_for_again_after_the_label_is_written(kube):
    kube.put(jobflow("eval", flow="evaluate", depends={"jobFlows": [{"name": "nightly"}]}))
    outcome = Reconciler(kube, clock=lambda: kube.now).jobflow(NS, "eval")
    assert outcome.attempts == 2 and outcome.status_written
    again = Reconciler(kube, clock=lambda: kube.now).jobflow(NS, "eval")
    assert again.attempts == 1, "the label is there: nothing to read twice"


def test_an_end_outside_an_event_of_its_own_wakes_its_waiters_too(kube):
    dispatcher = handler(kube)
    kube.put(jobflow("eval", flow="evaluate", depends={"jobFlows": [{"name": "nightly"}]}))
    kube.put(jobflow("nightly", flow="train"))
    dispatcher.jobflow(NS, "eval")
    dispatcher.jobflow(NS, "nightly")
    kube.move(NS, "nightly-train", "Completed")
    outcome = dispatcher.reconciler.jobflow(NS, "nightly")  # as an approval's CloudEvent reconciles it
    assert outcome.ended and kube.stored(VCJOB, NS, "eval-evaluate") is None
    dispatcher.follow_up(outcome)
    assert kube.stored(VCJOB, NS, "eval-evaluate") is not None
