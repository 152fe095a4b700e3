"""Started JobFlows first on a shared Volcano queue (``jobflow_core.queueing.line``,
``jobflow_core.vocabulary.resources``): the gang a vcjob needs, the line, the room, and the status and manifests the
planner makes of them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings, strategies as st

from jobflow_core import plan
from jobflow_core.models import VcJobPhase
from jobflow_core.queueing.line import (PRIORITY_CLASS, RECHECK_SECONDS, InLine, QueueView, admit, counts_for, in_line,
                                   line_key, line_of_wire, line_to_wire, never_fits)
from jobflow_core.vocabulary.api import GANG_REQUESTS
from jobflow_core.vocabulary.resources import QuantityError, describe, gang_requests, quantity, to_wire
from scenario import T0, jobflow, template, vcjob

P = VcJobPhase
STAGE = """
minAvailable: 4
queue: gpu
tasks:
- {name: t, replicas: 4, template: {spec: {containers: [{name: c, image: busybox,
   resources: {requests: {cpu: 2, memory: 1Gi}}}]}}}
"""
CHAIN = "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}"


def chain(name: str = "test", *, created: datetime = T0, status: dict | None = None):
    return jobflow(f"metadata: {{name: {name}, creationTimestamp: '{created.isoformat()}'}}\n{CHAIN}", status=status)


def stage_templates() -> dict:
    return {"a": template("a", spec=STAGE), "b": template("b", spec=STAGE)}


def queue(capacity: dict | None = None, *line: InLine, priority: str | None = PRIORITY_CLASS) -> dict:
    return {"gpu": QueueView(name="gpu", capacity={"cpu": 32000} if capacity is None else capacity,
                             jobflows=tuple(line), priority_class=priority)}


def started(name: str, cpu: int, *, created: datetime = T0) -> InLine:
    return InLine(namespace="default", name=name, created=created, queue="gpu", started=True, ended=False,
                  reserved={"cpu": cpu * 1000})


def waiting(name: str, *, created: datetime = T0, cpu: int | None = 8) -> InLine:
    return InLine(namespace="default", name=name, created=created, queue="gpu", started=False, ended=False,
                  requests=None if cpu is None else {"cpu": cpu * 1000})


# --- what a gang needs ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, resource, amount", [
    ("2", "cpu", 2000), ("500m", "cpu", 500), ("1.5", "cpu", 1500), ("1Gi", "memory", 2**30),
    ("1G", "memory", 10**9), ("1e3", "memory", 1000), ("2", "nvidia.com/gpu", 2)])
def test_quantities_are_read_as_kubernetes_writes_them(text, resource, amount):
    assert quantity(resource, text) == amount


def test_a_quantity_that_is_not_one_says_what_one_looks_like():
    with pytest.raises(QuantityError, match='"two" is not a Kubernetes quantity'):
        quantity("cpu", "two")


def test_a_gang_needs_its_first_min_available_pods_in_task_order():
    spec = {"minAvailable": 3, "tasks": [
        {"replicas": 1, "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "4"}}}]}}},
        {"replicas": 8, "template": {"spec": {"containers": [{"resources": {"limits": {"cpu": "1",
                                                                                       "nvidia.com/gpu": "1"}}}]}}}]}
    assert gang_requests(spec) == {"cpu": 6000, "nvidia.com/gpu": 2}
    assert describe(gang_requests(spec)) == "6 CPU, 2 nvidia.com/gpu"
    assert to_wire({"cpu": 1500, "memory": 2**31}) == {"cpu": "1500m", "memory": "2Gi"}


def test_without_min_available_every_replica_is_in_the_gang():
    task = {"replicas": 3, "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "2"}}}]}}}
    assert gang_requests({"tasks": [task]}) == {"cpu": 6000}


# --- the line ---------------------------------------------------------------------------------------------------

def test_a_jobflow_starts_when_the_started_ones_and_those_ahead_leave_room():
    view = queue(None, started("s1", 8), started("s2", 8), waiting("older", created=T0 - timedelta(seconds=1)))
    assert admit(view["gpu"], namespace="default", name="test", created=T0, needs={"cpu": 8000}).start


def test_a_jobflow_waits_behind_started_jobflows_and_says_where_it_stands():
    view = queue(None, started("s1", 8), started("s2", 16), waiting("older", created=T0 - timedelta(seconds=1)))
    answer = admit(view["gpu"], namespace="default", name="test", created=T0, needs={"cpu": 8000})
    assert (answer.start, answer.position) == (False, 2)
    assert answer.message == (
        'waiting for room in Volcano queue "gpu": 2nd in line; its first stages need 8 CPU, 2 started JobFlows '
        "reserve 24 CPU, 1 created before it need 8 CPU, of 32 CPU (capability)")


def test_those_created_in_the_same_second_go_by_name_numbers_compared_as_numbers():
    assert line_key(created=T0, name="flow-2", namespace="b") < line_key(created=T0, name="flow-10", namespace="a")
    view = queue({"cpu": 16000}, waiting("flow-2"), waiting("flow-3"))
    assert not admit(view["gpu"], namespace="default", name="flow-10", created=T0, needs={"cpu": 8000}).start
    assert admit(view["gpu"], namespace="default", name="flow-1", created=T0, needs={"cpu": 8000}).start


def test_one_ahead_that_has_not_said_what_it_needs_counts_as_needing_as_much():
    view = queue({"cpu": 16000}, waiting("a", cpu=None), started("s", 8))
    assert not admit(view["gpu"], namespace="default", name="b", created=T0, needs={"cpu": 8000}).start


def test_a_wide_jobflow_first_in_line_is_not_overtaken_by_narrow_ones():
    view = queue(None, started("s", 16), waiting("wide", cpu=32, created=T0 - timedelta(seconds=1)))
    assert not admit(view["gpu"], namespace="default", name="narrow", created=T0, needs={"cpu": 2000}).start


def test_without_a_known_capacity_nothing_is_held_back():
    view = QueueView(name="gpu", capacity=None, jobflows=(started("s", 800),))
    assert admit(view, namespace="default", name="test", created=T0, needs={"cpu": 8000}).start


def test_a_jobflow_in_line_is_read_from_its_status():
    raw = {"metadata": {"namespace": "ns", "name": "x", "creationTimestamp": "2026-01-02T03:04:05Z"},
           "status": {"queue": {"name": "gpu", "state": "Admitted", "reserved": {"cpu": "8"}},
                      "state": {"phase": "Running"}}}
    assert in_line(raw) == InLine(namespace="ns", name="x", created=T0, queue="gpu", started=True, ended=False,
                                  reserved={"cpu": 8000})
    assert in_line({"metadata": {"name": "new"}}).started is False
    assert in_line(raw | {"status": {"state": {"phase": "Succeed"}}}).ended


def test_a_gang_larger_than_the_queue_can_never_run_and_the_message_has_the_numbers():
    assert never_fits(queue({"cpu": 4000})["gpu"], request={"cpu": 8000, "memory": 2**30}) == (
        'its gang needs 8 CPU, 1Gi memory at once, more cpu than Volcano queue "gpu" can ever hold (4 CPU, its '
        "capability): lower minAvailable or the requests, or raise the queue's capability; nothing was created")
    assert never_fits(queue({"cpu": 8000})["gpu"], request={"cpu": 8000}) is None


LINES = st.lists(st.tuples(st.integers(0, 5), st.sampled_from([2, 8, 16]), st.booleans(), st.integers(0, 16)),
                 min_size=1, max_size=12)


@given(LINES, st.integers(8, 48))
def test_what_admission_lets_start_together_fits_and_no_younger_jobflow_goes_before_an_older_one(drawn, cpu):
    """All JobFlows in line ask at once, on the same view: those told to start fit the queue together with what
    the started ones reserve, each counted at most as the whole queue (one needing more starts only on a queue
    nothing else holds), and each one told to start has every older waiting one started too. (Each has recorded
    what it needs: one not reconciled yet counts as needing as much as the one asking, which is right only for
    JobFlows of one shape, for the moment until its first reconcile.)"""
    jobflows = []
    for index, (second, needs, is_started, reserved) in enumerate(drawn):
        created = T0 + timedelta(seconds=second)
        jobflows.append(started(f"f{index}", reserved, created=created) if is_started
                        else waiting(f"f{index}", cpu=needs, created=created))
    view = QueueView(name="gpu", capacity={"cpu": cpu * 1000}, jobflows=tuple(jobflows))
    line = sorted((j for j in jobflows if not j.started), key=lambda j: j.key)
    own = {j.name: j.requests if j.requests is not None else {"cpu": 8000} for j in line}
    starts = [j for j in line if admit(view, namespace="default", name=j.name, created=j.created,
                                       needs=own[j.name]).start]
    reserved = sum(j.reserved.get("cpu", 0) for j in jobflows if j.started)
    assert reserved + sum(min(own[j.name]["cpu"], cpu * 1000) for j in starts) <= cpu * 1000 or not starts
    assert starts == line[:len(starts)]


ENTRIES = st.builds(
    InLine, namespace=st.sampled_from(["default", "other"]), name=st.sampled_from(["f1", "f2", "f10", "test"]),
    created=st.sampled_from([None, T0, T0 + timedelta(seconds=1)]),
    queue=st.sampled_from([None, "", "gpu", "gpu", "cpu"]), started=st.booleans(),
    ended=st.sampled_from([False, False, False, True]), reserved=st.sampled_from([{}, {"cpu": 8000}, {"cpu": 1500}]),
    requests=st.sampled_from([None, {}, {"cpu": 8000, "memory": 2**30}]))


@settings(max_examples=300, deadline=None)
@given(st.lists(ENTRIES, max_size=8), st.sampled_from([None, {"cpu": 16000}, {"cpu": 24000}]),
       st.sampled_from([T0, T0 + timedelta(seconds=1)]))
def test_the_line_an_event_carries_gives_every_answer_the_whole_line_gives(line, capacity, created):
    """The event source sends only the entries :func:`counts_for` keeps, as wire JSON: the admission (start or
    not, place, message) is the one made from every JobFlow."""
    asking = InLine(namespace="default", name="test", created=created, queue=None, started=False, ended=False)
    carried = tuple(line_of_wire(line_to_wire(entry)) for entry in line if counts_for(entry, asking=asking))
    whole, kept = (QueueView(name="gpu", capacity=capacity, jobflows=tuple(jobflows)) for jobflows in (line, carried))
    assert admit(kept, namespace="default", name="test", created=created, needs={"cpu": 8000}) == \
        admit(whole, namespace="default", name="test", created=created, needs={"cpu": 8000})


@given(ENTRIES)
def test_a_jobflow_in_line_reads_back_as_it_was_sent(entry):
    assert line_of_wire(line_to_wire(entry)) == entry


# --- what the planner makes of it -------------------------------------------------------------------------------

def test_a_jobflow_without_room_creates_nothing_and_its_status_says_it_waits_and_where():
    result = plan(chain(), templates=stage_templates(), jobs=[], now=T0,
                  queues=queue(None, started("s1", 16), started("s2", 16)))
    assert result.creates == []
    assert (result.status.state.phase, result.status.state.reason) == ("Pending", "WaitingForQueue")
    assert not [e for e in result.events if e.type == "Warning"]
    q = result.status.queue
    assert (q.name, q.state, q.position, q.requests) == ("gpu", "Waiting", 1, {"cpu": "8", "memory": "4Gi"})
    [waiting_a] = [w for w in result.status.waiting_flows if w.name == "a"]
    assert waiting_a.recheck_seconds == RECHECK_SECONDS == 30 and waiting_a.message == q.message


def test_a_started_jobflow_reserves_its_gangs_and_its_next_stages_get_the_priority_class():
    flow = chain()
    first = plan(flow, templates=stage_templates(), jobs=[], now=T0, queues=queue())
    [create_a] = first.creates
    assert "priorityClassName" not in create_a.manifest["spec"]
    assert create_a.manifest["metadata"]["annotations"][GANG_REQUESTS] == '{"cpu":"8","memory":"4Gi"}'
    assert first.status.queue.model_dump(by_alias=True, exclude_none=True) == {
        "name": "gpu", "state": "Admitted", "reserved": {"cpu": "8", "memory": "4Gi"}}
    job_a = vcjob(flow, "a", P.COMPLETED).model_copy(update={"metadata": vcjob(flow, "a").metadata.model_copy(
        update={"annotations": create_a.manifest["metadata"]["annotations"]})})
    job_a = job_a.model_copy(update={"spec": job_a.spec.model_copy(update={"queue": "gpu"})})
    second = plan(flow.model_copy(update={"status": first.status}), templates=stage_templates(), jobs=[job_a],
                  now=T0, queues=queue())
    [create_b] = second.creates
    assert create_b.manifest["spec"]["priorityClassName"] == PRIORITY_CLASS
    assert second.status.queue.reserved == {"cpu": "8", "memory": "4Gi"}  # b's, written with a's end


def test_without_the_priority_class_the_status_says_what_to_install():
    flow = chain(status={"jobStatusList": [{"name": "test-a", "state": "Completed"}]})
    result = plan(flow, templates=stage_templates(), jobs=[], now=T0, queues=queue(priority=None))
    assert "priorityClassName" not in result.creates[0].manifest["spec"]
    assert "kubectl apply -f manifests/priorityclasses.yaml" in result.status.queue.message


def test_without_the_priority_class_a_warning_event_says_so_once():
    flow = chain(status={"jobStatusList": [{"name": "test-a", "state": "Completed"}]})
    result = plan(flow, templates=stage_templates(), jobs=[], now=T0, queues=queue(priority=None))
    [warning] = [e for e in result.events if e.type == "Warning"]
    assert warning.reason == "PriorityClassMissing" and warning.message == result.status.queue.message
    again = plan(flow.model_copy(update={"status": result.status}), templates=stage_templates(), jobs=[], now=T0,
                 queues=queue(priority=None))
    assert not [e for e in again.events if e.reason == "PriorityClassMissing"]
    installed = plan(flow, templates=stage_templates(), jobs=[], now=T0, queues=queue())
    assert not [e for e in installed.events if e.reason == "PriorityClassMissing"]


def test_a_template_s_own_priority_class_is_kept():
    spec = STAGE + "priorityClassName: urgent\n"
    flow = chain(status={"jobStatusList": [{"name": "test-a", "state": "Completed"}]})
    result = plan(flow, templates={"a": template("a", spec=spec), "b": template("b", spec=spec)}, jobs=[], now=T0,
                  queues=queue())
    assert result.creates[0].manifest["spec"]["priorityClassName"] == "urgent"


def test_a_gang_that_can_never_fit_is_blocked_with_the_flow_and_the_numbers():
    result = plan(chain(), templates=stage_templates(), jobs=[], now=T0, queues=queue({"cpu": 4000}))
    assert result.creates == []
    assert result.status.state.reason == "Unschedulable"
    assert result.status.state.message.startswith(
        'flow "a" of JobFlow "default/test": its gang needs 8 CPU, 4Gi memory at once, more cpu than Volcano queue '
        '"gpu" can ever hold (4 CPU, its capability)')


def test_without_a_queue_read_a_jobflow_plans_as_before():
    result = plan(chain(), templates=stage_templates(), jobs=[], now=T0)
    [create_a] = result.creates
    assert "priorityClassName" not in create_a.manifest["spec"]
    assert result.status.queue.state == "Admitted"  # from the vcjob it creates: what it reserves
    upstream_style = plan(chain(), templates={"a": template("a"), "b": template("b")}, jobs=[], now=T0)
    assert upstream_style.status.queue is None  # the seed's templates request nothing: no field, as before


def test_a_reconcile_at_the_same_moment_as_other_new_jobflows_takes_its_place_in_line():
    """Twenty JobFlows created in one second, none reconciled yet: the first four of the line start."""
    names = [f"f{i}" for i in range(20)]
    line = tuple(InLine(namespace="default", name=n, created=T0, queue=None, started=False, ended=False)
                 for n in names)
    starting = [n for n in names if plan(chain(n), templates=stage_templates(), jobs=[], now=T0,
                                         queues=queue(None, *line)).creates]
    assert starting == ["f0", "f1", "f2", "f3"]


def test_the_shell_reads_the_queue_and_holds_back_a_jobflow_with_no_room():
    from handlers.jobflows import Reconciler
    from jobflow_core.vocabulary.api import JOBFLOW
    from memory_kube import MemoryKube

    kube = MemoryKube()
    kube.queues["gpu"] = {"metadata": {"name": "gpu"}, "spec": {"capability": {"cpu": "8"}}}
    kube.priority_classes[PRIORITY_CLASS] = {"metadata": {"name": PRIORITY_CLASS}}
    for name in ("a", "b"):
        kube.put(template(name, spec=STAGE).to_wire())
    for name, second in (("first", 0), ("second", 1)):
        kube.put(chain(name, created=T0 + timedelta(seconds=second)).to_wire())
    reconciler = Reconciler(kube, clock=lambda: kube.now)
    assert reconciler.jobflow("default", "first").created == ["first-a"]
    assert reconciler.jobflow("default", "second").created == []
    queue_status = kube.stored(JOBFLOW, "default", "second")["status"]["queue"]
    assert (queue_status["state"], queue_status["position"]) == ("Waiting", 1)
    kube.move("default", "first-a", "Completed")
    assert reconciler.jobflow("default", "first").created == ["first-b"]
    assert reconciler.jobflow("default", "second").created == []  # first's b keeps the room
    kube.move("default", "first-b", "Completed")
    reconciler.jobflow("default", "first")
    assert reconciler.jobflow("default", "second").created == ["second-a"]
    assert kube.stored(JOBFLOW, "default", "second")["status"]["queue"]["state"] == "Admitted"




def test_admission_warns_of_each_flow_whose_gang_its_queue_can_never_hold_naming_flow_and_numbers():
    from handlers import create_app
    from memory_kube import MemoryKube

    kube = MemoryKube()
    kube.queues["gpu"] = {"metadata": {"name": "gpu"}, "spec": {"capability": {"cpu": "6"}}}
    kube.put(template("a", spec=STAGE).to_wire())
    client = create_app({"KUBE": kube, "TESTING": True}).test_client()
    body = chain().to_wire()
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u1", "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobFlow"},
        "operation": "CREATE", "namespace": "default", "object": body}}
    response = client.post("/validate/jobflows", json=review).json["response"]
    assert response["allowed"] is True
    assert response["warnings"] == [
        'JobFlow "default/test", flow "a" (JobTemplate "a"): its gang needs 8 CPU, 4Gi memory at once, more cpu than '
        'Volcano queue "gpu" can ever hold (6 CPU, its capability): lower minAvailable or the requests, or raise '
        "the queue's capability; nothing was created"]


def test_a_vcjob_pending_that_its_queue_can_no_longer_hold_shows_in_the_status_with_the_numbers():
    flow = chain()
    pending = vcjob(flow, "a", P.PENDING)
    pending = pending.model_copy(update={
        "metadata": pending.metadata.model_copy(update={"annotations": {GANG_REQUESTS: '{"cpu":"8"}'}}),
        "spec": pending.spec.model_copy(update={"queue": "gpu"})})
    result = plan(flow, templates=stage_templates(), jobs=[pending], now=T0, queues=queue({"cpu": 4000}))
    assert result.status.state.phase == "Pending"  # as its vcjob: the reason says why
    assert result.status.state.reason == "Unschedulable"
    assert result.status.state.message == (
        'vcjob "test-a" of JobFlow "default/test" stays Pending: its gang needs 8 CPU at once, more cpu than Volcano '
        'queue "gpu" can ever hold (4 CPU, its capability): lower minAvailable or the requests, or raise the '
        "queue's capability (delete it, or fix the queue, and the flow goes on)")
    assert [e.reason for e in result.events] == ["PhaseChanged", "Unschedulable"]
    assert plan(flow, templates=stage_templates(), jobs=[pending], now=T0,
                queues=queue({"cpu": 8000})).status.state.reason is None


WIDE_MIDDLE = "spec: {wholeFlowAdmission: true, flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}, " \
              "{name: c, dependsOn: {targets: [a]}}]}"


def test_whole_flow_admission_waits_for_room_for_the_widest_stage_then_keeps_it():
    flow = jobflow(f"metadata: {{creationTimestamp: '{T0.isoformat()}'}}\n{WIDE_MIDDLE}")
    templates = {name: template(name, spec=STAGE) for name in ("a", "b", "c")}  # b and c together: 16 CPU
    busy = queue({"cpu": 24000}, started("s", 16))
    held = plan(flow, templates=templates, jobs=[], now=T0, queues=busy)
    assert held.creates == [] and held.status.queue.requests == {"cpu": "16", "memory": "8Gi"}
    assert plan(flow.model_copy(update={"spec": flow.spec.model_copy(update={"whole_flow_admission": None})}),
                templates=templates, jobs=[], now=T0, queues=busy).creates  # the default: a fits, a starts
    free = plan(flow, templates=templates, jobs=[], now=T0, queues=queue({"cpu": 24000}, started("s", 8)))
    assert [c.flow for c in free.creates] == ["a"]
    assert free.status.queue.reserved == {"cpu": "16", "memory": "8Gi"}  # a runs, the widest stage is kept


def test_a_jobflow_blocked_for_another_reason_holds_no_place_in_line():
    blocked = {"metadata": {"namespace": "ns", "name": "x", "creationTimestamp": "2026-01-02T03:04:05Z"},
               "status": {"state": {"phase": "Pending", "reason": "TemplateNotFound"}}}
    assert in_line(blocked).queue == ""
    view = queue({"cpu": 8000}, in_line(blocked))
    assert admit(view["gpu"], namespace="default", name="y", created=T0, needs={"cpu": 8000}).start
    was_waiting = chain(status={"queue": {"name": "gpu", "state": "Waiting", "position": 1}})
    assert plan(was_waiting, templates={}, jobs=[], now=T0, queues=queue()).status.queue is None


# --- what can never fit takes no place in line --------------------------------------------------------------------

def wide_middle(name: str = "test", *, created: datetime = T0, whole: bool = True, status: dict | None = None):
    return jobflow(f"metadata: {{name: {name}, creationTimestamp: '{created.isoformat()}'}}\n"
                   + WIDE_MIDDLE.replace("wholeFlowAdmission: true", f"wholeFlowAdmission: {str(whole).lower()}"),
                   status=status)


def test_whole_flow_admission_whose_widest_stage_can_never_fit_is_blocked_with_the_numbers_not_waiting():
    templates = {name: template(name, spec=STAGE) for name in ("a", "b", "c")}  # b and c together: 16 CPU
    result = plan(wide_middle(), templates=templates, jobs=[], now=T0, queues=queue({"cpu": 12000}))
    assert result.creates == []
    assert (result.status.state.phase, result.status.state.reason) == ("Pending", "Unschedulable")
    assert result.status.state.message == (
        'JobFlow "default/test": its stage of flows "b", "c" (wholeFlowAdmission starts it only with room for them '
        'all) needs 16 CPU, 8Gi memory at once, more cpu than Volcano queue "gpu" can ever hold (12 CPU, its '
        "capability): remove wholeFlowAdmission (its stages then run as the queue has room), lower minAvailable or "
        "the requests, or raise the queue's capability; nothing was created")
    assert [e.reason for e in result.events if e.type == "Warning"] == ["Unschedulable"]
    assert result.status.queue is None  # no place in line
    assert in_line(wide_middle().model_copy(update={"status": result.status}).to_wire()).queue == ""


def test_a_jobflow_behind_one_whose_widest_stage_can_never_fit_starts():
    templates = {name: template(name, spec=STAGE) for name in ("a", "b", "c")}
    never = wide_middle("never", created=T0 - timedelta(seconds=1))
    blocked = plan(never, templates=templates, jobs=[], now=T0, queues=queue({"cpu": 12000})).status
    line = in_line(never.model_copy(update={"status": blocked}).to_wire())
    behind = plan(chain(), templates=stage_templates(), jobs=[], now=T0, queues=queue({"cpu": 12000}, line))
    assert [c.flow for c in behind.creates] == ["a"]


def test_a_jobflow_waiting_before_its_widest_stage_was_found_never_to_fit_leaves_the_line():
    """A status written while it waited (by an engine that kept it first in line) is replaced at its next look."""
    templates = {name: template(name, spec=STAGE) for name in ("a", "b", "c")}
    was = wide_middle(status={"queue": {"name": "gpu", "state": "Waiting", "position": 1, "requests": {"cpu": "16"}}})
    assert plan(was, templates=templates, jobs=[], now=T0, queues=queue({"cpu": 12000})).status.queue is None


def test_whole_flow_admission_adds_up_a_stage_per_queue():
    """b on queue gpu and c on queue cpu: each queue holds 8 of the stage's 16 CPU, and each has 12."""
    templates = {"a": template("a", spec=STAGE), "b": template("b", spec=STAGE),
                 "c": template("c", spec=STAGE.replace("queue: gpu", "queue: cpu"))}
    queues = {**queue({"cpu": 12000}), "cpu": QueueView(name="cpu", capacity={"cpu": 12000})}
    result = plan(wide_middle(), templates=templates, jobs=[], now=T0, queues=queues)
    assert [c.flow for c in result.creates] == ["a"]
    assert result.status.queue.reserved == {"cpu": "8", "memory": "4Gi"}


