"""Flows that finish, on the real control plane: Volcano's scheduler, a Volcano queue capped by its ``capability``,
kwok nodes, and PriorityClass ``volcano-jobflow-started`` from ``manifests/priorityclasses.yaml`` (the tests' cluster
installs it, as docs/scheduling.md tells operators to; one test takes it away to see the engine say it is missing).

The queue of each test holds one gang at a time (4 CPU; each stage is two pods of 2 CPU, ``minAvailable: 2``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster.cluster import PRIORITY_CLASSES
from devcluster.objects import install_priority_classes
from devcluster.testing import LocalCluster
from jobflow_core.queueing.line import AT_RISK_PRIORITY_CLASS, PRIORITY_CLASS
from jobflow_core.queueing.status import NO_PRIORITY_CLASS
from jobflow_core.vocabulary.api import QUEUE
from objects import apply, events_of, jobflow, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster


def stage(name: str, *, queue: str, run_for: str, cpu: int = 2) -> str:
    return f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {{name: {name}}}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: {queue}
  tasks:
  - name: t
    replicas: 2
    template:
      metadata: {{annotations: {{kwok.jobflow.dev/run-for: {run_for}}}}}
      spec:
        restartPolicy: Never
        containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def chain(name: str) -> str:
    return f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: {name}}}
spec: {{flows: [{{name: s1}}, {{name: s2, dependsOn: {{targets: [s1]}}}}]}}
"""


def whole_flow(name: str) -> str:
    """A JobFlow with ``wholeFlowAdmission`` whose widest stage is b and c together."""
    return f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: {name}}}
spec:
  wholeFlowAdmission: true
  flows: [{{name: a}}, {{name: b, dependsOn: {{targets: [a]}}}}, {{name: c, dependsOn: {{targets: [a]}}}}]
"""


def unschedulable(cluster: LocalCluster, namespace: str, name: str) -> dict:
    """JobFlow ``name``'s status once the engine blocked it as Unschedulable."""
    def blocked() -> dict | None:
        status = (jobflow(cluster, namespace, name) or {}).get("status") or {}
        return status if (status.get("state") or {}).get("reason") == "Unschedulable" else None

    return cluster.wait_until(f"JobFlow {name} blocked as Unschedulable", blocked, timeout=180)


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def queue(cluster: LocalCluster, namespace: str, request) -> Iterator[str]:
    """A Volcano queue of 4 CPU (or ``@pytest.mark.parametrize("queue", [cpu], indirect=True)``) for this test, and
    the engine's PriorityClass installed as the manifests have it (the cluster did; a cluster kept by an older
    checkout may not have)."""
    cpu = getattr(request, "param", 4)
    install_priority_classes(cluster.api, PRIORITY_CLASSES)
    name = f"q-{namespace}"
    cluster.custom.create_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, {
        "apiVersion": QUEUE.api_version, "kind": QUEUE.kind, "metadata": {"name": name},
        "spec": {"weight": 1, "reclaimable": False, "capability": {"cpu": str(cpu)}}})
    cluster.wait_until(f"queue {name} Open", lambda: (cluster.custom.get_cluster_custom_object(
        QUEUE.group, QUEUE.version, QUEUE.plural, name).get("status") or {}).get("state") == "Open")
    yield name
    cluster.delete_namespace(namespace)  # its vcjobs first: Volcano keeps a queue that still has PodGroups
    cluster.custom.delete_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, name)


@pytest.fixture
def without_priority_class(cluster: LocalCluster) -> Iterator[None]:
    """PriorityClass ``volcano-jobflow-started`` deleted for this test and installed again after it, whatever the
    test did: every other test runs with it, as a real install has it. Request it before ``engine``: a handler
    keeps what it read of the PriorityClass for 5 s (``handlers/queues.py``), and a new one has read nothing."""
    scheduling = client.SchedulingV1Api(cluster.api)

    def gone() -> bool:
        try:
            scheduling.read_priority_class(PRIORITY_CLASS)
        except ApiException as error:
            if error.status == 404:
                return True
            raise
        return False

    try:
        scheduling.delete_priority_class(PRIORITY_CLASS)
    except ApiException as error:
        if error.status != 404:
            raise
    try:
        cluster.wait_until(f"PriorityClass {PRIORITY_CLASS} deleted", gone)
        yield
    finally:
        install_priority_classes(cluster.api, PRIORITY_CLASSES)


def created_at(cluster: LocalCluster, namespace: str, name: str) -> str | None:
    job = vcjobs(cluster, namespace).get(name)
    return job["metadata"]["creationTimestamp"] if job else None


