"""The install tier's helpers: install ``manifests/`` as a user would, wait for it, and look at its pods (with
``kubectl logs`` and ``kubectl exec``, through the node's kubelet).

:func:`install` runs exactly the README's steps with the virtual environment's kubectl: ``kubectl apply
--server-side -k manifests/`` (``--force-conflicts``, because devcluster installed the CRDs from the same files
already), ``kubectl apply -k manifests/webhook/`` and ``manifests/webhook/make-cert.sh``. Then every Deployment must
roll out: when one does not, the failure shows each pod's container states and the last lines of its logs (a
missing import, a wrong command, port or probe all end here).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kubernetes import client

from devcluster.helm import CHART, helm
from devcluster.node.network import NodeNetwork
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


CYCLE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: cycle}
spec:
  flows:
  - {name: a, dependsOn: {targets: [c]}}
  - {name: b, dependsOn: {targets: [a]}}
  - {name: c, dependsOn: {targets: [b]}}
"""
"""A cycle no CEL rule of the CRD sees: only the webhook refuses it."""


def install(cluster: LocalCluster, *, kustomization: Path = MANIFESTS) -> None:
    """The README's install, then every Deployment rolled out and the webhook answering through its Service (the
    endpoints of the pods make-cert.sh restarted reach kube-proxy a moment after the roll-out; with
    ``failurePolicy: Fail`` every JobFlow write fails meanwhile)."""
    kubectl(cluster, "apply", "--server-side", "--force-conflicts", "-k", str(kustomization))
    kubectl(cluster, "apply", "-k", str(MANIFESTS / "webhook"))
    make_cert(cluster)
    wait_rolled_out(cluster)
    for name in ("jobflow-handler", "jobflow-admission"):
        cluster.wait_until(f"kube-proxy to route Service {name} to its ready pods only",
                           lambda: routed_to_ready_pods(cluster, name), timeout=30)
    cluster.wait_until("the webhook to refuse a cyclic JobFlow through its Service", lambda: webhook_refuses(cluster),
                       timeout=30)


def routed_to_ready_pods(cluster: LocalCluster, name: str) -> bool:
    """The node's iptables send Service ``name`` to exactly its ready pods: after a roll-out, the old pods'
    endpoints leave kube-proxy's rules a moment later (meanwhile a request may reach a pod that is shutting down)."""
    ready = {pod.status.pod_ip for pod in pods(cluster, name)
             if any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])}
    netns = NodeNetwork(cluster.state.pod_network).netns
    rules = subprocess.run(["ip", "netns", "exec", netns, "iptables", "-t", "nat", "-S"], capture_output=True,
                           text=True, timeout=30).stdout
    routed = set(re.findall(rf'--comment "{NAMESPACE}/{name}:\S+" .*--to-destination ([\d.]+):', rules))
    return bool(ready) and routed == ready


def uninstall(cluster: LocalCluster) -> None:
    """The engine's namespace and webhook registration gone (nothing to do on a new cluster)."""
    kubectl(cluster, "delete", "validatingwebhookconfiguration", "jobflow-admission", "--ignore-not-found")
    kubectl(cluster, "delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true", "--timeout=90s")


def webhook_refuses(cluster: LocalCluster) -> bool:
    result = subprocess.run([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", "create", "--dry-run=server",
                             "--namespace", "default", "-f", "-"], input=CYCLE, capture_output=True, text=True,
                            timeout=60)
    return result.returncode != 0 and "jobflow Flow is not DAG" in result.stderr


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
    """``kubectl logs`` of the container, or of its previous run when it is waiting to be restarted."""
    [status] = [s for s in pod.status.container_statuses or [] if s.name == container] or [None]
    previous = status is not None and status.state.waiting is not None and status.restart_count > 0
    result = subprocess.run([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", "logs", "--namespace",
                             pod.metadata.namespace, pod.metadata.name, "--container", container, f"--tail={lines}",
                             *(["--previous"] if previous else [])], capture_output=True, text=True, timeout=60)
    return (result.stdout if result.returncode == 0 else result.stderr).strip() or "(no log yet)"


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


def exec_in(cluster: LocalCluster, pod: client.V1Pod, container: str, *command: str) -> subprocess.CompletedProcess:
    """``kubectl exec`` into the pod's running container."""
    return subprocess.run([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", "exec", "--namespace",
                           pod.metadata.namespace, pod.metadata.name, "--container", container, "--", *command],
                          capture_output=True, text=True, timeout=60)


