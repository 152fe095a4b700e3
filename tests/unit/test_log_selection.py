"""Which containers' logs a selection of a JobFlow means, in which order and under which prefix, and what is said of
the flows that show none (:mod:`jobflow_core.insight.logs`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jobflow_core.insight.logs import Pod, Selection, parse_job_name, plan
from jobflow_core.models import JobFlow, VcJob
from jobflow_core.vocabulary.naming import attempt_job_name
from log_objects import jobflow, pod, vcjob


def planned(spec: dict, jobs: list[dict], pods: list[dict], **selection):
    return plan(JobFlow.model_validate(spec), jobs=[VcJob.model_validate(job) for job in jobs],
                pods=[Pod.of(p) for p in pods], selection=Selection(**selection))


def prefixes(result) -> list[str]:
    return [stream.prefix for stream in result.streams]


RUNNING = [vcjob("test-a", phase="Completed"), vcjob("test-b-0"), vcjob("test-b-1"), vcjob("test-b-2")]
PODS = [pod("test-b-2"), pod("test-b-0"), pod("test-a", containers={"main": "terminated"}), pod("test-b-1")]


def test_every_flow_in_dag_order_then_each_item_by_index_each_line_prefixed_with_flow_item_pod_and_container():
    result = planned(jobflow(), RUNNING, PODS)
    assert prefixes(result) == ["[a/main/test-a-main-0/main]", "[b/0/main/test-b-0-main-0/main]",
                                "[b/1/main/test-b-1-main-0/main]", "[b/2/main/test-b-2-main-0/main]"]
    assert result.notes == () and result.problem is None and not result.ended


def test_one_item_of_a_fan_out():
    assert prefixes(planned(jobflow(), RUNNING, PODS, flow="b", item=1)) == ["[b/1/main/test-b-1-main-0/main]"]


def test_pods_by_task_as_the_vcjob_lists_its_tasks_then_by_replica_as_a_number_init_containers_first():
    job = vcjob("test-a", tasks=("ps", "worker"))
    pods = [pod("test-a", task="worker", replica=10), pod("test-a", task="worker", replica=2),
            pod("test-a", task="ps", init={"setup": "terminated"}, containers={"main": "running", "side": "running"})]
    assert prefixes(planned(jobflow(), [job], pods, flow="a")) == [
        "[a/ps/test-a-ps-0/setup]", "[a/ps/test-a-ps-0/main]", "[a/ps/test-a-ps-0/side]",
        "[a/worker/test-a-worker-2/main]", "[a/worker/test-a-worker-10/main]"]


def test_one_container():
    pods = [pod("test-a", containers={"main": "running", "side": "running"})]
    assert prefixes(planned(jobflow(), [vcjob("test-a")], pods, container="side")) == ["[a/main/test-a-main-0/side]"]


def test_a_container_no_pod_has_is_said_with_the_containers_there_are():
    result = planned(jobflow(), [vcjob("test-a")], [pod("test-a")], container="sidecar")
    assert result.streams == ()
    assert [note.text for note in result.notes][-1] == (
        "no pod of the selection has a container 'sidecar' that has started: their containers are main")


def test_the_latest_attempt_by_default_and_the_one_asked_for_with_attempt():
    flow = jobflow()
    flow["spec"]["flows"][0]["retry"] = {"limit": 2}
    jobs = [vcjob("test-a", phase="Failed"), vcjob("test-a-r1")]
    pods = [pod("test-a", containers={"main": "terminated"}), pod("test-a-r1")]
    assert prefixes(planned(flow, jobs, pods, flow="a")) == ["[a/main/test-a-r1-main-0/main]"]
    assert [(s.prefix, s.attempt) for s in planned(flow, jobs, pods, flow="a", attempt=1).streams] == [
        ("[a/main/test-a-main-0/main]", 1)]
    [note] = planned(flow, jobs, pods, flow="a", attempt=3).notes
    assert (note.text, note.pending) == ("flow a has no attempt 3 (yet): its attempts are 1-2", True)


def test_a_vcjob_deleted_by_the_retain_policy_is_said_with_the_result_the_status_kept():
    flow = jobflow(state={"phase": "Succeed"}, jobStatusList=[
        {"name": "test-a", "state": "Completed", "result": "42 rows"},
        *({"name": f"test-b-{i}", "state": "Completed"} for i in range(3))])
    flow["spec"]["jobRetainPolicy"] = "delete"
    result = planned(flow, [], [])
    assert result.streams == () and result.ended
    assert [(note.flow, note.text, note.pending) for note in result.notes] == [
        ("a", "flow a: vcjob test-a was deleted (jobRetainPolicy: delete); its logs are gone with its pods; the "
              "status kept its result: 42 rows", False),
        ("b", "flow b, items 0-2: vcjobs test-b-0, test-b-1, test-b-2 were deleted (jobRetainPolicy: delete); "
              "their logs are gone with their pods", False)]


def test_a_vcjob_the_status_records_as_created_but_not_listed_yet_is_pending_not_deleted():
    flow = jobflow(jobStatusList=[{"name": "test-b-0", "state": "Pending"}])
    [note] = planned(flow, [vcjob("test-a")], [pod("test-a")], flow="b").notes
    assert (note.text, note.pending) == ("flow b, item 0: vcjob test-b-0 is not there yet", True)

def test_a_vcjob_whose_pods_are_gone_is_said_with_its_end():
    [note] = planned(jobflow(), [vcjob("test-a", phase="Aborted")], [], flow="a").notes
    assert note.text == ("flow a: vcjob test-a ended Aborted, and its pods are gone (deleted with the vcjob's end, "
                         "or by hand)")
    assert not note.pending


def test_a_flow_not_started_yet_is_pending_and_one_the_jobflow_ended_without_never_ran():
    waiting = jobflow(waitingFlows=[{"name": "b", "jobName": "test-b", "message": 'waiting for "a" to be Completed'}])
    notes = planned(waiting, [vcjob("test-a")], [pod("test-a")]).notes
    assert [(n.text, n.pending) for n in notes] == [('flow b has not started yet (waiting for "a" to be Completed)',
                                                     True)]
    ended = jobflow(state={"phase": "Failed"})
    assert [n.text for n in planned(ended, [], [], flow="b").notes] == [
        "flow b never ran: the JobFlow ended before it started"]


def test_a_skipped_flow_ran_nothing():
    flow = jobflow(skippedFlows=[{"name": "b", "jobName": "test-b", "message": "a failed"}])
    assert [n.text for n in planned(flow, [], [], flow="b").notes] == [
        "flow b was skipped (a failed): it ran nothing, so it has no logs"]


def test_a_container_that_has_not_started_is_pending():
    result = planned(jobflow(), [vcjob("test-a")], [pod("test-a", containers={"main": "waiting"})], flow="a")
    assert result.streams == ()
    assert [(n.text, n.pending) for n in result.notes] == [
        ("pod test-a-main-0: container main has not started yet (ContainerCreating)", True)]


def test_pods_of_a_vcjob_of_the_same_name_another_jobflow_owns_are_not_shown():
    other = vcjob("test-a", owner="uid-another-test")
    assert planned(jobflow(), [other], [pod("test-a")], flow="a").streams == ()
    stale = pod("test-a", owner="uid-of-a-deleted-test-a")  # a pod of an earlier vcjob of that name
    assert planned(jobflow(), [vcjob("test-a")], [stale], flow="a").streams == ()


def test_selections_that_name_nothing_say_what_to_do():
    assert planned(jobflow(), [], [], flow="c").problem.message == (
        "JobFlow ns/test has no flow 'c': its flows are a, b")
    problem = planned(jobflow(), [], [], item=1).problem
    assert (problem.message, problem.usage) == ("--item 1 needs a FLOW: kubectl jobflow logs test FLOW --item 1", True)
    problem = planned(jobflow(), [], [], flow="a", item=0).problem
    assert problem.usage and problem.message.startswith("flow a has no items or iterations")


def test_an_iteration_of_a_repeat_flow():
    flow = jobflow()
    flow["spec"]["flows"][1] = {"name": "b", "repeat": {"until": "true", "limit": 3}}
    result = planned(flow, [vcjob("test-b-0", phase="Completed"), vcjob("test-b-1")],
                     [pod("test-b-0", containers={"main": "terminated"}), pod("test-b-1")], flow="b")
    assert prefixes(result) == ["[b/0/main/test-b-0-main-0/main]", "[b/1/main/test-b-1-main-0/main]"]
    assert all(stream.iterations for stream in result.streams)


@given(jobflow=st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True),
       flow=st.from_regex(r"[a-z][a-z0-9-]{0,6}[a-z0-9]", fullmatch=True),
       index=st.one_of(st.none(), st.integers(0, 2000)), attempt=st.integers(1, 1000))
def test_a_vcjob_name_is_read_back_as_the_item_and_attempt_it_was_made_for(jobflow, flow, index, attempt):
    name = attempt_job_name(jobflow=jobflow, flow=flow, attempt=attempt, index=index)
    assert parse_job_name(name, jobflow=jobflow, flow=flow, fan_out=index is not None) == (index, attempt)
    assert parse_job_name(name, jobflow=jobflow, flow=flow, fan_out=index is None) is None


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2), st.sampled_from(["main", "ps"]),
                          st.integers(0, 3), st.sampled_from(["running", "terminated", "waiting"])), max_size=12))
def test_every_started_container_of_the_selection_appears_once_under_a_prefix_of_its_own(specs):
    pods: dict[str, dict] = {}
    for flow, item, task, replica, state in specs:
        job = "test-a" if flow == "a" else f"test-b-{item}"
        made = pod(job, task=task, replica=replica, containers={"main": state, "side": "running"})
        pods[made["metadata"]["name"]] = made
    jobs = [vcjob(name, tasks=("main", "ps")) for name in ("test-a", "test-b-0", "test-b-1", "test-b-2")]
    result = planned(jobflow(), jobs, list(pods.values()))
    shown = [(s.pod, s.container) for s in result.streams]
    started = [(name, c["name"]) for name, p in pods.items() for c in p["status"]["containerStatuses"]
               if "waiting" not in c["state"]]
    assert sorted(shown) == sorted(started)
    assert len(set(prefixes(result))) == len(shown)
    assert sorted(n.text for n in result.notes if n.text.startswith("pod ")) == sorted(
        f"pod {name}: container main has not started yet (ContainerCreating)" for name, p in pods.items()
        if "waiting" in p["status"]["containerStatuses"][0]["state"])


def test_a_pod_that_only_carries_a_vcjobs_label_without_its_owner_reference_is_not_shown():
    anyones = pod("test-a")
    anyones["metadata"]["ownerReferences"] = []  # made by anyone who may create pods, labelled to claim test-a
    assert planned(jobflow(), [vcjob("test-a")], [anyones], flow="a").streams == ()
