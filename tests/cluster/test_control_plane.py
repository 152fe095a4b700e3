"""The local control plane behaves like a real Volcano cluster: the tests that everything else builds on.

vcjobs here go through the real Volcano webhook, job controller and scheduler; kwok plays the kubelet and ends each
pod after the delay its ``kwok.jobflow.dev/run-for`` annotation asks for (``fail: "true"`` makes it fail).
"""

from __future__ import annotations

import pytest
import yaml

from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import VCJOB

pytestmark = pytest.mark.cluster


def vcjob(text: str) -> dict:
    return yaml.safe_load(text)


def create_vcjob(cluster: LocalCluster, namespace: str, body: dict) -> None:
    cluster.custom.create_namespaced_custom_object(VCJOB.group, VCJOB.version, namespace, VCJOB.plural, body)


def record_phases(cluster: LocalCluster, namespace: str, name: str, *, until: set[str], timeout: float = 90):
    """Poll the vcjob and return every distinct (phase, status) snapshot seen, until its phase is in ``until``."""
    seen: list[tuple[str, dict]] = []

    def final() -> bool:
        job = cluster.vcjob(namespace, name) or {}
        status = job.get("status") or {}
        phase = (status.get("state") or {}).get("phase")
        if phase and (not seen or seen[-1] != (phase, status)):
            seen.append((phase, status))
        return phase in until

    cluster.wait_until(f"vcjob {name} to reach one of {sorted(until)}", final, timeout=timeout, interval=0.1)
    return seen


def phase_sequence(seen: list[tuple[str, dict]]) -> list[str]:
    return [phase for i, (phase, _) in enumerate(seen) if i == 0 or seen[i - 1][0] != phase]


TWO_REPLICAS = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: two-pods}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: default
  tasks:
  - name: work
    replicas: 2
    template:
      metadata:
        annotations: {kwok.jobflow.dev/run-for: 3s}
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox}]
"""


def test_a_two_replica_vcjob_goes_pending_running_completed(cluster: LocalCluster, namespace: str) -> None:
    create_vcjob(cluster, namespace, vcjob(TWO_REPLICAS))

    seen = record_phases(cluster, namespace, "two-pods", until={"Completed", "Failed", "Terminated"})

    phases = phase_sequence(seen)
    assert phases[-1] == "Completed"
    assert phases.index("Pending") < phases.index("Running") < phases.index("Completed")
    running = [status["taskStatusCount"]["work"]["phase"] for phase, status in seen if phase == "Running"]
    assert {"Running": 2} in running, running
    pods = cluster.core.list_namespaced_pod(namespace).items
    assert sorted(p.status.phase for p in pods) == ["Succeeded", "Succeeded"]
    # Volcano keeps the phase history in status.conditions (and drops the pod counters once Completed).
    history = [c["status"] for c in seen[-1][1]["conditions"]]
    assert history[-2:] == ["Running", "Completed"]


FAILING_POD = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: failing}
spec:
  minAvailable: 1
  schedulerName: volcano
  queue: default
  maxRetry: 2
  policies: [{event: PodFailed, action: ACTION}]
  tasks:
  - name: work
    replicas: 1
    template:
      metadata:
        annotations: {kwok.jobflow.dev/fail: "true", kwok.jobflow.dev/run-for: 1s}
      spec:
        restartPolicy: Never
        containers: [{name: main, image: busybox}]
"""


def test_a_failed_pod_under_terminatejob_terminates_the_vcjob(cluster: LocalCluster, namespace: str) -> None:
    create_vcjob(cluster, namespace, vcjob(FAILING_POD.replace("ACTION", "TerminateJob")))

    seen = record_phases(cluster, namespace, "failing", until={"Terminated", "Failed", "Completed"})

    assert seen[-1][0] == "Terminated"


def test_restartjob_with_maxretry_exhausted_ends_failed(cluster: LocalCluster, namespace: str) -> None:
    create_vcjob(cluster, namespace, vcjob(FAILING_POD.replace("ACTION", "RestartJob")))

    seen = record_phases(cluster, namespace, "failing", until={"Failed", "Terminated", "Completed"})

    assert seen[-1][0] == "Failed"
    assert seen[-1][1]["retryCount"] == 2
    history = [c["status"] for c in seen[-1][1].get("conditions", [])]
    assert history.count("Restarting") >= 1, history


