"""A real kube-state-metrics (built from its module) exports our custom-resource-state configuration, signed in
with only the rights ``manifests/kube-state-metrics/rbac.yaml`` grants, and its gauges say what ``kubectl get jf``
and the JobTemplates' status say."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devcluster import kube_state_metrics
from devcluster.testing import LocalCluster
from objects import apply, template, wait_for_phase
from test_manifests import kubectl

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def ksm(cluster: LocalCluster, tmp_path_factory) -> Iterator[kube_state_metrics.KubeStateMetrics]:
    kube_state_metrics.apply_rbac(cluster.api)
    kubeconfig = kube_state_metrics.account_kubeconfig(cluster.state, cluster.api,
                                                       tmp_path_factory.mktemp("ksm") / "kubeconfig")
    running = kube_state_metrics.start(cluster.state, kubeconfig)
    try:
        cluster.wait_until("kube-state-metrics to serve /metrics", lambda: _answers(running), timeout=60)
        yield running
    finally:
        running.stop()
    assert "forbidden" not in open(running.process.log).read().lower()  # the RBAC was enough


def _answers(running: kube_state_metrics.KubeStateMetrics) -> bool:
    assert running.process.alive(), running.process.log_tail()
    try:
        running.scrape()
    except OSError:
        return False
    return True


def series(running: kube_state_metrics.KubeStateMetrics, namespace: str) -> list[tuple[str, dict, float]]:
    return [(sample.name, sample.labels, sample.value) for family in text_string_to_metric_families(running.scrape())
            for sample in family.samples if sample.labels.get("namespace") == namespace]


def exported_table(running, namespace: str) -> dict[str, tuple[str, str]]:
    """JobFlow name -> (phase, "ended/total") as the gauges say."""
    phases, ended, total = {}, {}, {}
    for name, labels, value in series(running, namespace):
        if name == "kube_jobflow_status_phase" and value == 1:
            phases[labels["jobflow"]] = labels["phase"]
        elif name == "kube_jobflow_flows_ended":
            ended[labels["jobflow"]] = int(value)
        elif name == "kube_jobflow_flows":
            total[labels["jobflow"]] = int(value)
    return {flow: (phase, f"{ended.get(flow)}/{total.get(flow)}") for flow, phase in phases.items()}


def kubectl_table(cluster: LocalCluster, namespace: str) -> dict[str, tuple[str, str]]:
    shown = kubectl(cluster, "get", "jf", "-n", namespace, "--no-headers")
    assert shown.returncode == 0, shown.stderr
    return {row[0]: (row[1], row[2]) for row in map(str.split, shown.stdout.splitlines())}


MIXED = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: done}
spec:
  jobRetainPolicy: retain
  flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}, {name: c, dependsOn: {targets: [a]}}]
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: half}
spec:
  flows: [{name: a}, {name: hold, dependsOn: {targets: [a]}}]
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: stuck}
spec:
  flows: [{name: ghost}]
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: broken}
spec:
  flows: [{name: a}, {name: bad, dependsOn: {targets: [a]}}]
"""


def test_kube_state_metrics_gauges_match_kubectl_get_jf_and_the_job_templates_status(
        cluster: LocalCluster, namespace: str, engine, ksm) -> None:
    apply(cluster, namespace, "---\n".join([template("a", run_for="1s"), template("b"), template("c"),
                                            template("hold", keep_running=True), template("bad", fail=True)]))
    apply(cluster, namespace, MIXED)
    wait_for_phase(cluster, namespace, "done", "Succeed", timeout=90)
    wait_for_phase(cluster, namespace, "broken", "Failed", timeout=90)
    cluster.wait_until("hold to run", lambda: kubectl_table(cluster, namespace).get("half") == ("Running", "1/2"),
                       timeout=60)
    shown = kubectl_table(cluster, namespace)
    assert shown == {"done": ("Succeed", "3/3"), "half": ("Running", "1/2"), "stuck": ("Pending", "0/1"),
                     "broken": ("Failed", "1/2")}
    cluster.wait_until("the gauges to say what kubectl get jf says",
                       lambda: exported_table(ksm, namespace) == shown, timeout=30)

    exported = series(ksm, namespace)
    waiting = [labels for name, labels, _ in exported if name == "kube_jobflow_flows_waiting_info"]
    assert [(w["jobflow"], w["flow"], w["job"]) for w in waiting] == [("stuck", "ghost", "stuck-ghost")]
    assert "ghost" in waiting[0]["message"] and "JobTemplate" in waiting[0]["message"]
    failure = {labels["jobflow"]: value for name, labels, value in exported if name == "kube_jobflow_failure_ratio"}
    assert failure["broken"] == 0.5 and failure["done"] == 0.0

    def template_gauges() -> dict[tuple[str, str], float]:
        return {(name, labels["jobtemplate"]): value for name, labels, value in series(ksm, namespace)
                if name.startswith("kube_jobtemplate_")}

    listed = cluster.custom.list_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates")
    templates = {item["metadata"]["name"]: item.get("status", {}) for item in listed["items"]}
    assert templates["a"]["runs"] == 3 and templates["bad"]["failureRate"] == 1.0
    expected = {}
    for name, status in templates.items():
        expected |= {("kube_jobtemplate_runs", name): status.get("runs", 0),
                     ("kube_jobtemplate_runs_failed", name): status.get("failed", 0)}
        if "failureRate" in status:
            expected[("kube_jobtemplate_failure_ratio", name)] = status["failureRate"]
        if "durationP50Seconds" in status:
            expected[("kube_jobtemplate_duration_p50_seconds", name)] = status["durationP50Seconds"]
    cluster.wait_until("the JobTemplate gauges to say what their status says",
                       lambda: expected.items() <= template_gauges().items(), timeout=30)
    assert ("kube_jobtemplate_last_failure_timestamp_seconds", "bad") in template_gauges()
    families = {family.name for family in text_string_to_metric_families(ksm.scrape())}
    assert kube_state_metrics.metric_names() <= families  # every name the dashboard may ask for is real