def test_a_started_jobflow_runs_its_next_stage_before_the_first_stages_of_ten_newer_jobflows(
        cluster: LocalCluster, namespace: str, queue: str, engine) -> None:
    apply(cluster, namespace, stage("s1", queue=queue, run_for="8s") + "---" + stage("s2", queue=queue,
                                                                                     run_for="1s"))
    apply(cluster, namespace, chain("old"))
    cluster.wait_until("old-s1 Running", lambda: cluster.vcjob_phase(namespace, "old-s1") == "Running", timeout=180)
    newer = [f"new-{i}" for i in range(10)]
    apply(cluster, namespace, "---".join(chain(name) for name in newer))

    def all_waiting() -> bool:
        queues = [((jobflow(cluster, namespace, n) or {}).get("status") or {}).get("queue") or {} for n in newer]
        return [(q.get("state"), q.get("position")) for q in queues] == [("Waiting", i + 1) for i in range(10)]

    cluster.wait_until("the ten newer JobFlows waiting in line, in the order they were created", all_waiting,
                       timeout=180)
    assert jobflow(cluster, namespace, "old")["status"]["queue"] == {"name": queue, "state": "Admitted",
                                                                     "reserved": {"cpu": "4"}}
    old = wait_for_phase(cluster, namespace, "old", "Succeed", timeout=240)
    jobs = vcjobs(cluster, namespace)
    assert jobs["old-s2"]["spec"]["priorityClassName"] == "volcano-jobflow-started"
    # The cost: each vcjob's gang (4 CPU) x the seconds it ran, as its own conditions tell, added up.
    ran = {name: seconds(job["status"]["state"]["lastTransitionTime"]) - seconds(next(
        c["lastTransitionTime"] for c in job["status"]["conditions"] if c["status"] == "Running"))
        for name, job in jobs.items() if name.startswith("old-")}
    costs = {r["name"]: r["cost"]["cpuSeconds"] for r in old["status"]["jobStatusList"]}
    assert costs == {name: 4 * ran[name] for name in ("old-s1", "old-s2")} and ran["old-s1"] >= 8
    assert old["status"]["cost"]["cpuSeconds"] == sum(costs.values())
    assert "priorityClassName" not in jobs["old-s1"]["spec"]
    # No first stage of a newer JobFlow was created before the old one's second stage ran to its end.
    old_end = jobs["old-s2"]["status"]["state"]["lastTransitionTime"]
    assert all(jobs[f"{n}-s1"]["metadata"]["creationTimestamp"] >= old_end for n in newer if f"{n}-s1" in jobs)
    # Then the newer ones, in line: one at a time, the first three in the order they were created.
    for name in newer[:3]:
        wait_for_phase(cluster, namespace, name, "Succeed", timeout=240)
    ends = [jobflow(cluster, namespace, n)["status"]["jobStatusList"][-1]["endTimestamp"] for n in newer[:3]]
    starts = [created_at(cluster, namespace, f"{n}-s1") for n in newer[:3]]
    assert starts[1] >= ends[0] and starts[2] >= ends[1]
    # Woken by the end of the one before, not found by the periodic look (RECHECK_SECONDS, 30 s).
    assert all(seconds(start) - seconds(end) <= 10 for start, end in zip(starts[1:], ends)), (starts, ends)
    later = [created_at(cluster, namespace, f"{n}-s1") for n in newer[3:]]
    assert all(start >= ends[2] for start in later if start is not None)


def test_a_gang_larger_than_its_queue_is_refused_at_run_time_with_the_numbers(
        cluster: LocalCluster, namespace: str, queue: str, engine) -> None:
    apply(cluster, namespace, stage("s1", queue=queue, run_for="1s", cpu=4) + "---" + stage("s2", queue=queue,
                                                                                            run_for="1s"))
    apply(cluster, namespace, chain("wide"))

    state = unschedulable(cluster, namespace, "wide")["state"]
    assert state["message"].startswith(
        f'flow "s1" of JobFlow "{namespace}/wide": its gang needs 8 CPU at once, more cpu than Volcano queue '
        f'"{queue}" can ever hold (4 CPU, its capability)')
    assert vcjobs(cluster, namespace) == {}


