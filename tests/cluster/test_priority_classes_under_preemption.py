"""The engine's PriorityClasses under Volcano's ``preempt`` and ``reclaim`` actions: a vcjob of class
``volcano-jobflow-started`` or ``volcano-jobflow-at-risk`` (``preemptionPolicy: Never``, manifests/priorityclasses.yaml)
evicts no running pod of lower priority, while a class of the same value with ``PreemptLowerPriority`` does (the
control: the same setup can fail).

The cluster's own scheduler runs what a default Volcano install runs (``enqueue, allocate, backfill``,
devcluster/config/volcano-scheduler.conf). For these tests only, ``vc-scheduler`` is restarted with the same plugins
and ``actions: "enqueue, allocate, preempt, reclaim, backfill"`` (a copy of the conf in the test's tmp_path; the
original file is watched by every running devcluster's scheduler, so it is never written), at ``--v=3`` so that its log
shows each action reaching the pod, and restarted as it was afterwards.

How Volcano 1.14.1 decides (pkg/scheduler/actions/preempt/preempt.go ``taskEligibleToPreempt``,
pkg/scheduler/actions/reclaim/reclaim.go ``Execute``): it reads the *pod's* ``spec.preemptionPolicy``, which the API
server's Priority admission copies from the PriorityClass when the pod is created (Volcano's job controller gives the
pods the vcjob's ``priorityClassName`` when their template names none).

Two setups, one per action:

* preempt (within one queue): queue capability 4 CPU, full of a low vcjob's 4 pods of 1 CPU (no PriorityClass,
  ``minAvailable: 1``, so 3 of them are elastic and the newcomer passes ``enqueue``); the newcomer asks 1 CPU.
* reclaim (across queues): a reclaimable queue whose low vcjob fills every kwok node's memory; the newcomer, in a
  queue of its own, asks 1Gi, so no node has room and its queue is under its deserved share.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster import processes
from devcluster.cluster import CONFIG, PRIORITY_CLASSES
from devcluster.objects import install_priority_classes
from devcluster.testing import LocalCluster
from jobflow_core.queueing.line import AT_RISK_PRIORITY_CLASS, PRIORITY_CLASS
from jobflow_core.vocabulary.api import QUEUE
from objects import apply

pytestmark = pytest.mark.cluster

ACTIONS = "enqueue, allocate, preempt, reclaim, backfill"
WATCH_SECONDS = 15
"""How long nothing may be evicted once the scheduler has shown it considered the newcomer (30 cycles of 500 ms)."""
EVICT_SECONDS = 60
"""How long the control may take to evict."""


# --- the scheduler with preempt and reclaim ------------------------------------------------------------------------

def _restart_scheduler(cluster: LocalCluster, args: list[str] | None = None) -> tuple[list[str], Callable[[], str]]:
    """Stop ``vc-scheduler`` and start it again with ``args`` (default: the ones it runs with), same binary,
    environment and cwd (as :meth:`LocalCluster.restart`). Returns the arguments it ran with, and a reader of what the
    new process has logged."""
    [old] = [c for c in cluster.state.components if c.name == "vc-scheduler"]
    proc = Path(f"/proc/{old.pid}")
    before = [arg.decode() for arg in (proc / "cmdline").read_bytes().split(b"\0")[1:-1]]
    env = dict(line.split(b"=", 1) for line in (proc / "environ").read_bytes().split(b"\0") if b"=" in line)
    cwd = (proc / "cwd").resolve()
    log = Path(old.log)
    old.stop()
    offset = log.stat().st_size
    new = processes.start(old.name, Path(old.binary), before if args is None else args,
                          log_dir=cluster.state.log_dir, cwd=cwd,
                          env={key.decode(): value.decode() for key, value in env.items()})
    cluster.state.components[cluster.state.components.index(old)] = new
    cluster.state.save()

    def logged() -> str:
        with open(log, "rb") as text:
            text.seek(offset)
            return text.read().decode(errors="replace")

    cluster.wait_until("vc-scheduler loaded its conf", lambda: "Finished loading scheduler config" in logged(),
                       timeout=30)
    return before, logged


def _with_flags(args: list[str], flags: dict[str, str]) -> list[str]:
    return [arg for arg in args if arg.split("=", 1)[0] not in flags] + [f"{k}={v}" for k, v in flags.items()]


@pytest.fixture
def scheduler_log(cluster: LocalCluster, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """``vc-scheduler`` with preempt and reclaim for this test; what it logs meanwhile."""
    text = (CONFIG / "volcano-scheduler.conf").read_text()
    conf, count = re.subn(r'^actions: ".*"$', f'actions: "{ACTIONS}"', text, flags=re.M)
    assert count == 1, "devcluster/config/volcano-scheduler.conf has no `actions:` line to replace"
    (tmp_path / "volcano-scheduler.conf").write_text(conf)
    [current] = [c for c in cluster.state.components if c.name == "vc-scheduler"]
    original = [arg.decode() for arg in Path(f"/proc/{current.pid}/cmdline").read_bytes().split(b"\0")[1:-1]]
    _, logged = _restart_scheduler(cluster, _with_flags(original, {
        "--scheduler-conf": str(tmp_path / "volcano-scheduler.conf"), "--v": "3",
        "--disable-default-scheduler-config": "true"}))  # a conf it cannot read is fatal, not the default conf
    try:
        expected = "actions=[" + ACTIONS.replace(",", "") + "]"
        assert expected in logged(), f"vc-scheduler did not load {expected}:\n{logged()[-3000:]}"
        yield logged
    finally:
        _restart_scheduler(cluster, original)


# --- objects ------------------------------------------------------------------------------------------------------

def queue(cluster: LocalCluster, name: str, spec: dict) -> None:
    cluster.custom.create_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, {
        "apiVersion": QUEUE.api_version, "kind": QUEUE.kind, "metadata": {"name": name}, "spec": spec})
    cluster.wait_until(f"queue {name} Open", lambda: (cluster.custom.get_cluster_custom_object(
        QUEUE.group, QUEUE.version, QUEUE.plural, name).get("status") or {}).get("state") == "Open")


@pytest.fixture
def queues(cluster: LocalCluster, namespace: str) -> Iterator[Callable[[str, dict], str]]:
    """Make queues named after the test's namespace; deleted after the namespace (Volcano keeps a queue that still
    has PodGroups)."""
    made: list[str] = []

    def make(suffix: str, spec: dict) -> str:
        name = f"{suffix}-{namespace}"
        queue(cluster, name, spec)
        made.append(name)
        return name

    yield make
    cluster.delete_namespace(namespace)
    cluster.wait_until(f"namespace {namespace} gone", lambda: _gone(cluster, namespace), timeout=120)
    for name in made:
        cluster.custom.delete_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, name)


def _gone(cluster: LocalCluster, namespace: str) -> bool:
    try:
        cluster.core.read_namespace(namespace)
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


@pytest.fixture
def preempting_class(cluster: LocalCluster, namespace: str) -> Iterator[str]:
    """The control's PriorityClass: the at-risk class's value, ``PreemptLowerPriority``."""
    scheduling = client.SchedulingV1Api(cluster.api)
    name = f"preempting-{namespace}"
    scheduling.create_priority_class({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                      "metadata": {"name": name}, "value": 2000,
                                      "preemptionPolicy": "PreemptLowerPriority", "globalDefault": False})
    yield name
    scheduling.delete_priority_class(name)


def vcjob(name: str, *, queue: str, replicas: int, requests: dict[str, str], priority_class: str | None = None) -> str:
    """A vcjob whose pods run on kwok nodes until deleted (``keep-running``); ``minAvailable: 1``."""
    pc = f"\n  priorityClassName: {priority_class}" if priority_class else ""
    return f"""
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {{name: {name}}}
spec:
  minAvailable: 1
  schedulerName: volcano
  queue: {queue}{pc}
  tasks:
  - name: t
    replicas: {replicas}
    template:
      metadata: {{annotations: {{kwok.jobflow.dev/keep-running: "true"}}}}
      spec:
        restartPolicy: Never
        containers: [{{name: c, image: busybox, resources: {{requests: {requests}}}}}]
