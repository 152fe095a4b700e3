"""The plain install, running for real: ``manifests/`` applied as the README says, its pods running the image.

The cluster is the install tier's own (``pods_cluster``): a node with a real kubelet and containerd running the
image that ``make image`` built from this tree, kube-scheduler, kube-controller-manager's Deployment, ReplicaSet
and endpoints controllers, kube-proxy routing Service IPs, and a vc-controller-manager configured as
docs/install.md tells users of an upstream Volcano to configure theirs. No engine runs but the installed pods: nothing
from the Procfile, nothing in-process. So the manifests' command, args, env, ports, probes, securityContext and
ServiceAccount are what decides whether a JobFlow runs; a missing import or a wrong command, port or probe stops the
install's roll-out (the fixture), with each pod's state and log in the failure.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client.rest import ApiException

from apiclient.snapshot_key import FOLLOW_SECONDS
from devcluster import image
from devcluster.pod_node import VOLCANO_CONTROLLERS
from devcluster.podman import podman
from devcluster.testing import LocalCluster
from installation import (CYCLE, DEPLOYMENTS, KUBECTL, NAMESPACE, REPO, describe_pods, exec_in, install,
                          pods, run_the_seed_diamond, uninstall, wait_gone, wait_rolled_out)
from jobflow_core.vocabulary.api import QUEUE
from objects import DIAMOND, VcjobUids, apply, diamond_templates, jobflow, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

@pytest.fixture(scope="module")
def installed(pods_cluster: LocalCluster) -> Iterator[LocalCluster]:
    uninstall(pods_cluster)  # a kept cluster's pods may run an image built from an older tree
    install(pods_cluster)
    yield pods_cluster


@pytest.fixture
def user_namespace(installed: LocalCluster) -> Iterator[str]:
    name = installed.create_namespace()
    yield name
    installed.delete_namespace(name)


def test_every_deployment_runs_the_image_built_from_this_tree(installed: LocalCluster) -> None:
    built = podman("image", "inspect", "--format", "{{.Id}}", image.manifest_image()).stdout.decode().strip()

    for name in DEPLOYMENTS:
        running = pods(installed, name)
        assert running, describe_pods(installed)
        for pod in running:
            assert pod.spec.node_name.startswith("pods-")  # the node that runs pods, not one of kwok's
            assert pod.status.pod_ip.startswith("10.244.")
            [status] = pod.status.container_statuses
            assert status.ready and status.image_id.endswith(f"sha256:{built}"), describe_pods(installed)


def test_the_image_says_its_version_and_the_commit_it_was_built_from(installed: LocalCluster) -> None:
    inspected = podman("image", "inspect", "--format", "{{json .Labels}}", image.manifest_image()).stdout
    labels = json.loads(inspected)

    assert labels["org.opencontainers.image.version"] == image.project_version()
    assert labels["org.opencontainers.image.revision"] == image.revision()
    assert labels["org.opencontainers.image.source"].startswith("https://")
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"


def test_every_program_logs_its_version_when_it_starts(installed: LocalCluster) -> None:
    version = image.project_version()
    said = {name: subprocess.run([KUBECTL, f"--kubeconfig={installed.state.kubeconfig}", "-n", NAMESPACE, "logs",
                                  f"deployment/{name}"], capture_output=True, text=True, timeout=60).stdout
            for name in DEPLOYMENTS}

    assert f"volcano-jobflow handler {version}" in said["jobflow-handler"]
    assert f"volcano-jobflow handler {version}" in said["jobflow-admission"]  # the same app, serving the webhook
    assert f"volcano-jobflow event source {version} watching" in said["jobflow-eventsource"]


def test_the_event_source_services_metrics_answer_through_kube_proxy(installed: LocalCluster) -> None:
    service = installed.core.read_namespaced_service("jobflow-eventsource", NAMESPACE)
    [port] = service.spec.ports
    url = f"http://{service.spec.cluster_ip}:{port.port}/metrics"

    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()

    assert (reply.status, port.name) == (200, "metrics")
    assert re.search(r"^jobflow_eventsource_pending_events ", text, re.MULTILINE), text[:2000]


def test_the_webhook_keeps_one_replica_through_a_drain(installed: LocalCluster) -> None:
    from kubernetes import client

    budget = client.PolicyV1Api(installed.api).read_namespaced_pod_disruption_budget("jobflow-admission", NAMESPACE)

    assert budget.spec.min_available == 1
    assert budget.spec.selector.match_labels == {"app.kubernetes.io/name": "jobflow-admission"}
    installed.wait_until("the budget to count both webhook pods", lambda: (
        client.PolicyV1Api(installed.api).read_namespaced_pod_disruption_budget("jobflow-admission", NAMESPACE)
        .status.current_healthy == 2), timeout=60)
    assert client.PolicyV1Api(installed.api).read_namespaced_pod_disruption_budget(
        "jobflow-admission", NAMESPACE).status.disruptions_allowed == 1


def test_the_pods_run_as_uid_10001_with_a_read_only_root_filesystem(installed: LocalCluster) -> None:
    for name in DEPLOYMENTS:
        pod = pods(installed, name)[0]
        container = pod.spec.containers[0].name

        assert exec_in(installed, pod, container, "id", "-u").stdout.strip() == "10001"
        refused = exec_in(installed, pod, container, "touch", "/written-by-the-test")
        assert refused.returncode != 0 and "Read-only file system" in refused.stderr
        writable = {mount.mount_path for mount in pod.spec.containers[0].volume_mounts or []
                    if not mount.read_only}
        wrote = exec_in(installed, pod, container, "touch", "/tmp/written-by-the-test")
        assert (wrote.returncode == 0) == ("/tmp" in writable), wrote.stderr


def test_the_seed_diamond_reaches_succeed_run_by_the_installed_pods_alone(installed: LocalCluster,
                                                                           user_namespace: str) -> None:
    run_the_seed_diamond(installed, user_namespace)


def test_the_webhook_pod_refuses_a_cyclic_jobflow_through_the_api_server(installed: LocalCluster,
                                                                         user_namespace: str) -> None:
    with pytest.raises(ApiException) as refused:
        apply(installed, user_namespace, CYCLE)

    assert refused.value.status == 422
    message = json.loads(refused.value.body)["message"]
    assert 'admission webhook "jobflows.admission.jobflow.volcano.sh" denied the request' in message
    assert "jobflow Flow is not DAG: a -> c -> b -> a" in message
    assert jobflow(installed, user_namespace, "cycle") is None


def test_kubectl_apply_of_a_jobflow_that_can_never_be_scheduled_prints_the_webhooks_warning(
        installed: LocalCluster, user_namespace: str) -> None:
    """The webhook pod reads the JobTemplate and the queue as its ServiceAccount (token and ClusterRole of
    manifests/webhook/): kubectl prints its warning, and the JobFlow is stored."""
    queue = f"q-{user_namespace}"
    installed.custom.create_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, {
        "apiVersion": QUEUE.api_version, "kind": QUEUE.kind, "metadata": {"name": queue},
        "spec": {"weight": 1, "reclaimable": False, "capability": {"cpu": "1"}}})
    try:
        apply(installed, user_namespace, f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {{name: big}}
spec:
  minAvailable: 2
  queue: {queue}
  tasks:
  - {{name: t, replicas: 2, template: {{spec: {{containers: [{{name: c, image: busybox,
     resources: {{requests: {{cpu: "1"}}}}}}]}}}}}}
""")
        applied = subprocess.run([KUBECTL, f"--kubeconfig={installed.state.kubeconfig}", "-n", user_namespace,
                                  "apply", "-f", "-"], capture_output=True, text=True, timeout=60, input="""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: never}
spec: {flows: [{name: a, jobTemplate: big}]}
""")
        assert applied.returncode == 0, applied.stderr
        assert (f'Warning: JobFlow "{user_namespace}/never", flow "a" (JobTemplate "big"): its gang needs 2 CPU at '
                f'once, more cpu than Volcano queue "{queue}" can ever hold (1 CPU, its capability)') in applied.stderr
        assert jobflow(installed, user_namespace, "never") is not None
    finally:
        installed.delete_namespace(user_namespace)
        installed.custom.delete_cluster_custom_object(QUEUE.group, QUEUE.version, QUEUE.plural, queue)