@pytest.mark.parametrize("queue", [8], indirect=True)
def test_whole_flow_admission_waits_for_room_for_the_widest_stage_then_starts(
        cluster: LocalCluster, namespace: str, queue: str, engine) -> None:
    apply(cluster, namespace, "---".join(stage(name, queue=queue, run_for="4s" if name == "s1" else "1s")
                                         for name in ("s1", "s2", "a", "b", "c")))
    apply(cluster, namespace, chain("old"))
    cluster.wait_until("old-s1 Running", lambda: cluster.vcjob_phase(namespace, "old-s1") == "Running", timeout=180)
    apply(cluster, namespace, whole_flow("whole"))

    def waiting() -> dict | None:
        q = ((jobflow(cluster, namespace, "whole") or {}).get("status") or {}).get("queue") or {}
        return q if q.get("state") == "Waiting" else None

    held = cluster.wait_until("the whole-flow JobFlow waiting for its widest stage", waiting, timeout=180)
    assert held["requests"] == {"cpu": "8"}  # b and c together, though a alone (4 CPU) would fit now
    assert "whole-a" not in vcjobs(cluster, namespace)
    old = wait_for_phase(cluster, namespace, "old", "Succeed", timeout=240)
    whole = wait_for_phase(cluster, namespace, "whole", "Succeed", timeout=240)
    started = vcjobs(cluster, namespace)["whole-a"]["metadata"]["creationTimestamp"]
    assert started >= old["status"]["jobStatusList"][-1]["endTimestamp"]
    assert whole["status"]["queue"]["state"] == "Admitted"


def test_a_whole_flow_jobflow_whose_widest_stage_can_never_fit_is_unschedulable_and_the_next_one_starts(
        cluster: LocalCluster, namespace: str, queue: str, engine) -> None:
    apply(cluster, namespace, "---".join(stage(name, queue=queue, run_for="1s") for name in ("s1", "s2", "a", "b",
                                                                                             "c")))
    apply(cluster, namespace, whole_flow("impossible"))

    status = unschedulable(cluster, namespace, "impossible")
    assert status["state"]["message"].startswith(
        f'JobFlow "{namespace}/impossible": its stage of flows "b", "c" (wholeFlowAdmission starts it only with '
        f'room for them all) needs 8 CPU at once, more cpu than Volcano queue "{queue}" can ever hold (4 CPU, its '
        "capability)")
    assert "queue" not in status  # it holds no place in line
    apply(cluster, namespace, chain("later"))  # created after it: behind it in line, were it in line
    wait_for_phase(cluster, namespace, "later", "Succeed", timeout=240)
    assert sorted(vcjobs(cluster, namespace)) == ["later-s1", "later-s2"]


def test_without_the_priorityclass_a_started_jobflow_says_so_once_and_its_next_vcjob_names_none(
        cluster: LocalCluster, namespace: str, without_priority_class: None, engine) -> None:
    apply(cluster, namespace, stage("s1", queue="default", run_for="1s") + "---" + stage("s2", queue="default",
                                                                                         run_for="1s"))
    apply(cluster, namespace, chain("old"))

    old = wait_for_phase(cluster, namespace, "old", "Succeed", timeout=180)
    assert old["status"]["queue"]["message"] == NO_PRIORITY_CLASS
    assert "kubectl apply -f manifests/priorityclasses.yaml" in NO_PRIORITY_CLASS  # it says what to do
    jobs = vcjobs(cluster, namespace)
    assert "priorityClassName" not in jobs["old-s2"]["spec"]  # one naming a missing class would get no pods
    warnings = [m for t, r, m in events_of(cluster, namespace, "old") if (t, r) == ("Warning", "PriorityClassMissing")]
    assert warnings == [NO_PRIORITY_CLASS]  # once, when its status first said so


def with_deadline(name: str, deadline: datetime) -> str:
    return chain(name).replace("spec: {flows:", f"spec: {{deadline: '{deadline.strftime('%Y-%m-%dT%H:%M:%SZ')}', "
                                                "flows:")


def template_timed(cluster: LocalCluster, namespace: str, name: str) -> bool:
    status = cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates",
                                                         name).get("status") or {}
    return bool(status.get("durationP50Seconds"))


