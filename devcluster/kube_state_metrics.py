"""A real kube-state-metrics, built from its Go module, exporting our custom-resource-state configuration.

The state gauges of JobFlows and JobTemplates (phase, progress, failure rates) come from kube-state-metrics reading
their status, not from the handler (which scales to zero). ``manifests/kube-state-metrics/`` holds the
configuration and the RBAC a user installs; this module runs the same binary a user would, pinned in
``gomod/kube-state-metrics/`` and built into the shared cache on first use (about 6 minutes cold), as a local
process with only the rights ``rbac.yaml`` grants: it signs in with a token of the ``kube-state-metrics`` service
account that the RBAC binds, so a missing rule shows up as missing metrics.
"""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster import processes
from devcluster.build import build_module, go_version
from devcluster.components import KUBE_STATE_METRICS
from devcluster.state import ClusterState

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "manifests" / "kube-state-metrics" / "custom-resource-state.yaml"
RBAC = REPO / "manifests" / "kube-state-metrics" / "rbac.yaml"
ACCOUNT = ("kube-system", "kube-state-metrics")  # the subject rbac.yaml binds


@dataclass
class KubeStateMetrics:
    process: processes.Component
    url: str
    """Where ``/metrics`` is served, e.g. ``http://127.0.0.1:40123/metrics``."""

    def scrape(self) -> str:
        with urllib.request.urlopen(self.url, timeout=10) as reply:
            return reply.read().decode()

    def stop(self) -> None:
        self.process.stop()


def metric_names(config: Path = CONFIG) -> set[str]:
    """The gauges kube-state-metrics exports with ``config``: ``<metricNamePrefix>_<name>`` of each metric."""
    document = yaml.safe_load(config.read_text())
    return {f"{resource['metricNamePrefix']}_{metric['name']}" for resource in document["spec"]["resources"]
            for metric in resource["metrics"]}


def binary(*, log=print) -> Path:
    """The kube-state-metrics binary, built from its pinned module if the cache lacks it."""
    return build_module(KUBE_STATE_METRICS, go_version(), log=log).path("kube-state-metrics")


def account_kubeconfig(state: ClusterState, api: client.ApiClient, path: Path) -> Path:
    """A kubeconfig signing in as the service account ``rbac.yaml`` binds (created if missing), with a fresh
    one-hour token."""
    namespace, name = ACCOUNT
    core = client.CoreV1Api(api)
    try:
        core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    except ApiException as error:
        if error.status != 409:
            raise
    token = core.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": 3600}}).status.token
    ca = Path(state.root) / "data" / "pki" / "apiserver.crt"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: devcluster\n  cluster:\n    server: {state.server}\n    certificate-authority: {ca}\n"
        f"users:\n- name: {name}\n  user:\n    token: {token}\n"
        f"contexts:\n- name: ksm\n  context:\n    cluster: devcluster\n    user: {name}\n"
        "current-context: ksm\n")
    path.chmod(0o600)
    return path


def start(state: ClusterState, kubeconfig: Path, *, config: Path = CONFIG) -> KubeStateMetrics:
    """Start kube-state-metrics with only our custom-resource-state metrics, on free loopback ports."""
    port, telemetry = processes.free_port(), processes.free_port()
    component = processes.start("kube-state-metrics", binary(), [
        f"--kubeconfig={kubeconfig}", "--custom-resource-state-only", f"--custom-resource-state-config-file={config}",
        "--host=127.0.0.1", f"--port={port}", "--telemetry-host=127.0.0.1", f"--telemetry-port={telemetry}",
    ], log_dir=state.log_dir)
    return KubeStateMetrics(component, f"http://127.0.0.1:{port}/metrics")


def apply_rbac(api: client.ApiClient) -> None:
    """Create (or replace) the ClusterRole and ClusterRoleBinding of ``rbac.yaml``."""
    rbac = client.RbacAuthorizationV1Api(api)
    calls = {"ClusterRole": (rbac.create_cluster_role, rbac.replace_cluster_role),
             "ClusterRoleBinding": (rbac.create_cluster_role_binding, rbac.replace_cluster_role_binding)}
    for doc in yaml.safe_load_all(RBAC.read_text()):
        create, replace = calls[doc["kind"]]
        try:
            create(doc)
        except ApiException as error:
            if error.status != 409:
                raise
            replace(doc["metadata"]["name"], doc)