def test_deleting_the_handler_pods_mid_run_loses_nothing(installed: LocalCluster, user_namespace: str) -> None:
    created = VcjobUids(installed, user_namespace)
    apply(installed, user_namespace, diamond_templates(run_for="2s"))
    apply(installed, user_namespace, DIAMOND)
    installed.wait_until("the diamond's second vcjob", lambda: "diamond-b" in vcjobs(installed, user_namespace),
                         timeout=60)
    before = {pod.metadata.uid for pod in pods(installed, "jobflow-handler")}

    for uid in before:
        [pod] = [p for p in pods(installed, "jobflow-handler") if p.metadata.uid == uid]
        installed.core.delete_namespaced_pod(pod.metadata.name, NAMESPACE)
    wait_gone(installed, before)
    wait_rolled_out(installed, ("jobflow-handler",))
    wait_for_phase(installed, user_namespace, "diamond", "Succeed", timeout=120)
    seen = created.stop()

    assert not before & {pod.metadata.uid for pod in pods(installed, "jobflow-handler")}
    assert {name: len(uids) for name, uids in seen.items()} == {f"diamond-{flow}": 1 for flow in "abcde"}


def test_the_handler_services_metrics_add_up_every_worker(installed: LocalCluster, user_namespace: str) -> None:
    service = installed.core.read_namespaced_service("jobflow-handler", NAMESPACE)
    url = f"http://{service.spec.cluster_ip}:{service.spec.ports[0].port}/metrics"  # kube-proxy's route to a pod

    with urllib.request.urlopen(url, timeout=10) as reply:
        text = reply.read().decode()

    assert reply.status == 200
    assert re.search(r"^jobflow_handler_events_total\{", text, re.MULTILINE), text[:2000]
    # The gunicorn config's multiprocess registry: the per-process collectors of a plain registry are absent.
    assert "python_gc_objects_collected_total" not in text