def test_first_stages_that_never_fit_all_at_once_start_on_an_otherwise_empty_queue():
    """Written for upstream: two roots of 8 CPU each on a 12-CPU queue. Each gang fits, both together never do:
    the JobFlow starts them when nothing else holds the queue (Volcano runs one, then the other), rather than
    waiting for 16 CPU for ever, first in line."""
    roots = jobflow(f"metadata: {{creationTimestamp: '{T0.isoformat()}'}}\nspec: {{flows: [{{name: a}}, {{name: b}}]}}")
    result = plan(roots, templates=stage_templates(), jobs=[], now=T0, queues=queue({"cpu": 12000}))
    assert [c.flow for c in result.creates] == ["a", "b"]
    busy = plan(roots, templates=stage_templates(), jobs=[], now=T0, queues=queue({"cpu": 12000}, started("s", 2)))
    assert busy.creates == [] and busy.status.queue.state == "Waiting"
    view = queue({"cpu": 12000}, waiting("older", cpu=16, created=T0 - timedelta(seconds=1)))["gpu"]
    assert not admit(view, namespace="default", name="test", created=T0, needs={"cpu": 2000}).start


def test_admission_warns_of_a_whole_flow_stage_its_queue_can_never_hold_once():
    from jobflow_core.queueing.line import unschedulable

    templates = {name: template(name, spec=STAGE) for name in ("a", "b", "c")}
    [warning] = unschedulable(wide_middle(), templates=templates, queues=queue({"cpu": 12000}))
    assert warning.startswith('JobFlow "default/test": its stage of flows "b", "c" (wholeFlowAdmission')
    assert unschedulable(wide_middle(whole=False), templates=templates, queues=queue({"cpu": 12000})) == []
    gangs = unschedulable(wide_middle(), templates=templates, queues=queue({"cpu": 6000}))
    assert [w.split(":")[0] for w in gangs] == [f'JobFlow "default/test", flow "{n}" (JobTemplate "{n}")'
                                                for n in "abc"]  # each gang said once, not its stage again


