"""Stopping or uninstalling the engine never leaves a namespace stuck ``Terminating``.

The engine's finalizer ``flow.volcano.sh/keep-record`` is only on vcjobs Volcano deletes by itself
(``ttlSecondsAfterFinished``), and only until their end is recorded; what is left of it when the engine is gone,
``kubectl jobflow release`` takes off (docs/reference.md, Uninstalling). The namespace controller of
kube-controller-manager deletes the namespaces here, as on any cluster.
"""

from __future__ import annotations

import io

import pytest

from devcluster.testing import LocalCluster
from engine import start_engine
from kubectl_jobflow.cli import run
from objects import apply, template, vcjobs

pytestmark = pytest.mark.cluster

A_THEN_B = ("apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
            "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}\n")


def namespace_gone(cluster: LocalCluster, namespace: str) -> bool:
    return namespace not in {ns.metadata.name for ns in cluster.core.list_namespace().items}


def finalizers(cluster: LocalCluster, namespace: str) -> dict[str, list[str]]:
    return {name: job["metadata"].get("finalizers") or [] for name, job in vcjobs(cluster, namespace).items()}


def test_a_namespace_deleted_after_the_engine_stopped_mid_run_goes_without_waiting_for_it(
        cluster: LocalCluster, namespace: str) -> None:
    engine = start_engine(cluster, namespace)
    try:
        apply(cluster, namespace, template("a") + "---\n" + template("b", keep_running=True) + "---\n" + A_THEN_B)
        cluster.wait_until("b to run", lambda: cluster.vcjob_phase(namespace, "f-b") == "Running", timeout=60)
    finally:
        engine.stop()
    assert finalizers(cluster, namespace) == {"f-a": [], "f-b": []}
    cluster.delete_namespace(namespace)
    cluster.wait_until(f"namespace {namespace} to go", lambda: namespace_gone(cluster, namespace), timeout=90,
                       interval=1)


def test_a_ttl_vcjob_left_running_by_a_stopped_engine_holds_its_namespace_until_kubectl_jobflow_release(
        cluster: LocalCluster, namespace: str) -> None:
    ttl = template("a", keep_running=True).replace("  queue: default\n",
                                                   "  queue: default\n  ttlSecondsAfterFinished: 0\n")
    engine = start_engine(cluster, namespace)
    try:
        apply(cluster, namespace, ttl + "---\n" + template("b") + "---\n" + A_THEN_B)
        cluster.wait_until("a to run", lambda: cluster.vcjob_phase(namespace, "f-a") == "Running", timeout=60)
    finally:
        engine.stop()
    assert finalizers(cluster, namespace) == {"f-a": ["flow.volcano.sh/keep-record"]}
    cluster.delete_namespace(namespace)
    cluster.wait_until("f-a to be held by the finalizer", lambda: (vcjobs(cluster, namespace).get("f-a") or {}).get(
        "metadata", {}).get("deletionTimestamp"), timeout=60)
    assert cluster.core.read_namespace(namespace).status.phase == "Terminating"

    out, err = io.StringIO(), io.StringIO()
    assert run(["release", "-n", namespace, "--kubeconfig", str(cluster.state.kubeconfig)], out=out, err=err) == 0
    assert f"Released vcjob: {namespace}/f-a" in out.getvalue() and "Released 1 vcjob(s)" in out.getvalue()
    cluster.wait_until(f"namespace {namespace} to go", lambda: namespace_gone(cluster, namespace), timeout=90,
                       interval=1)