def test_the_event_source_made_the_snapshot_key_and_the_handlers_plan_from_snapshots(installed: LocalCluster,
                                                                                     user_namespace: str) -> None:
    """No step of the user's: the event source created the Secret on its first start, and the handler pods,
    started before it existed, took it up from their volume (the kubelet writes it within its sync period)."""
    secret = installed.core.read_namespaced_secret("jobflow-snapshot-key", NAMESPACE)
    assert re.fullmatch(r"[0-9a-f]{64}", base64.b64decode(secret.data["key"]).decode().strip())
    handlers = pods(installed, "jobflow-handler")
    installed.wait_until("the kubelet to write the key into every handler's volume", lambda: all(
        exec_in(installed, pod, "handler", "test", "-s", "/etc/jobflow/snapshot-key/key").returncode == 0
        for pod in handlers), timeout=150)
    time.sleep(FOLLOW_SECONDS + 1)  # the handlers look at the file again this often
    used_before = sum(snapshots_used(installed, pod) for pod in handlers)

    apply(installed, user_namespace, diamond_templates(run_for="1s"))
    apply(installed, user_namespace, DIAMOND)
    wait_for_phase(installed, user_namespace, "diamond", "Succeed", timeout=120)

    assert sum(snapshots_used(installed, pod) for pod in handlers) > used_before


def snapshots_used(cluster: LocalCluster, pod) -> float:
    """The pod's ``jobflow_handler_snapshots_total{outcome="used"}``, read inside it (the Service picks one pod)."""
    read = exec_in(cluster, pod, "handler", "python", "-c", "import urllib.request; print(urllib.request.urlopen("
                   "'http://127.0.0.1:8080/metrics').read().decode())")
    assert read.returncode == 0, read.stderr
    found = re.search(r'^jobflow_handler_snapshots_total\{outcome="used"\} (\S+)$', read.stdout, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_volcanos_own_jobflow_controllers_are_off_as_docs_install_says(installed: LocalCluster,
                                                                       user_namespace: str) -> None:
    documented = re.search(r"--controllers=([*\w,-]+)", (REPO / "docs" / "install.md").read_text())
    [manager] = [c for c in installed.state.components if c.name == "vc-controller-manager"]
    arguments = Path(f"/proc/{manager.pid}/cmdline").read_bytes().split(b"\0")

    assert documented and documented[1] == VOLCANO_CONTROLLERS
    assert f"--controllers={VOLCANO_CONTROLLERS}".encode() in arguments
    log = Path(manager.log).read_text()
    assert "Controller <jobflow-controller> is not enable" in log
    assert "Controller <jobtemplate-controller> is not enable" in log
    assert "Controller <job-controller> is not enable" not in log

    apply(installed, user_namespace, diamond_templates(run_for="0s"))
    apply(installed, user_namespace, DIAMOND)
    wait_for_phase(installed, user_namespace, "diamond", "Succeed", timeout=120)
    # Only this engine wrote: whoever set the vcjobs' spec (created them) and the JobFlow's status is the handler.
    spec_writers = {entry["manager"] for job in vcjobs(installed, user_namespace).values()
                    for entry in job["metadata"]["managedFields"]
                    if "f:spec" in entry.get("fieldsV1", {}) and not entry.get("subresource")}
    status_writers = {entry["manager"] for entry in jobflow(installed, user_namespace, "diamond")["metadata"]
                      ["managedFields"] if entry.get("subresource") == "status"}
    assert len(spec_writers) == 1 and "vc-controller-manager" not in spec_writers, spec_writers
    assert status_writers == spec_writers, (spec_writers, status_writers)