LINE_SHAPES = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3), st.sampled_from([1, 2, 3]),
                                 st.sampled_from([1, 2, 3]), st.booleans(), st.integers(0, 2)),
                       min_size=1, max_size=6)


def shaped(index: int, roots: int, middle: int, root_cpu: int, middle_cpu: int, whole: bool, second: int):
    """A JobFlow of ``roots`` roots, then ``middle`` flows depending on all of them; each a gang of 4 pods."""
    names = [f"r{i}" for i in range(roots)]
    flows = [{"name": n, "jobTemplate": f"cpu{root_cpu}"} for n in names] + [
        {"name": f"m{i}", "jobTemplate": f"cpu{middle_cpu}", "dependsOn": {"targets": names}} for i in range(middle)]
    created = (T0 + timedelta(seconds=second)).isoformat()
    return jobflow(f"metadata: {{name: f{index}, creationTimestamp: '{created}'}}\n"
                   f"spec: {json.dumps({'wholeFlowAdmission': whole, 'flows': flows})}")


@settings(deadline=None, max_examples=60)
@given(LINE_SHAPES, st.integers(4, 40), st.randoms(use_true_random=False))
def test_the_line_always_progresses_what_can_never_fit_never_blocks_what_can(drawn, cpu, rng):
    """JobFlows of every shape share a queue, none started; each is reconciled, in any order, until nothing
    changes (no vcjob ends meanwhile). One that can never start (a first stage's gang, or with wholeFlowAdmission
    any stage, beyond the queue) is Unschedulable and in no line, and one that can waits only behind a started
    JobFlow, whose vcjobs end and free the room: never for one that can never run, nor for nothing."""
    templates = {f"cpu{n}": template(f"cpu{n}", spec=STAGE.replace("cpu: 2", f"cpu: {n}")) for n in (1, 2, 3)}
    flows = {f"f{i}": shaped(i, *shape) for i, shape in enumerate(drawn)}
    capacity = cpu * 1000

    def can_start(index: int) -> bool:
        roots, middle, root_cpu, middle_cpu, whole, _ = drawn[index]
        if not whole:
            return 4000 * root_cpu <= capacity  # a later gang that never fits blocks the flow when its turn comes
        return 4000 * max(root_cpu, middle_cpu, roots * root_cpu, middle * middle_cpu) <= capacity

    started: set[str] = set()
    for _ in range(3 * len(flows) + 2):
        changed = False
        for name in rng.sample(sorted(flows), len(flows)):
            if name in started:
                continue  # its vcjobs run on; its status keeps what it reserves
            view = QueueView(name="gpu", capacity={"cpu": capacity},
                             jobflows=tuple(in_line(f.to_wire()) for f in flows.values()))
            result = plan(flows[name], templates=templates, jobs=[], now=T0, queues={"gpu": view})
            if result.creates:
                started.add(name)
            changed |= result.status != flows[name].status
            flows[name] = flows[name].model_copy(update={"status": result.status})
        if not changed:
            break
    assert not changed, "the decisions settle"
    for index, name in enumerate(flows):
        status = flows[name].status
        if not can_start(index):
            assert status.state.reason == "Unschedulable" and status.queue is None and name not in started
        elif name not in started:
            assert status.state.reason == "WaitingForQueue" and started, "it waits only behind a started JobFlow"


def test_a_webhook_that_cannot_read_warns_of_nothing_and_logs_why_once(caplog):
    from apiclient.rest import ApiError
    from handlers import create_app
    from memory_kube import MemoryKube

    class Forbidden(MemoryKube):
        def list_jobtemplates(self, namespace: str) -> list[dict]:
            raise ApiError(403, "Forbidden")

    client = create_app({"KUBE": Forbidden(), "TESTING": True, "VCJOB_SPEC_SCHEMA": None}).test_client()
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u1", "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobFlow"},
        "operation": "CREATE", "namespace": "default", "object": chain().to_wire()}}
    with caplog.at_level("INFO", logger="handlers.webhooks"):
        answers = [client.post("/validate/jobflows", json=review).json["response"] for _ in range(2)]
    assert [(a["allowed"], a.get("warnings")) for a in answers] == [(True, None)] * 2
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "handlers.webhooks"]
    assert [level for level, _ in logged] == ["WARNING", "INFO"]
    assert logged[0][1].startswith("the webhook cannot read the JobTemplates, queues or nodes (403 Forbidden), so "
                                   "it warns of no JobFlow that can never be scheduled: give its ServiceAccount a "
                                   "token and ClusterRole jobflow-admission")
