"""What a reconcile reads about Volcano queues (``handlers/queues.py``): the line only when it can change the answer,
and from the event's snapshot when it carries one; the Queue, the nodes and the PriorityClass at most every few
seconds. The API calls of a JobFlow's first reconcile are pinned here, so that a feature that adds a request to
every reconcile fails a test (issue 25: match upstream's API requests)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from apiclient.watch_cache import WatchCache
from handlers.jobflows import Reconciler
from jobflow_core.queueing.line import PRIORITY_CLASS
from jobflow_core.vocabulary.api import JOBFLOW
from memory_kube import MemoryKube
from scenario import T0

NS = "default"
KUBE_CALLS = ("get_", "list_", "create_", "replace_", "record_", "remove_", "delete_")
DIAMOND = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME, namespace: default}
spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}, {name: c, dependsOn: {targets: [a]}},
               {name: d, dependsOn: {targets: [b, c]}}]}
"""
NODE = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "8", "memory": "16Gi"},
                                              "conditions": [{"type": "Ready", "status": "True"}]}}
FIRST_RECONCILE = ["list_jobtemplates", "replace_jobflow_status", "record_event", "create_vcjob", "record_event",
                   "replace_jobtemplate_status"]
"""A diamond's first reconcile from a snapshot, as before queues were read: its four JobTemplates (one LIST), the
status (guarded: a snapshot's plan creates only after it) and its Event, vcjob ``a`` and its ``Created`` Event, and
JobTemplate ``a``'s status."""
QUEUE_READS = ["get_queue", "list_nodes", "get_priority_class"]


class Recording(MemoryKube):
    """A MemoryKube that records the name of each API call, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __getattribute__(self, name: str):
        found = super().__getattribute__(name)
        if name.startswith(KUBE_CALLS) and callable(found):
            def recorded(*args, **kwargs):
                self.calls.append(name)
                return found(*args, **kwargs)
            return recorded
        return found


def template(name: str, *, queue: str = "default", cpu: str = "100m") -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"minAvailable": 1, "queue": queue, "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}]}}


@pytest.fixture
def kube() -> Recording:
    """A cluster with two ready nodes, Volcano's ``default`` queue (no capability: the nodes are its capacity), the
    PriorityClass installed and the diamond's JobTemplates."""
    kube = Recording()
    kube.nodes = [NODE, NODE | {"metadata": {"name": "m"}}]
    kube.queues["default"] = {"metadata": {"name": "default"}, "spec": {"weight": 1}}
    kube.priority_classes[PRIORITY_CLASS] = {"metadata": {"name": PRIORITY_CLASS}}
    for name in "abcd":
        kube.put(template(name))
    return kube


def snapshot_of(kube: MemoryKube, name: str) -> dict:
    """The snapshot our event source would send with the JobFlow's event (its cache fed every JobFlow)."""
    cache = WatchCache()
    for (kind, _, _), obj in kube.objects.items():
        if kind == "JobFlow":
            cache.note(JOBFLOW, obj, deleted=False)
    found = cache.snapshot(NS, name)
    assert found is not None
    return found


def first_reconcile(kube: Recording, reconciler: Reconciler, name: str, *, snapshot: bool = True) -> list[str]:
    kube.put(yaml.safe_load(DIAMOND.replace("NAME", name)))
    carried = snapshot_of(kube, name) if snapshot else None
    kube.calls.clear()
    assert reconciler.jobflow(NS, name, snapshot=carried).created == [f"{name}-a"]
    return list(kube.calls)


def test_a_plain_jobflow_s_first_reconcile_from_a_snapshot_reads_no_line_and_the_queue_once_per_process(kube):
    reconciler = Reconciler(kube, clock=lambda: kube.now)
    first = first_reconcile(kube, reconciler, "d1")
    assert sorted(first) == sorted(FIRST_RECONCILE + QUEUE_READS)
    assert first_reconcile(kube, reconciler, "d2") == FIRST_RECONCILE  # the queue was read less than 5 s ago


def test_a_queue_with_a_capability_is_its_capacity_the_nodes_are_not_listed(kube):
    kube.queues["default"]["spec"]["capability"] = {"cpu": "4"}
    calls = first_reconcile(kube, Reconciler(kube, clock=lambda: kube.now), "d1")
    assert "list_nodes" not in calls and "get_queue" in calls


def test_without_a_snapshot_the_line_is_listed_once_when_a_capacity_is_known(kube):
    calls = first_reconcile(kube, Reconciler(kube, clock=lambda: kube.now), "d1", snapshot=False)
    assert calls.count("list_jobflows") == 1


def test_without_a_known_capacity_the_line_is_not_read_at_all(kube):
    kube.nodes, kube.queues = [], {}  # as the namespaced install sees it: nothing is held back
    calls = first_reconcile(kube, Reconciler(kube, clock=lambda: kube.now), "d1", snapshot=False)
    assert "list_jobflows" not in calls


def test_the_line_a_snapshot_carries_holds_back_a_jobflow_as_the_listed_line_does(kube):
    """The queue holds one root stage (4 CPU); ``first`` started and reserves it: ``second`` waits, told the same
    whether the line came with the event or was listed."""
    kube.queues["default"]["spec"]["capability"] = {"cpu": "4"}
    for name in "abcd":
        kube.put(template(name, cpu="4"))
    reconciler = Reconciler(kube, clock=lambda: kube.now)
    first_reconcile(kube, reconciler, "first")
    kube.put(yaml.safe_load(DIAMOND.replace("NAME", "second")))
    carried = snapshot_of(kube, "second")
    assert [(entry["name"], entry["started"]) for entry in carried["line"]] == [("first", True)]
    kube.calls.clear()
    assert reconciler.jobflow(NS, "second", snapshot=carried).created == []
    assert "list_jobflows" not in kube.calls
    from_snapshot = kube.stored(JOBFLOW, NS, "second")["status"]["queue"]
    assert reconciler.jobflow(NS, "second").created == []  # read and listed
    assert kube.stored(JOBFLOW, NS, "second")["status"]["queue"] == from_snapshot
    assert (from_snapshot["state"], from_snapshot["position"]) == ("Waiting", 1)


def test_a_snapshot_carries_only_the_jobflows_its_admission_can_count(kube):
    """Started ones that reserve room and older ones that wait; not younger ones, ended ones, or its own."""
    def flow(name: str, second: int, status: dict | None = None) -> None:
        raw = yaml.safe_load(DIAMOND.replace("NAME", name))
        raw["metadata"]["creationTimestamp"] = (T0 + timedelta(seconds=second)).isoformat().replace("+00:00", "Z")
        kube.put(raw | ({"status": status} if status else {}))

    flow("running", 0, {"queue": {"name": "default", "state": "Admitted", "reserved": {"cpu": "1"}},
                        "state": {"phase": "Running"}})
    flow("done", 1, {"state": {"phase": "Succeed"}, "jobStatusList": [{"name": "done-a"}]})
    flow("older", 2, {"queue": {"name": "default", "state": "Waiting", "position": 1, "requests": {"cpu": "2"}},
                      "state": {"phase": "Pending"}})
    flow("new", 3)
    flow("younger", 4)
    line = snapshot_of(kube, "new")["line"]
    assert sorted(entry["name"] for entry in line) == ["older", "running"]
    assert "line" not in snapshot_of(kube, "running")  # started: nothing holds it back (no JobFlow at risk)