"""


def pods_of(cluster: LocalCluster, namespace: str, job: str) -> list[client.V1Pod]:
    return cluster.core.list_namespaced_pod(namespace, label_selector=f"volcano.sh/job-name={job}").items


def running(cluster: LocalCluster, namespace: str, job: str, count: int) -> dict[str, str] | None:
    """{uid: name} of the job's pods once exactly ``count`` of them run."""
    pods = [p for p in pods_of(cluster, namespace, job) if p.status.phase == "Running"
            and p.metadata.deletion_timestamp is None]
    return {p.metadata.uid: p.metadata.name for p in pods} if len(pods) == count else None


def evictions(cluster: LocalCluster, namespace: str) -> list[str]:
    """The messages of Volcano's ``Evict`` events on pods in ``namespace`` (cache.go ``defaultEvictor.Evict``; the
    PodGroup of the job that lost a pod gets one too)."""
    return [f"{e.involved_object.name}: {e.message}" for e in cluster.core.list_namespaced_event(namespace).items
            if e.reason == "Evict" and e.involved_object.kind == "Pod"]


def podgroup_phase(cluster: LocalCluster, namespace: str, job: str) -> str | None:
    groups = cluster.custom.list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", namespace,
                                                          "podgroups")["items"]
    for group in groups:
        if any(ref.get("name") == job for ref in group["metadata"].get("ownerReferences") or []):
            return (group.get("status") or {}).get("phase")
    return None