def test_a_jobflow_at_risk_of_missing_its_deadline_overtakes_the_line_and_meets_it(
        cluster: LocalCluster, namespace: str, queue: str, engine) -> None:
    """One gang at a time: "old" runs, three newer JobFlows wait in line, each about 10 s. A JobFlow due in 35 s
    would start after all of them (about 40 s from now): it is at risk, goes ahead of the three and of old's second
    stage (its vcjobs carry the at-risk PriorityClass, which Volcano orders first), and meets its deadline."""
    apply(cluster, namespace, stage("s1", queue=queue, run_for="6s") + "---" + stage("s2", queue=queue,
                                                                                     run_for="1s"))
    apply(cluster, namespace, chain("warm"))  # the templates' statistics: what a forecast reads
    wait_for_phase(cluster, namespace, "warm", "Succeed", timeout=180)
    cluster.wait_until("the JobTemplates' statistics", lambda: all(
        template_timed(cluster, namespace, name) for name in ("s1", "s2")), timeout=60)
    apply(cluster, namespace, chain("old"))
    cluster.wait_until("old-s1 Running", lambda: cluster.vcjob_phase(namespace, "old-s1") == "Running", timeout=180)
    newer = [f"new-{i}" for i in range(3)]
    apply(cluster, namespace, "---".join(chain(name) for name in newer))
    cluster.wait_until("the newer JobFlows waiting in line", lambda: all(
        (((jobflow(cluster, namespace, n) or {}).get("status") or {}).get("queue") or {}).get("state") == "Waiting"
        for n in newer), timeout=60)

    due = datetime.now(UTC) + timedelta(seconds=35)
    apply(cluster, namespace, with_deadline("urgent", due))
    urgent = wait_for_phase(cluster, namespace, "urgent", "Succeed", timeout=180)
    jobs = vcjobs(cluster, namespace)
    assert jobs["urgent-s1"]["spec"]["priorityClassName"] == AT_RISK_PRIORITY_CLASS
    assert "new-0-s1" not in jobs or jobs["new-0-s1"]["metadata"]["creationTimestamp"] >= \
        jobs["urgent-s1"]["metadata"]["creationTimestamp"]
    if "old-s2" in jobs and "Running" in running_since(jobs["old-s2"]):  # old's second stage waited for it
        assert running_since(jobs["urgent-s1"])["Running"] <= running_since(jobs["old-s2"])["Running"]
    assert urgent["status"]["deadline"]["state"] == "Met", urgent["status"]["deadline"]
    said = [(t, r) for t, r, _ in events_of(cluster, namespace, "urgent") if r.startswith("Deadline")]
    # Events have one-second times: at risk, then (admitted, with its stages' turns to spare) on time may share one.
    assert ("Warning", "DeadlineAtRisk") in said and ("Normal", "DeadlineMet") in said, said
    assert said.count(("Warning", "DeadlineAtRisk")) <= 2 and said.count(("Normal", "DeadlineMet")) == 1, said
    for name in newer:  # held back, not starved: each still finishes
        wait_for_phase(cluster, namespace, name, "Succeed", timeout=240)


def running_since(job: dict) -> dict[str, str]:
    """When a vcjob first entered each phase, from its conditions."""
    found: dict[str, str] = {}
    for condition in (job.get("status") or {}).get("conditions") or ():
        found.setdefault(condition["status"], condition["lastTransitionTime"])
    return found


def test_the_what_if_expected_start_is_the_measured_one_within_a_stage(
        cluster: LocalCluster, namespace: str, queue: str, engine, cli, tmp_path) -> None:
    """``kubectl jobflow plan -f FILE --queue`` before the JobFlow exists: behind a running JobFlow and two waiting
    ones (about 10 s each on a queue of one gang), it says when it will start; created right after, it starts then
    (within one stage's time: Volcano's session period, kwok's pod start and the event path are not in the model)."""
    apply(cluster, namespace, stage("s1", queue=queue, run_for="6s") + "---" + stage("s2", queue=queue,
                                                                                     run_for="1s"))
    apply(cluster, namespace, chain("warm"))
    wait_for_phase(cluster, namespace, "warm", "Succeed", timeout=180)
    cluster.wait_until("the JobTemplates' statistics", lambda: all(
        template_timed(cluster, namespace, name) for name in ("s1", "s2")), timeout=60)
    apply(cluster, namespace, chain("old"))
    cluster.wait_until("old-s1 Running", lambda: cluster.vcjob_phase(namespace, "old-s1") == "Running", timeout=180)
    apply(cluster, namespace, chain("new-0") + "---" + chain("new-1"))
    cluster.wait_until("the newer JobFlows waiting in line, each with its expected run", lambda: all(
        (((jobflow(cluster, namespace, n) or {}).get("status") or {}).get("queue") or {}).get("expectedSeconds")
        for n in ("new-0", "new-1")), timeout=60)
    path = tmp_path / "probe.yaml"
    path.write_text(chain("probe"))

    code, out, err = cli("plan", "-f", str(path), "--queue", "-n", namespace, "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    answer = (data[0] if isinstance(data, list) else data)["queue"]
    assert jobflow(cluster, namespace, "probe") is None  # nothing was created
    assert answer["position"] == 3 and answer["widestStage"]["exceeds"] == []
    expected_start = seconds(answer["expectedStart"])
    apply(cluster, namespace, chain("probe"))
    wait_for_phase(cluster, namespace, "probe", "Succeed", timeout=240)
    created = vcjobs(cluster, namespace)["probe-s1"]["metadata"]["creationTimestamp"]
    measured = seconds(created)
    stage_seconds = max(1, seconds(answer["expectedCompletion"]) - expected_start) / 2
    print(f"what-if expected start {answer['expectedStart']}, measured {created}: {measured - expected_start:+.0f} s")
    assert abs(measured - expected_start) <= max(10.0, 2 * stage_seconds), (answer, measured)
