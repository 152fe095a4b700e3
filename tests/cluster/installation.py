"""The install tier's helpers: install ``manifests/`` as a user would, wait for it, and look at its pods.

:func:`install` runs exactly the README's steps with the virtual environment's kubectl: ``kubectl apply
--server-side -k manifests/`` (``--force-conflicts``, because devcluster installed the CRDs from the same files
already), ``kubectl apply -k manifests/webhook/`` and ``manifests/webhook/make-cert.sh``. Then every Deployment must
roll out: when one does not, the failure shows each pod's container states and the last lines of its logs (a
missing import, a wrong command, port or probe all end here).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kubernetes import client

from devcluster.podman import podman
from devcluster.testing import LocalCluster, WaitTimeout

REPO = Path(__file__).resolve().parents[2]
MANIFESTS = REPO / "manifests"
NAMESPACE = "volcano-jobflow"
DEPLOYMENTS = ("jobflow-handler", "jobflow-eventsource", "jobflow-admission")
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None) -> str:
    """Run kubectl against ``cluster``; its stdout, or an AssertionError with its stderr."""
    result = subprocess.run([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", *args], input=stdin,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"kubectl {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


def make_cert(cluster: LocalCluster) -> None:
    result = subprocess.run([str(MANIFESTS / "webhook" / "make-cert.sh")], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "KUBECONFIG": str(cluster.state.kubeconfig),
                                              "KUBECTL": KUBECTL})
    assert result.returncode == 0, f"make-cert.sh failed:\n{result.stdout}{result.stderr}"


def install(cluster: LocalCluster, *, kustomization: Path = MANIFESTS) -> None:
    """The README's install, then every Deployment rolled out."""
    kubectl(cluster, "apply", "--server-side", "--force-conflicts", "-k", str(kustomization))
    kubectl(cluster, "apply", "-k", str(MANIFESTS / "webhook"))
    make_cert(cluster)
    wait_rolled_out(cluster)


def deployment(cluster: LocalCluster, name: str) -> client.V1Deployment:
    return client.AppsV1Api(cluster.api).read_namespaced_deployment(name, NAMESPACE)


def rolled_out(cluster: LocalCluster, name: str) -> bool:
    """As ``kubectl rollout status``: the newest spec seen, every replica updated and available, no old ones."""
    found = deployment(cluster, name)
    status, wanted = found.status, found.spec.replicas
    return ((status.observed_generation or 0) >= found.metadata.generation and status.updated_replicas == wanted
            and status.available_replicas == wanted and status.replicas == wanted)


def crash_looping(cluster: LocalCluster) -> list[str]:
    """Pods of the install whose container keeps exiting: a healthy install restarts nothing, so the roll-out
    need not be waited for any longer (a missing import, a wrong command)."""
    return [pod.metadata.name for pod in cluster.core.list_namespaced_pod(NAMESPACE).items
            for status in pod.status.container_statuses or []
            if status.restart_count >= 2 and status.state.waiting and status.state.waiting.reason == "CrashLoopBackOff"]


def wait_rolled_out(cluster: LocalCluster, names: tuple[str, ...] = DEPLOYMENTS, *, timeout: float = 120) -> None:
    def done() -> bool:
        looping = crash_looping(cluster)
        assert not looping, f"crash-looping: {', '.join(looping)}\n\n{describe_pods(cluster)}"
        return all(rolled_out(cluster, name) for name in names)

    try:
        cluster.wait_until(f"Deployments {', '.join(names)} rolled out", done, timeout=timeout)
    except WaitTimeout as error:
        raise AssertionError(f"{error}\n\n{describe_pods(cluster)}") from None


def pods(cluster: LocalCluster, app: str) -> list[client.V1Pod]:
    """The live pods of a Deployment (by its app.kubernetes.io/name label), not those being deleted."""
    found = cluster.core.list_namespaced_pod(NAMESPACE, label_selector=f"app.kubernetes.io/name={app}").items
    return [pod for pod in found if pod.metadata.deletion_timestamp is None]


def log_tail(cluster: LocalCluster, pod: client.V1Pod, container: str, *, lines: int = 15) -> str:
    """The container's newest log (the pod node writes them where a kubelet would, in the CRI format)."""
    directory = (Path(cluster.state.root) / "pods" / f"{pod.metadata.namespace}_{pod.metadata.name}_"
                 f"{pod.metadata.uid}" / "logs" / container)
    logs = sorted(directory.glob("*.log"), key=lambda path: int(path.stem)) if directory.exists() else []
    if not logs:
        return "(no log yet)"
    return "\n".join(line.split(" ", 3)[-1] for line in logs[-1].read_text(errors="replace").splitlines()[-lines:])


def describe_pods(cluster: LocalCluster) -> str:
    """Every pod of the install: phase, each container's state and restarts, and its log's last lines."""
    parts = []
    for pod in cluster.core.list_namespaced_pod(NAMESPACE).items:
        parts.append(f"pod {pod.metadata.name}: {pod.status.phase}, node {pod.spec.node_name}, IP {pod.status.pod_ip}")
        for status in pod.status.container_statuses or []:
            state = status.state.to_dict()
            current = {kind: value for kind, value in state.items() if value}
            last = {kind: value for kind, value in (status.last_state.to_dict() if status.last_state else {}).items()
                    if value}
            parts.append(f"  container {status.name}: ready={status.ready} restarts={status.restart_count} "
                         f"state={current} last={last}")
            parts.append("    " + log_tail(cluster, pod, status.name).replace("\n", "\n    "))
    return "\n".join(parts) or f"(no pods in {NAMESPACE})"


def container_id(pod: client.V1Pod, container: str) -> str:
    [status] = [s for s in pod.status.container_statuses if s.name == container]
    assert status.container_id and status.container_id.startswith("podman://"), status
    return status.container_id.removeprefix("podman://")


def exec_in(pod: client.V1Pod, container: str, *command: str) -> subprocess.CompletedProcess:
    """Run ``command`` in the pod's running container (what ``kubectl exec`` does through a real kubelet)."""
    return podman("exec", container_id(pod, container), *command, check=False, timeout=60)


def wait_gone(cluster: LocalCluster, uids: set[str], *, timeout: float = 60) -> None:
    def gone() -> bool:
        return not uids & {pod.metadata.uid for pod in cluster.core.list_namespaced_pod(NAMESPACE).items}
    cluster.wait_until("the deleted pods to be gone", gone, timeout=timeout)