def fill(cluster: LocalCluster, namespace: str, action: str, queues: Callable[[str, dict], str]) -> tuple[str, dict]:
    """The low vcjob running, filling what ``action`` must free; returns the newcomer's queue and requests."""
    if action == "preempt":
        shared = queues("q", {"weight": 1, "reclaimable": False, "capability": {"cpu": "4"}})
        apply(cluster, namespace, vcjob("low", queue=shared, replicas=4, requests={"cpu": "1"}))
        return shared, {"cpu": "1"}
    nodes = cluster.core.list_node(label_selector="type=kwok").items
    memory = {n.status.allocatable["memory"] for n in nodes}
    assert len(memory) == 1, f"kwok nodes of different memory: {memory}"
    [per_node] = memory  # e.g. "256Gi": two pods of half of it per node
    gi = int(per_node.removesuffix("Gi"))
    low = queues("lo", {"weight": 1, "reclaimable": True})
    apply(cluster, namespace, vcjob("low", queue=low, replicas=2 * len(nodes), requests={"memory": f"{gi // 2}Gi"}))
    return queues("hi", {"weight": 1, "reclaimable": False}), {"memory": "1Gi"}


def start_newcomer(cluster: LocalCluster, namespace: str, *, queue: str, requests: dict, priority_class: str,
                   priority: int, preemption_policy: str) -> str:
    """The newcomer created, its pod carrying ``preemption_policy`` and its PodGroup Inqueue (preempt and reclaim skip
    Pending jobs) but not running: it can only run if something is evicted. Returns its pod's name."""
    apply(cluster, namespace, vcjob("urgent", queue=queue, replicas=1, requests=requests,
                                    priority_class=priority_class))
    [pod] = cluster.wait_until("the newcomer's pod", lambda: pods_of(cluster, namespace, "urgent"), timeout=60)
    assert (pod.spec.priority_class_name, pod.spec.priority) == (priority_class, priority)
    assert pod.spec.preemption_policy == preemption_policy  # the API server's Priority admission copied it
    cluster.wait_until("the newcomer's PodGroup Inqueue",
                       lambda: podgroup_phase(cluster, namespace, "urgent") == "Inqueue", timeout=60)
    assert not pod.spec.node_name
    return pod.metadata.name


