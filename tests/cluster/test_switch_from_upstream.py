"""Switching from upstream Volcano's JobFlow controllers to this engine with JobFlows running, and back.

Upstream's controllers are the very vc-controller-manager binary the cluster runs, started a second time with only
``--controllers=jobflow-controller,jobtemplate-controller`` (the install tier's own runs without them, as
docs/install.md tells users to configure theirs). JobFlows start under upstream; the switch is docs/install.md's:
upstream's controllers off, then this engine installed (the chart). Every JobFlow reaches Succeed, each vcjob
created once (by UID), no phase goes back.

Back to upstream (this engine uninstalled, upstream's controllers on again), what a user sees, checked: upstream
ignores this engine's additions (a flow with ``when: "false"`` runs anyway; no ``status.progress``, so
``kubectl get jf`` shows no PROGRESS for the JobFlows it runs), and leaves the JobFlows this engine finished as they
are (no vcjob made again).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from devcluster.processes import Component, free_port, start
from devcluster.testing import LocalCluster
from installation import RELEASE, chart_helm, install_release, take_the_manifests_away
from objects import History, apply, jobflow, phases, template, vcjobs
from seeds import diamond_yaml

pytestmark = pytest.mark.cluster

SKIPS = """apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: skips}
spec:
  flows:
  - {name: a}
  - {name: b, dependsOn: {targets: [a]}, when: "false"}
"""
"""A JobFlow with this engine's ``when``: here ``b`` is skipped; upstream does not know the field."""


@contextmanager
def upstream_controllers(cluster: LocalCluster) -> Iterator[Component]:
    [volcano] = [c for c in cluster.state.components if c.name == "vc-controller-manager"]
    component = start("upstream-jobflow", Path(volcano.binary), [
        f"--kubeconfig={cluster.state.kubeconfig}", "--controllers=jobflow-controller,jobtemplate-controller",
        "--leader-elect=false", "--scheduler-name=volcano", "--enable-healthz",
        f"--healthz-address=127.0.0.1:{free_port()}", "--v=1"], log_dir=Path(cluster.state.log_dir))
    try:
        yield component
    finally:
        component.stop()


def test_from_upstreams_controllers_mid_run_to_this_engine_and_back(pods_cluster: LocalCluster,
                                                                     pods_namespace: str) -> None:
    cluster, namespace = pods_cluster, pods_namespace
    chart_helm(cluster, "uninstall", RELEASE, "--ignore-not-found", "--wait")
    take_the_manifests_away(cluster)
    history = History(cluster, namespace)
    try:
        with upstream_controllers(cluster) as upstream:
            apply(cluster, namespace, "---\n".join(template(name, run_for="6s") for name in "abcde"))
            apply(cluster, namespace, "---\n".join(diamond_yaml(f"d{i}", retain="delete" if i < 2 else None)
                                                   for i in range(6)))
            cluster.wait_until("upstream to run the diamonds", lambda: sum(
                job.get("status", {}).get("state", {}).get("phase") == "Completed"
                for job in vcjobs(cluster, namespace).values()) >= 3, timeout=120, interval=1)
            assert upstream.alive(), upstream.log_tail()
        mid_run = phases(cluster, namespace)

        install_release(cluster)
        cluster.wait_until("every JobFlow to Succeed under this engine", lambda: set(
            phases(cluster, namespace).values()) == {"Succeed"}, timeout=300, interval=2)
        taken_over = {name: set(uids) for name, uids in history.uids.items()}

        chart_helm(cluster, "uninstall", RELEASE, "--wait")
        with upstream_controllers(cluster):
            apply(cluster, namespace, SKIPS)
            cluster.wait_until("upstream to finish skips", lambda: phases(cluster, namespace).get("skips") == "Succeed",
                               timeout=180, interval=1)
            skips = jobflow(cluster, namespace, "skips")
    finally:
        history.stop()

    assert set(mid_run.values()) & {"Running", "Pending"}, mid_run  # the switch came mid-run
    assert history.created_twice() == {}
    assert history.regressions() == {}
    # Back under upstream: this engine's `when` ignored, no progress written, the finished JobFlows left alone.
    assert {"skips-a", "skips-b"} <= set(history.uids)
    assert "progress" not in skips["status"]
    assert {name: uids for name, uids in history.uids.items() if not name.startswith("skips-")} == taken_over