def wait_gone(cluster: LocalCluster, uids: set[str], *, timeout: float = 60) -> None:
    def gone() -> bool:
        return not uids & {pod.metadata.uid for pod in cluster.core.list_namespaced_pod(NAMESPACE).items}
    cluster.wait_until("the deleted pods to be gone", gone, timeout=timeout)


def run_the_seed_diamond(cluster: LocalCluster, namespace: str) -> None:
    """``examples/diamond/`` applied as the README does, run by whatever engine is installed to Succeed: each vcjob
    created once (by UID), the phase kept, and ``jobRetainPolicy: delete`` honoured."""
    from objects import VcjobUids, apply, jobflow, vcjobs, wait_for_phase

    examples = REPO / "examples" / "diamond"
    created = VcjobUids(cluster, namespace)
    apply(cluster, namespace, (examples / "jobtemplates.yaml").read_text())
    apply(cluster, namespace, (examples / "jobflow.yaml").read_text())

    wait_for_phase(cluster, namespace, "test", "Succeed", timeout=120)
    time.sleep(3)  # a Succeed JobFlow stays Succeed: nothing runs its flows again
    seen = created.stop()

    assert jobflow(cluster, namespace, "test")["status"]["state"]["phase"] == "Succeed"
    assert {name: len(uids) for name, uids in seen.items()} == {f"test-{flow}": 1 for flow in "abcde"}
    cluster.wait_until("jobRetainPolicy: delete to remove the vcjobs", lambda: not vcjobs(cluster, namespace))


RELEASE = "volcano-jobflow"
CLUSTER_OBJECTS = (("clusterrole", "jobflow-handler"), ("clusterrole", "jobflow-eventsource"),
                   ("clusterrole", "jobflow-admission"), ("clusterrole", "jobflow-dashboard"),
                   ("clusterrolebinding", "jobflow-handler"), ("clusterrolebinding", "jobflow-eventsource"),
                   ("clusterrolebinding", "jobflow-admission"), ("clusterrolebinding", "jobflow-dashboard"),
                   ("priorityclass", "volcano-jobflow-started"), ("priorityclass", "volcano-jobflow-at-risk"))
"""What a kustomize install leaves outside its namespace (besides the CRDs and the webhook registration)."""
CRDS = ("jobflows.flow.volcano.sh", "jobtemplates.flow.volcano.sh", "jobflowtemplates.flow.volcano.sh")


def take_the_manifests_away(cluster: LocalCluster) -> None:
    uninstall(cluster)
    for kind, name in CLUSTER_OBJECTS:
        kubectl(cluster, "delete", kind, name, "--ignore-not-found")


def hand_the_crds_to_the_release(cluster: LocalCluster) -> None:
    """docs/helm.md's three commands: Helm adopts an object that names its release."""
    for crd in CRDS:
        kubectl(cluster, "annotate", "--overwrite", "crd", crd, f"meta.helm.sh/release-name={RELEASE}",
                f"meta.helm.sh/release-namespace={NAMESPACE}")
        kubectl(cluster, "label", "--overwrite", "crd", crd, "app.kubernetes.io/managed-by=Helm")


def chart_helm(cluster: LocalCluster, *args: str) -> str:
    """``helm *args`` in the engine's namespace on ``cluster``; its output."""
    return helm(*args, "--namespace", NAMESPACE, kubeconfig=cluster.state.kubeconfig).stdout


def install_release(cluster: LocalCluster, *values: str) -> None:
    """The chart installed as docs/helm.md says, in place of whatever engine the tier's cluster ran (the manifests,
    an earlier release): every Deployment rolled out, Services routed, the webhook refusing a cycle."""
    chart_helm(cluster, "uninstall", RELEASE, "--ignore-not-found", "--wait")
    take_the_manifests_away(cluster)
    hand_the_crds_to_the_release(cluster)
    chart_helm(cluster, "install", RELEASE, str(CHART), "--create-namespace", "--wait", "--timeout", "5m", *values)
    wait_rolled_out(cluster)
    for name in ("jobflow-handler", "jobflow-admission"):
        cluster.wait_until(f"kube-proxy to route Service {name}", lambda: routed_to_ready_pods(cluster, name),
                           timeout=30)
    cluster.wait_until("the webhook to refuse a cyclic JobFlow", lambda: webhook_refuses(cluster), timeout=30)
