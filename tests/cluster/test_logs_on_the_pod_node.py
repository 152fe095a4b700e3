"""``kubectl jobflow logs`` on real containers: the install tier's pod node (a real kubelet and containerd; kwok's pods
write no logs) runs the vcjobs' pods, the API server proxies their logs from the kubelet, and the engine runs
in-process against that cluster.

The JobFlow is ``a``, then ``b`` over three items. The JobTemplates tolerate the node's taint
(``jobflow.dev/pods=true:NoSchedule``, docs/control-plane.md "The pod node"), select it by hostname and run the image
the fixture imported there (``imagePullPolicy: Never``), whose ``python3`` prints the lines.

The second test restarts the API server while ``logs -f`` follows a container that counts: the log is asked again
from the last line shown (``sinceTime``, to the second), and every line is shown once, in order.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator

import pytest

from devcluster import image
from devcluster.testing import LocalCluster
from engine import start_engine
from kubectl_jobflow.cli import run
from objects import wait_for_phase

pytestmark = pytest.mark.cluster

LINES = {"a": 4, "b": 2}
"""Lines each container of a flow prints, a second apart."""


COUNT, EVERY = 60, 0.3
"""The counting container of the outage test: ``COUNT`` numbered lines, ``EVERY`` seconds apart (so several share
each second, which a reconnection asks for again)."""


def template(name: str, *, node: str, lines: int | None = None, every: float = 1) -> dict:
    script = (f"import time\nfor n in range({lines or LINES[name]}):\n    print('{name} line', n, flush=True)\n"
              f"    time.sleep({every})\n")
    pod = {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": node},
           "tolerations": [{"key": "jobflow.dev/pods", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
           "containers": [{"name": "main", "image": image.manifest_image(), "imagePullPolicy": "Never",
                           "command": ["python3", "-c", script]}]}
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default",
                     "tasks": [{"name": "main", "replicas": 1, "template": {"spec": pod}}]}}


def pod_node(cluster: LocalCluster) -> str:
    [name] = [node.metadata.name for node in cluster.core.list_node().items if node.metadata.name.startswith("pods-")]
    return name


@pytest.fixture
def fan_out(pods_cluster: LocalCluster, pods_namespace: str) -> Iterator[str]:
    """JobFlow ``logs``: ``a``, then ``b`` over three items, its pods on the pod node, the engine running it."""
    node = pod_node(pods_cluster)
    for name in LINES:
        pods_cluster.custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", pods_namespace,
                                                            "jobtemplates", template(name, node=node))
    engine = start_engine(pods_cluster, pods_namespace)
    flows = [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}, "forEach": {"items": ["x", "y", "z"]}}]
    pods_cluster.custom.create_namespaced_custom_object(
        "flow.volcano.sh", "v1alpha1", pods_namespace, "jobflows",
        {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "logs"},
         "spec": {"flows": flows}})
    yield "logs"
    engine.stop()


def jobflow_logs(cluster: LocalCluster, namespace: str, *argv: str,
                 out: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = out or io.StringIO(), io.StringIO()
    code = run(["logs", *argv, "-n", namespace, "--kubeconfig", str(cluster.state.kubeconfig)], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def expected() -> list[str]:
    lines = [f"[a/main/logs-a-main-0/main] a line {n}" for n in range(LINES["a"])]
    for item in range(3):
        lines += [f"[b/{item}/main/logs-b-{item}-main-0/main] b line {n}" for n in range(LINES["b"])]
    return lines


def test_logs_follows_the_later_flows_pods_until_the_jobflow_ends_then_shows_every_line_again(
        pods_cluster: LocalCluster, pods_namespace: str, fan_out: str) -> None:
    def a_runs() -> bool:
        pods = pods_cluster.core.list_namespaced_pod(pods_namespace, label_selector="volcano.sh/job-name=logs-a")
        return any(pod.status.phase == "Running" for pod in pods.items)

    pods_cluster.wait_until("flow a's pod runs on the pod node", a_runs, timeout=60)
    followed: list[tuple[int, str, str]] = []
    started = time.monotonic()
    follower = threading.Thread(target=lambda: followed.append(jobflow_logs(pods_cluster, pods_namespace, fan_out,
                                                                            "-f")))
    follower.start()
    follower.join(timeout=120)
    assert followed, "logs -f did not end within 120 s of the JobFlow's start"
    [(code, out, err)] = followed
    wait_for_phase(pods_cluster, pods_namespace, fan_out, "Succeed", timeout=10)  # -f ended because the JobFlow did
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert sorted(lines) == sorted(expected())  # every line once: a's as it ran, then b's items as they started
    for item in range(3):  # each stream in its own order
        ours = [line for line in lines if line.startswith(f"[b/{item}/")]
        assert ours == [line for line in expected() if line.startswith(f"[b/{item}/")]
    assert time.monotonic() - started < 120

    # Volcano makes each pod's controller its vcjob (by UID), which is what logs require of a pod, not only the label.
    listed = pods_cluster.custom.list_namespaced_custom_object("batch.volcano.sh", "v1alpha1", pods_namespace, "jobs")
    jobs = {job["metadata"]["name"]: job["metadata"]["uid"] for job in listed["items"]}
    for pod in pods_cluster.core.list_namespaced_pod(pods_namespace, label_selector="volcano.sh/job-name").items:
        [owner] = [ref for ref in pod.metadata.owner_references or () if ref.controller]
        assert (owner.kind, owner.uid) == ("Job", jobs[pod.metadata.labels["volcano.sh/job-name"]])

    assert jobflow_logs(pods_cluster, pods_namespace, fan_out) == (0, "\n".join(expected()) + "\n", "")
    assert jobflow_logs(pods_cluster, pods_namespace, fan_out, "b", "--item", "2", "--tail", "1") == (
        0, "[b/2/main/logs-b-2-main-0/main] b line 1\n", "")


@pytest.fixture
def counting(pods_cluster: LocalCluster, pods_namespace: str) -> Iterator[str]:
    """JobFlow ``outage``: one flow, ``count``, whose container prints ``COUNT`` numbered lines; the engine runs it."""
    pods_cluster.custom.create_namespaced_custom_object(
        "flow.volcano.sh", "v1alpha1", pods_namespace, "jobtemplates",
        template("count", node=pod_node(pods_cluster), lines=COUNT, every=EVERY))
    engine = start_engine(pods_cluster, pods_namespace)
    pods_cluster.custom.create_namespaced_custom_object(
        "flow.volcano.sh", "v1alpha1", pods_namespace, "jobflows",
        {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "outage"},
         "spec": {"flows": [{"name": "count"}]}})
    yield "outage"
    engine.stop()


def test_logs_follow_shows_every_line_once_across_an_api_server_restart(
        pods_cluster: LocalCluster, pods_namespace: str, counting: str) -> None:
    started = time.monotonic()

    def runs() -> bool:
        pods = pods_cluster.core.list_namespaced_pod(pods_namespace, label_selector="volcano.sh/job-name=outage-count")
        return any(pod.status.phase == "Running" for pod in pods.items)

    pods_cluster.wait_until("flow count's pod runs on the pod node", runs, timeout=60)
    out = io.StringIO()
    followed: list[tuple[int, str, str]] = []
    follower = threading.Thread(target=lambda: followed.append(jobflow_logs(pods_cluster, pods_namespace, counting,
                                                                            "-f", out=out)), daemon=True)
    follower.start()
    pods_cluster.wait_until("logs -f to show a few lines", lambda: out.getvalue().count("\n") >= 5, timeout=30)
    shown_before = out.getvalue().count("\n")
    # The API server that the kubelet, the pods (the kubernetes Service), the engine and logs -f all talk to.
    pods_cluster.api_server_outage(3)
    shown_during = out.getvalue().count("\n")
    follower.join(timeout=90)
    assert followed, "logs -f did not end within 90 s of the API server's restart"
    [(code, text, err)] = followed
    wait_for_phase(pods_cluster, pods_namespace, counting, "Succeed", timeout=10)  # -f ended because the JobFlow did
    assert (code, err) == (0, "")
    assert text.splitlines() == [f"[count/main/outage-count-main-0/main] count line {n}" for n in range(COUNT)]
    assert shown_before <= COUNT - 20  # the API server went away mid-stream, with lines still to come
    node = pods_cluster.core.read_node(pod_node(pods_cluster))
    assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]  # its kubelet is back
    took = time.monotonic() - started
    print(f"{COUNT} lines, {shown_before} before the restart, {shown_during} once it and Volcano were back; "
          f"{took:.1f} s")
    assert took < 60
