"""The shell's behaviours, in-process and fast: the Reconciler against an in-memory KubeApi (``memory_kube``).

Each behaviour here is also covered against the real API server in ``tests/cluster`` (named in each docstring);
this tier shows the shell's own logic (re-read loops, re-plans, releases, which JobFlows an event concerns) in
milliseconds.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from apiclient.rest import Conflict
from handlers.dispatch import Dispatcher
from handlers.jobflows import MAX_ATTEMPTS, Reconciler
from jobflow_core.queueing.line import PRIORITY_CLASS
from jobflow_core.vocabulary.api import COMMAND, JOBFLOW, JOBTEMPLATE, RECORD_FINALIZER, VCJOB
from memory_kube import MemoryKube
from scenario import TEMPLATE_SPEC
from seeds import diamond

NS = "default"

A_THEN_B = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: f, namespace: default}
spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}
"""


def template(name: str, *, ttl: int | None = None) -> dict:
    """A JobTemplate; with ``ttl``, Volcano deletes its vcjobs that long after they end (so they carry our
    finalizer)."""
    spec = yaml.safe_load(TEMPLATE_SPEC) | ({"ttlSecondsAfterFinished": ttl} if ttl is not None else {})
    return {"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    kube.put(template("a"))
    kube.put(template("b"))
    return kube


def reconciler(kube: MemoryKube) -> Reconciler:
    return Reconciler(kube, clock=lambda: kube.now)


def status(kube: MemoryKube, name: str = "f") -> dict:
    return kube.stored(JOBFLOW, NS, name).get("status") or {}


def created_events(kube: MemoryKube) -> list[str]:
    return [message for _, _, reason, message in kube.events if reason == "Created"]


def test_a_jobflow_event_creates_the_root_flow_writes_the_status_and_records_the_events(kube):
    kube.put(yaml.safe_load(A_THEN_B))
    outcome = reconciler(kube).jobflow(NS, "f")
    assert (outcome.created, outcome.status_written, outcome.attempts) == (["f-a"], True, 1)
    assert kube.names(VCJOB, NS) == ["f-a"]
    assert status(kube)["pendingJobs"] == ["f-a"]
    assert created_events(kube) == ["create a job named f-a!"]
    assert kube.stored(JOBTEMPLATE, NS, "a")["status"] == {"jobDependsOnList": ["f-a"]}


def test_a_reconcile_that_changes_nothing_writes_nothing(kube):
    kube.put(yaml.safe_load(A_THEN_B))
    reconciler(kube).jobflow(NS, "f")
    reconciler(kube).jobflow(NS, "f")  # records the vcjob as created (its creation time and uid)
    before = kube.requests
    outcome = reconciler(kube).jobflow(NS, "f")
    assert (outcome.created, outcome.status_written) == ([], False)
    assert kube.requests - before == 2  # one GET of the JobFlow, one LIST of its vcjobs


def test_a_lost_status_race_is_resolved_by_reading_again(kube):
    """Cluster tier: test_handler_http.py, test_a_persistent_conflict_gives_409_so_the_bus_retries."""
    kube.put(yaml.safe_load(A_THEN_B))
    races = iter([True])

    def other_writer(flow: dict) -> None:
        if next(races, False):
            kube.put(kube.stored(JOBFLOW, NS, "f") | {"metadata": {**flow["metadata"], "labels": {"x": "y"}}})

    kube.before_status_write = other_writer
    outcome = reconciler(kube).jobflow(NS, "f")
    assert outcome.attempts == 2
    assert kube.names(VCJOB, NS) == ["f-a"]
    assert created_events(kube) == ["create a job named f-a!"]
    assert status(kube)["pendingJobs"] == ["f-a"]


def test_a_status_race_lost_every_time_gives_up_with_conflict_after_the_last_attempt_having_created_nothing(kube):
    """The status write that names the vcjobs a plan creates comes first and guards the creates (issue 25)."""
    kube.put(yaml.safe_load(A_THEN_B))
    kube.before_status_write = lambda flow: kube.put(kube.stored(JOBFLOW, NS, "f"))
    with pytest.raises(Conflict, match="kept changing"):
        reconciler(kube).jobflow(NS, "f")
    assert kube.names(VCJOB, NS) == []
    assert created_events(kube) == []
    assert status(kube) == {}
    assert MAX_ATTEMPTS == 5


def stale_list_once(kube: MemoryKube) -> None:
    """The next LIST of vcjobs misses everything, as one made just before another handler's create would."""
    real = kube.list_vcjobs
    kube.list_vcjobs = lambda namespace, selector: (setattr(kube, "list_vcjobs", real), [])[1]


def test_a_vcjob_another_handler_created_meanwhile_is_adopted_without_a_second_create(kube):
    """Cluster tier: test_handler_http.py, test_the_same_event_delivered_many_times_at_once_creates_each_vcjob_once."""
    kube.put(yaml.safe_load(A_THEN_B))
    read_before = kube.get_jobflow(NS, "f")
    reconciler(kube).jobflow(NS, "f")  # the other handler: creates f-a and writes the status
    stale_list_once(kube)
    outcome = reconciler(kube).jobflow(NS, "f", known=read_before)
    assert (outcome.created, outcome.attempts) == ([], 2)
    assert kube.names(VCJOB, NS) == ["f-a"]
    assert created_events(kube) == ["create a job named f-a!"]


def test_a_foreign_vcjob_holding_the_name_is_read_and_reported_as_a_name_conflict(kube):
    kube.put(yaml.safe_load(A_THEN_B))
    kube.put({"apiVersion": VCJOB.api_version, "kind": VCJOB.kind, "metadata": {"name": "f-a", "namespace": NS},
              "spec": yaml.safe_load(TEMPLATE_SPEC)})  # no createdBy label: the LIST by label misses it
    outcome = reconciler(kube).jobflow(NS, "f")
    assert (outcome.created, outcome.attempts) == ([], 2)
    assert status(kube)["state"]["reason"] == "JobNameConflict"
    assert 'vcjob "default/f-a" already exists and is not controlled by JobFlow "default/f"' in \
        status(kube)["state"]["message"]
    assert ("f", "Warning", "JobNameConflict") in [event[:3] for event in kube.events]


def test_a_vcjob_the_webhook_refuses_is_planned_again_and_shown_in_status_and_an_event(kube):
    """Cluster tier: test_reconciler.py, test_a_vcjob_refused_by_volcanos_webhook_is_shown_in_status_and_an_event."""
    kube.put(yaml.safe_load(A_THEN_B))
    kube.priority_classes[PRIORITY_CLASS] = {"metadata": {"name": PRIORITY_CLASS}}  # installed: no warning of its own
    kube.refuse = lambda manifest: "queue no-such-queue is not found"
    outcome = reconciler(kube).jobflow(NS, "f")
    assert (outcome.created, outcome.attempts) == ([], 2)
    assert kube.names(VCJOB, NS) == []
    state = status(kube)["state"]
    assert state["reason"] == "JobRejected"
    assert 'the API server refused vcjob "f-a": queue no-such-queue is not found' in state["message"]
    assert [event[:3] for event in kube.events if event[1] == "Warning"] == [("f", "Warning", "JobRejected")]


def test_the_diamond_runs_to_succeed_on_vcjob_events_and_deletes_its_jobs(kube):
    """Cluster tier: test_reconciler.py, test_the_seed_diamond_runs_in_dag_order_to_succeed_and_deletes_its_jobs."""
    for name in "cde":
        kube.put(template(name))
    kube.put(diamond(retain="delete", metadata={"namespace": NS}))
    handler = reconciler(kube)
    handler.jobflow(NS, "test")
    for step in (["a"], ["b"], ["c", "d"], ["e"]):
        assert kube.names(VCJOB, NS) == sorted(f"test-{flow}" for flow in _done_and(step))
        for flow in step:
            kube.move(NS, f"test-{flow}", "Completed")
            Dispatcher(handler).vcjob(NS, f"test-{flow}", controller=None, deleted=False)
    assert status(kube, "test")["state"]["phase"] == "Succeed"
    assert status(kube, "test")["completedJobs"] == [f"test-{flow}" for flow in "abcde"]
    # Deleted with jobRetainPolicy: delete; each deletion's event releases our finalizer, and the job goes.
    for name in kube.names(VCJOB, NS):
        Dispatcher(handler).vcjob(NS, name, controller=None, deleted=True)
    assert kube.names(VCJOB, NS) == []
    template_status = kube.stored(JOBTEMPLATE, NS, "a")["status"]
    assert template_status["jobDependsOnList"] == []  # the vcjob is gone; its run stays counted
    assert (template_status["runs"], template_status["succeeded"], template_status["failureRate"]) == (1, 1, 0.0)
    assert [run["name"] for run in template_status["recentRuns"]] == ["test-a"]


def _done_and(step: list[str]) -> list[str]:
    order = ["a", "b", "c", "d", "e"]
    return order[:order.index(step[-1]) + 1]


def test_a_completed_vcjob_deleted_while_no_handler_looked_is_recorded_released_and_never_run_again(kube):
    """Cluster tier: test_reconciler.py, test_a_vcjob_its_ttl_deletes_while_no_handler_looks_is_still_recorded..."""
    kube.put(template("a", ttl=0))
    kube.put(yaml.safe_load(A_THEN_B))
    handler = reconciler(kube)
    handler.jobflow(NS, "f")
    kube.move(NS, "f-a", "Completed")
    kube.remove(VCJOB, NS, "f-a")  # the TTL deletes it: our finalizer holds it
    assert kube.stored(VCJOB, NS, "f-a")["metadata"]["deletionTimestamp"]
    outcome = handler.jobflow(NS, "f")
    assert (outcome.created, outcome.released) == (["f-b"], ["f-a"])
    assert kube.names(VCJOB, NS) == ["f-b"]
    assert status(kube)["completedJobs"] == ["f-a"]
    handler.jobflow(NS, "f")
    assert created_events(kube) == ["create a job named f-a!", "create a job named f-b!"]


def test_a_ttl_vcjobs_finalizer_goes_as_soon_as_its_end_is_recorded_not_when_it_is_deleted(kube):
    kube.put(template("a", ttl=60))
    kube.put(yaml.safe_load(A_THEN_B))
    handler = reconciler(kube)
    handler.jobflow(NS, "f")
    assert kube.stored(VCJOB, NS, "f-a")["metadata"]["finalizers"] == [RECORD_FINALIZER]
    kube.move(NS, "f-a", "Running")
    assert handler.jobflow(NS, "f").released == []
    kube.move(NS, "f-a", "Completed")
    outcome = handler.jobflow(NS, "f")
    assert outcome.released == ["f-a"] and status(kube)["completedJobs"] == ["f-a"]
    assert not kube.stored(VCJOB, NS, "f-a")["metadata"].get("finalizers")
    assert "finalizers" not in kube.stored(VCJOB, NS, "f-b")["metadata"]  # template b has no TTL


def test_a_vcjob_deleted_with_its_jobflow_leaves_its_templates_list_on_its_delete_event(kube):
    handler = reconciler(kube)
    kube.put(yaml.safe_load(A_THEN_B))
    handler.jobflow(NS, "f")
    assert kube.stored(JOBTEMPLATE, NS, "a")["status"]["jobDependsOnList"] == ["f-a"]
    kube.objects.pop((JOBFLOW.kind, NS, "f"))
    kube.remove(VCJOB, NS, "f-a")
    assert Dispatcher(handler).vcjob(NS, "f-a", controller="f", deleted=True).outcomes == []
    assert kube.stored(JOBTEMPLATE, NS, "a")["status"]["jobDependsOnList"] == []


def test_a_vcjob_whose_jobflow_is_gone_is_released_by_its_event_and_by_a_resync(kube):
    kube.put(template("a", ttl=60))
    kube.put(yaml.safe_load(A_THEN_B))
    handler = reconciler(kube)
    handler.jobflow(NS, "f")
    kube.objects.pop((JOBFLOW.kind, NS, "f"))
    kube.remove(VCJOB, NS, "f-a")  # the garbage collector deletes it: our finalizer holds it
    Dispatcher(handler).vcjob(NS, "f-a", controller=None, deleted=True)
    assert kube.names(VCJOB, NS) == []

    kube.put(yaml.safe_load(A_THEN_B))
    handler.jobflow(NS, "f")
    kube.objects.pop((JOBFLOW.kind, NS, "f"))
    kube.remove(VCJOB, NS, "f-a")
    assert kube.stored(VCJOB, NS, "f-a")["metadata"]["finalizers"] == [RECORD_FINALIZER]
    Dispatcher(handler).resync()
    assert kube.names(VCJOB, NS) == []


def test_a_resync_reconciles_every_jobflow_that_can_still_change_and_skips_the_settled(kube):
    kube.put(yaml.safe_load(A_THEN_B))
    settled = yaml.safe_load(A_THEN_B.replace("name: f,", "name: done,"))
    kube.put(settled | {"status": {"state": {"phase": "Succeed"}}})
    outcomes = Dispatcher(reconciler(kube)).resync().outcomes
    assert [outcome.jobflow for outcome in outcomes] == ["default/f"]
    assert kube.names(VCJOB, NS) == ["f-a"]


def test_a_jobtemplate_event_reconciles_only_the_jobflows_still_waiting_for_it(kube):
    """Cluster tier: test_reconciler.py, test_a_jobtemplate_created_after_its_jobflow_is_picked_up."""
    kube.objects.pop((JOBTEMPLATE.kind, NS, "a"))
    kube.put(yaml.safe_load(A_THEN_B))
    handler = reconciler(kube)
    handler.jobflow(NS, "f")
    assert status(kube)["state"]["reason"] == "TemplateNotFound"
    kube.put(template("a"))
    assert [outcome.created for outcome in Dispatcher(handler).jobtemplate(NS, "a").outcomes] == [["f-a"]]
    # Flow a has its vcjob now: a change of its template (our own status write, say) concerns no JobFlow.
    assert Dispatcher(handler).jobtemplate(NS, "a").outcomes == []
    assert Dispatcher(handler).jobtemplate(NS, "c").outcomes == []  # no flow of that name
    # Flow b waits for a to complete: a change of b's template cannot start it, its target's events will.
    assert status(kube)["waitingFlows"][0]["name"] == "b" and status(kube)["waitingFlows"][0]["waitingFor"] == ["a"]
    assert Dispatcher(handler).jobtemplate(NS, "b").outcomes == []


def test_a_jobtemplate_refresh_keeps_a_vcjob_recorded_after_its_list(kube):
    """The refresh of a template's list (its event) LISTs the vcjobs, then writes: a vcjob created and recorded in
    between stays listed (CI saw it lost: the refresh replaced the list with its LIST's view)."""
    kube.put(yaml.safe_load(A_THEN_B))
    handler = reconciler(kube)
    listing = kube.list_vcjobs

    def list_then_another_creates(namespace, selector):
        seen = listing(namespace, selector)
        kube.list_vcjobs = listing
        handler.jobflow(NS, "f")  # creates f-a and adds it to a's list, after the LIST above
        return seen

    kube.list_vcjobs = list_then_another_creates
    Dispatcher(handler).jobtemplate(NS, "a")
    assert kube.names(VCJOB, NS) == ["f-a"]
    assert kube.stored(JOBTEMPLATE, NS, "a")["status"]["jobDependsOnList"] == ["f-a"]
    # A name the list held before the LIST, and the LIST does not show, is taken off (a lost delete event).
    stored = kube.stored(JOBTEMPLATE, NS, "a")
    kube.put(stored | {"status": stored["status"] | {"jobDependsOnList": ["f-a", "gone-a"]}})
    Dispatcher(handler).jobtemplate(NS, "a")
    assert kube.stored(JOBTEMPLATE, NS, "a")["status"]["jobDependsOnList"] == ["f-a"]


class Counting(MemoryKube):
    """Notes which calls the reconciler makes."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def get_jobflow(self, namespace: str, name: str) -> dict | None:
        self.calls.append(f"GET jobflow {name}")
        return super().get_jobflow(namespace, name)

    def list_jobflows(self, namespace: str | None = None) -> list[dict]:
        self.calls.append("LIST jobflows")
        return super().list_jobflows(namespace)

    def get_vcjob(self, namespace: str, name: str) -> dict | None:
        self.calls.append(f"GET vcjob {name}")
        return super().get_vcjob(namespace, name)

    def list_vcjobs(self, namespace: str | None, label_selector: str) -> list[dict]:
        self.calls.append(f"LIST vcjobs {label_selector}")
        return super().list_vcjobs(namespace, label_selector)

    def get_jobtemplate(self, namespace: str, name: str) -> dict | None:
        self.calls.append(f"GET jobtemplate {name}")
        return super().get_jobtemplate(namespace, name)


@pytest.fixture
def counting() -> Counting:
    kube = Counting()
    for name in "ab":
        kube.put(template(name))
    kube.put(yaml.safe_load(A_THEN_B))
    kube.put(yaml.safe_load(A_THEN_B.replace("name: f,", "name: g,")))
    reconciler(kube).jobflow(NS, "f")
    kube.calls.clear()
    return kube


def test_a_created_vcjob_joins_its_templates_list_from_the_template_read_for_it_without_a_list(counting):
    counting.move(NS, "f-a", "Completed")
    reconciler(counting).jobflow(NS, "f")
    assert counting.names(VCJOB, NS) == ["f-a", "f-b"]
    assert counting.stored(JOBTEMPLATE, NS, "b")["status"]["jobDependsOnList"] == ["f-b"]
    assert counting.calls.count("GET jobtemplate b") == 1  # read once, for the vcjob's spec and the list
    assert not any("createdByJobTemplate" in call for call in counting.calls)


def test_a_vcjob_event_naming_its_jobflow_reads_that_jobflow_and_lists_none(counting):
    outcomes = Dispatcher(reconciler(counting)).vcjob(NS, "f-a", controller="f", deleted=False).outcomes
    assert [outcome.jobflow for outcome in outcomes] == ["default/f"]
    assert counting.calls[0] == "GET jobflow f" and "LIST jobflows" not in counting.calls


def test_a_vcjob_event_without_a_hint_reads_the_vcjob_for_its_controller_and_lists_none(counting):
    """Knative's ApiServerSource in Reference mode names only the vcjob."""
    outcomes = Dispatcher(reconciler(counting)).vcjob(NS, "f-a", controller=None, deleted=False).outcomes
    assert [outcome.jobflow for outcome in outcomes] == ["default/f"]
    assert counting.calls[:2] == ["GET vcjob f-a", "GET jobflow f"] and "LIST jobflows" not in counting.calls


def test_a_wrong_hint_cannot_redirect_the_reconcile_the_claimant_is_searched_for(counting):
    outcomes = Dispatcher(reconciler(counting)).vcjob(NS, "f-a", controller="g", deleted=False).outcomes
    assert [outcome.jobflow for outcome in outcomes] == ["default/f"]
    assert counting.calls[:2] == ["GET jobflow g", "LIST jobflows"]


def test_a_jobflow_past_its_deadline_has_volcano_abort_its_running_vcjob_and_fails(kube):
    kube.put(yaml.safe_load(A_THEN_B.replace("spec: {", "spec: {activeDeadlineSeconds: 60, ")))
    handler = reconciler(kube)
    handler.jobflow(NS, "f")
    kube.move(NS, "f-a", "Running")
    assert status(kube)["recheckSeconds"] == 6  # the event source looks again that often
    kube.now += timedelta(seconds=60)
    handler.jobflow(NS, "f")
    assert kube.names(COMMAND, NS) == ["f-a-abort"]
    handler.jobflow(NS, "f")  # an event before Volcano acted: the same command, not a second one
    assert kube.carry_out_commands() == ["f-a"]
    handler.jobflow(NS, "f")
    state = status(kube)["state"]
    assert (state["phase"], state["reason"]) == ("Failed", "DeadlineExceeded")
    assert kube.stored(VCJOB, NS, "f-a")["status"]["state"]["phase"] == "Aborted"
    assert ("f", "Warning", "DeadlineExceeded") in [event[:3] for event in kube.events]


def test_a_condition_reads_its_targets_result_from_the_pods_once_and_keeps_it_in_the_status(kube):
    kube.put(template("b"))
    kube.put(yaml.safe_load(A_THEN_B.replace("{name: b, dependsOn: {targets: [a]}}",
                                             "{name: b, dependsOn: {targets: [a]}, when: 'targets.a.result.n > 1'}")))
    handler = reconciler(kube)
    handler.jobflow(NS, "f")
    kube.move(NS, "f-a", "Completed")
    kube.pods[NS] = [{"metadata": {"name": "f-a-main-0", "labels": {"volcano.sh/job-name": "f-a"}},
                      "status": {"containerStatuses": [{"state": {"terminated": {"message": "n=2"}}}]}}]
    assert handler.jobflow(NS, "f").created == ["f-b"]
    assert [r["result"] for r in status(kube)["jobStatusList"] if r["name"] == "f-a"] == ["n=2"]
    kube.pods[NS] = []  # the pods are gone: the status remembers
    handler.jobflow(NS, "f")  # records f-b as created
    before = kube.requests
    handler.jobflow(NS, "f")
    assert kube.requests - before == 2  # GET the JobFlow, LIST its vcjobs: no pod LIST any more


def run_a_then_b_to_succeed(kube: MemoryKube, *, retain: str) -> None:
    kube.put(yaml.safe_load(A_THEN_B.replace("spec: {", f"spec: {{jobRetainPolicy: {retain}, ")))
    handler = reconciler(kube)
    for job in ("f-a", "f-b"):
        handler.jobflow(NS, "f")
        kube.move(NS, job, "Completed")
    handler.jobflow(NS, "f")


def test_a_succeeded_jobflow_writes_its_end_before_it_deletes_its_vcjobs(kube):
    """Issue 23: were the deletes first, a lost status write would leave the vcjobs gone and their end unrecorded."""
    order = []
    kube.before_status_write = lambda flow: order.append(("status", flow["status"]["state"]["phase"]))
    real = kube.delete_vcjob
    kube.delete_vcjob = lambda namespace, name: (order.append(("delete", name)), real(namespace, name))[1]
    run_a_then_b_to_succeed(kube, retain="delete")
    assert order[-3:] == [("status", "Succeed"), ("delete", "f-a"), ("delete", "f-b")]
    assert kube.names(VCJOB, NS) == []


def test_a_reconcile_that_read_the_jobflow_before_its_end_was_written_creates_nothing_deleted_since(kube):
    """Issue 23, the reported race: the JobFlow read before the Succeed write, the vcjobs listed after the
    retention deletes. The JobFlow handed in (a resync's LIST) is older than the list, so its plan is checked
    against a fresh read before anything is created."""
    kube.put(yaml.safe_load(A_THEN_B.replace("spec: {", "spec: {jobRetainPolicy: delete, ")))
    handler = reconciler(kube)
    handler.jobflow(NS, "f")
    kube.move(NS, "f-a", "Completed")
    handler.jobflow(NS, "f")
    kube.move(NS, "f-b", "Running")
    handler.jobflow(NS, "f")
    read_before = kube.get_jobflow(NS, "f")  # f-b Running
    kube.move(NS, "f-b", "Completed")
    handler.jobflow(NS, "f")  # Succeed, both vcjobs deleted
    assert kube.names(VCJOB, NS) == []
    outcome = handler.jobflow(NS, "f", known=read_before)
    assert (outcome.created, outcome.phase) == ([], "Succeed")
    assert kube.names(VCJOB, NS) == [] and status(kube)["state"]["phase"] == "Succeed"


def test_a_plan_that_would_move_an_ended_phase_back_is_refused_as_a_bug(kube, monkeypatch, caplog):
    import handlers.jobflows as shell
    from jobflow_core.models import FlowState

    run_a_then_b_to_succeed(kube, retain="retain")
    real = shell.plan_observation

    def regressing(*args, **kwargs):
        plan = real(*args, **kwargs)
        status = plan.status.model_copy(update={"state": FlowState(phase="Running")})
        return plan.__class__(actions=(shell.WriteStatus(status, ()), shell.Delete("f-a")), status=status,
                              decisions=plan.decisions)

    monkeypatch.setattr(shell, "plan_observation", regressing)
    outcome = reconciler(kube).jobflow(NS, "f")
    assert (outcome.status_written, outcome.deleted) == (False, [])
    assert status(kube)["state"]["phase"] == "Succeed" and kube.names(VCJOB, NS) == ["f-a", "f-b"]
    assert "bug: a plan asked to write phase Running over Succeed" in caplog.text


MEMOIZED = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME, namespace: default}
spec: {flows: [{name: a, memoize: {}}, {name: b, dependsOn: {targets: [a]}}]}
"""


def test_a_memoized_run_is_stored_in_the_cache_configmap_and_the_next_jobflow_reuses_it(kube):
    """On the real API server: tests/cluster/test_data_between_flows.py (memoized step)."""
    kube.put(yaml.safe_load(MEMOIZED.replace("NAME", "one")))
    reconciler(kube).jobflow(NS, "one")
    kube.pods[NS] = [{"metadata": {"name": "one-a-main-0", "labels": {"volcano.sh/job-name": "one-a"}},
                      "status": {"containerStatuses": [{"state": {"terminated": {"message": "out=/x"}}}]}}]
    kube.move(NS, "one-a", "Completed")
    reconciler(kube).jobflow(NS, "one")
    [(key, entry)] = kube.get_configmap(NS, "jobflow-memo")["data"].items()
    assert key == kube.stored(VCJOB, NS, "one-a")["metadata"]["annotations"]["flow.volcano.sh/memo-key"]
    assert '"job":"default/one-a"' in entry and '"result":"out=/x"' in entry

    kube.put(yaml.safe_load(MEMOIZED.replace("NAME", "two")))
    reconciler(kube).jobflow(NS, "two")
    assert kube.stored(VCJOB, NS, "two-a") is None and kube.stored(VCJOB, NS, "two-b") is not None
    [record] = [r for r in status(kube, "two")["jobStatusList"] if r["name"] == "two-a"]
    assert (record["reason"], record["cachedFrom"], record["result"]) == ("Cached", "default/one-a", "out=/x")

    stored = kube.get_configmap(NS, "jobflow-memo")["metadata"]["resourceVersion"]
    for name in ("one", "two", "one", "two"):  # the same events again: nothing stored twice, nothing run
        reconciler(kube).jobflow(NS, name)
    assert kube.get_configmap(NS, "jobflow-memo")["metadata"]["resourceVersion"] == stored
    assert kube.stored(VCJOB, NS, "two-a") is None
    assert [m for _, _, reason, m in kube.events if reason == "Cached"] == [
        'flow "a" not run: it reuses the run of vcjob default/one-a, Completed at ' +
        kube.stored(JOBFLOW, NS, "one")["status"]["jobStatusList"][0]["endTimestamp"] +
        f' (memoize, key {kube.stored(VCJOB, NS, "one-a")["metadata"]["annotations"]["flow.volcano.sh/memo-key"][:12]})']