def test_volcano_webhook_defaults_a_bare_vcjob(cluster: LocalCluster, namespace: str) -> None:
    bare = vcjob("""
    apiVersion: batch.volcano.sh/v1alpha1
    kind: Job
    metadata: {name: bare}
    spec:
      tasks:
      - replicas: 3
        template: {spec: {restartPolicy: Never, containers: [{name: main, image: busybox}]}}
    """)
    create_vcjob(cluster, namespace, bare)

    spec = cluster.vcjob(namespace, "bare")["spec"]

    assert spec["queue"] == "default"
    assert spec["schedulerName"] == "volcano"
    assert spec["minAvailable"] == 3
    assert spec["maxRetry"] == 3
    assert spec["tasks"][0]["name"] == "default0"


def test_volcano_webhook_rejects_an_invalid_vcjob(cluster: LocalCluster, namespace: str) -> None:
    from kubernetes.client.rest import ApiException

    invalid = vcjob(TWO_REPLICAS)
    invalid["spec"]["minAvailable"] = -1
    with pytest.raises(ApiException) as rejected:
        create_vcjob(cluster, namespace, invalid)
    assert rejected.value.status in (400, 422)
    assert "minAvailable" in rejected.value.body


def test_deleting_an_owner_deletes_its_dependents(cluster: LocalCluster, namespace: str) -> None:
    owner = cluster.core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    reference = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid,
                 "controller": True, "blockOwnerDeletion": True}
    cluster.core.create_namespaced_config_map(namespace, {"metadata": {"name": "child",
                                                                       "ownerReferences": [reference]}})

    cluster.core.delete_namespaced_config_map("owner", namespace)

    def child_gone() -> bool:
        names = [c.metadata.name for c in cluster.core.list_namespaced_config_map(namespace).items]
        return "child" not in names

    assert cluster.wait_until("the garbage collector to delete the child", child_gone, timeout=30)


def test_our_crds_accept_a_server_side_dry_run_and_a_create(cluster: LocalCluster, namespace: str) -> None:
    objects = {
        "jobtemplates": vcjob("""
        apiVersion: flow.volcano.sh/v1alpha1
        kind: JobTemplate
        metadata: {name: a}
        spec: {tasks: [{name: main, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}]}
        """),
        "jobflows": vcjob("""
        apiVersion: flow.volcano.sh/v1alpha1
        kind: JobFlow
        metadata: {name: f}
        spec: {jobRetainPolicy: delete, flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}
        """),
    }
    for plural, body in objects.items():
        dry = cluster.custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, plural, body,
                                                             dry_run="All")
        assert dry["metadata"]["name"] == body["metadata"]["name"]
        listed = cluster.custom.list_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, plural)
        assert listed["items"] == [], "a dry run stores nothing"
        cluster.custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, plural, body)
        stored = cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, plural,
                                                             body["metadata"]["name"])
        assert stored["spec"]["tasks" if plural == "jobtemplates" else "flows"] == \
            body["spec"]["tasks" if plural == "jobtemplates" else "flows"]


def test_the_cluster_has_the_priorityclass_docs_scheduling_tells_operators_to_install(cluster: LocalCluster) -> None:
    from kubernetes import client

    from devcluster.cluster import CONFIG, PRIORITY_CLASSES

    wanted = {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(PRIORITY_CLASSES.read_text()) if doc}
    assert sorted(wanted) == ["volcano-jobflow-at-risk", "volcano-jobflow-started"]
    for name, value in (("volcano-jobflow-started", 1000), ("volcano-jobflow-at-risk", 2000)):
        installed = client.SchedulingV1Api(cluster.api).read_priority_class(name)
        assert (installed.value, installed.preemption_policy) == (value, "Never") and not installed.global_default
    plugins = [p["name"] for tier in yaml.safe_load((CONFIG / "volcano-scheduler.conf").read_text())["tiers"]
               for p in tier["plugins"]]
    assert "priority" in plugins  # what orders a queue's vcjobs by it