# --- the tests ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("action", ["preempt", "reclaim"])
@pytest.mark.parametrize("priority_class", [AT_RISK_PRIORITY_CLASS, PRIORITY_CLASS])
def test_a_vcjob_of_the_engines_priority_classes_evicts_nothing_under_preempt_and_reclaim(
        cluster: LocalCluster, namespace: str, scheduler_log, queues, action: str, priority_class: str) -> None:
    installed = install_priority_classes(cluster.api, PRIORITY_CLASSES)
    assert priority_class in installed, f"manifests/priorityclasses.yaml ships no PriorityClass {priority_class}"
    shipped = client.SchedulingV1Api(cluster.api).read_priority_class(priority_class)
    assert shipped.preemption_policy == "Never"
    value = {AT_RISK_PRIORITY_CLASS: 2000, PRIORITY_CLASS: 1000}[priority_class]
    assert shipped.value == value
    where, requests = fill(cluster, namespace, action, queues)
    low = cluster.wait_until("the low vcjob's pods Running", lambda: running(
        cluster, namespace, "low", 4 if action == "preempt" else 2 * len(cluster.core.list_node(
            label_selector="type=kwok").items)), timeout=120)

    pod = start_newcomer(cluster, namespace, queue=where, requests=requests, priority_class=priority_class,
                         priority=value, preemption_policy="Never")
    # The action ran and reached the newcomer, and let it be for its policy (klog V(3) lines of Volcano 1.14.1).
    refusal = (f"Preemptor <{namespace}/{pod}> failed to preempt Task , err: not eligible to preempt other tasks "
               "due to preemptionPolicy is Never" if action == "preempt" else
               f"Task {namespace}/{pod} cannot preempt (policy Never)")
    cluster.wait_until(f"vc-scheduler's {action} turning the newcomer down", lambda: refusal in scheduler_log(),
                       timeout=30)

    def nothing_evicted() -> None:
        assert evictions(cluster, namespace) == []
        assert running(cluster, namespace, "low", len(low)) == low  # the same pods, none deleted or replaced

    deadline = time.monotonic() + WATCH_SECONDS
    while time.monotonic() < deadline:
        cluster.assert_alive()
        nothing_evicted()
        time.sleep(0.5)
    assert not cluster.core.read_namespaced_pod(pod, namespace).spec.node_name  # it still waits, as it should
    assert scheduler_log().count(refusal) >= 5  # turned down every cycle, not once


@pytest.mark.parametrize("action", ["preempt", "reclaim"])
def test_the_control_a_class_that_may_preempt_evicts_a_running_pod_in_the_same_setup(
        cluster: LocalCluster, namespace: str, scheduler_log, queues, preempting_class: str, action: str) -> None:
    where, requests = fill(cluster, namespace, action, queues)
    low = cluster.wait_until("the low vcjob's pods Running", lambda: running(
        cluster, namespace, "low", 4 if action == "preempt" else 2 * len(cluster.core.list_node(
            label_selector="type=kwok").items)), timeout=120)

    start_newcomer(cluster, namespace, queue=where, requests=requests, priority_class=preempting_class,
                   priority=2000, preemption_policy="PreemptLowerPriority")
    evicted = cluster.wait_until(f"Volcano's {action} evicting a low pod", lambda: evictions(cluster, namespace),
                                 timeout=EVICT_SECONDS)
    assert all(f"Pod is evicted, because of {action}" in message for message in evicted), evicted
    assert {message.split(":")[0] for message in evicted} <= set(low.values())
    cluster.wait_until("the newcomer running in the room freed", lambda: running(cluster, namespace, "urgent", 1),
                       timeout=60)
