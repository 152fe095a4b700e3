"""Upgrades and rollbacks that lose nothing: from the real 0.1.0 (the commit CHANGELOG names, its image built from
that commit's own Dockerfile) to this tree's engine and back, with JobFlows running throughout.

On the install tier's cluster (its node runs both images), the chart (docs/helm.md) is installed with 0.1.0's
image; JobFlows start (diamonds, two with ``jobRetainPolicy: delete``, a fan-out, a loop); ``helm upgrade`` to this
tree's image rolls the pods, so old and new handlers and event sources run side by side for a while, and the API
server is restarted during the roll; more JobFlows start, one of them with a CEL function 0.1.0 does not know;
``helm rollback`` brings 0.1.0 back while they run. Throughout, a probe makes a dry-run create through the webhook
every half second. Every JobFlow must reach Succeed, each vcjob be created once (by UID), no phase go back, and the
webhook refuse nothing valid. Then the object 0.1.0 does not understand: created after the rollback, 0.1.0's webhook
lets it in (it did not check CEL functions) and its handler holds it Pending, saying why (``ConditionError``); the
next upgrade runs it to Succeed, so it is never stuck for good.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest
from kubernetes.client.rest import ApiException

from devcluster import image, pod_node
from devcluster.helm import CHART
from devcluster.testing import LocalCluster
from installation import NAMESPACE, RELEASE, chart_helm, install_release, wait_rolled_out
from objects import History, apply, flow_phase, jobflow, phases, template
from seeds import diamond_yaml

pytestmark = pytest.mark.cluster

OLD = "b235eef"  # CHANGELOG.md: [0.1.0]
FAN_OUT = ("apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: NAME}\n"
           "spec: {flows: [{name: item, forEach: {range: {count: 4}, parallelism: 2}}]}\n")
LOOP = ("apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: NAME}\n"
        "spec: {flows: [{name: train, repeat: {until: 'double(result) < 0.01', limit: 5}}]}\n")
NEWER = """apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: newer}
spec:
  flows:
  - {name: a, when: "'jobflow'.upperAscii() == 'JOBFLOW'"}
  - {name: b, dependsOn: {targets: [a]}}
"""
"""A JobFlow only the newer engine understands: ``upperAscii`` is one of Kubernetes' CEL string functions, which
0.1.0 did not have."""
PROBE = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "probe"},
         "spec": {"flows": [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}]}}


@dataclass
class WebhookProbe:
    """A dry-run create of a valid JobFlow every half second, through the webhook: how many the webhook answered,
    refused, or failed to answer (``failed calling webhook``), and how many found the API server away."""

    cluster: LocalCluster
    namespace: str
    answered: int = 0
    failures: list[str] = field(default_factory=list)
    api_away: int = 0
    marks: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self.cluster.custom.create_namespaced_custom_object("flow.volcano.sh", "v1alpha1", self.namespace,
                                                                    "jobflows", PROBE, dry_run="All")
                self.answered += 1
            except ApiException as error:
                if error.status in (500, 502, 503, 504) and "webhook" not in (error.body or ""):
                    self.api_away += 1
                else:
                    self.failures.append(f"{self._now()} {error.status}: {(error.body or '')[:300]}")
            except Exception:  # the API server is down (its restart)
                self.api_away += 1

    def _now(self) -> str:
        return f"{time.monotonic() - self._started:.1f} s"

    def mark(self, what: str) -> None:
        """A step of the test, for the timeline a failure is reported with."""
        self.marks.append(f"{self._now()} {what}")

    def stop(self) -> WebhookProbe:
        self._stop.set()
        self._thread.join(timeout=10)
        return self


def workload(batch: str) -> str:
    """Ten JobFlows of one batch: seven diamonds, two of them deleting their vcjobs when they end, a fan-out, a
    loop whose pods report 0.5, 0.1 and 0.005, and one more diamond."""
    flows = [diamond_yaml(f"{batch}-d{i}", retain="delete" if i < 2 else None) for i in range(8)]
    flows += [FAN_OUT.replace("NAME", f"{batch}-fan"), LOOP.replace("NAME", f"{batch}-loop")]
    return "---\n".join(flows)


def templates() -> str:
    return "---\n".join([*(template(name, run_for="6s") for name in "abcde"), template("item", run_for="4s"),
                         template("train", run_for="3s", messages=("0.5", "0.1", "0.005"))])


@pytest.fixture(scope="module")
def old_image(pods_cluster: LocalCluster) -> str:
    tag = image.ensure_image_of(OLD, log=lambda line: print(line, flush=True))
    pod_node.load_image(pods_cluster.state, tag)
    return tag


def running_images(cluster: LocalCluster) -> set[str]:
    return {container.image for pod in cluster.core.list_namespaced_pod(NAMESPACE).items
            if pod.metadata.deletion_timestamp is None for container in pod.spec.containers}


def test_an_upgrade_and_a_rollback_while_jobflows_run_lose_nothing(pods_cluster: LocalCluster, old_image: str,
                                                                    pods_namespace: str) -> None:
    cluster, namespace = pods_cluster, pods_namespace
    old_tag = old_image.rsplit(":", 1)[1]
    install_release(cluster, "--set", f"image.tag={old_tag}")
    assert running_images(cluster) == {old_image}
    history = History(cluster, namespace)
    probe = WebhookProbe(cluster, namespace)
    try:
        apply(cluster, namespace, templates())
        apply(cluster, namespace, workload("one"))
        cluster.wait_until("the first batch to be running", lambda: sum(
            phase == "Running" for phase in phases(cluster, namespace).values()) >= 5, timeout=120)

        started = time.monotonic()
        probe.mark("helm upgrade")
        chart_helm(cluster, "upgrade", RELEASE, str(CHART), "--reuse-values", "--set", "image.tag=")
        cluster.wait_until("new pods beside the old", lambda: len(running_images(cluster)) == 2, timeout=120,
                           interval=0.2)
        probe.mark("API server outage")
        cluster.api_server_outage(5)
        probe.mark("API server back")
        wait_rolled_out(cluster, timeout=240)
        probe.mark("upgraded")
        upgraded_in = time.monotonic() - started
        assert running_images(cluster) == {image.manifest_image()}

        apply(cluster, namespace, workload("two"))
        apply(cluster, namespace, NEWER)
        cluster.wait_until("the newer JobFlow to pass its CEL condition", lambda: flow_phase(
            cluster, namespace, "newer") in ("Running", "Succeed"), timeout=120)

        started = time.monotonic()
        probe.mark("helm rollback")
        chart_helm(cluster, "rollback", RELEASE, "1", "--wait", "--timeout", "5m")
        wait_rolled_out(cluster, timeout=240)
        probe.mark("rolled back")
        rolled_back_in = time.monotonic() - started
        assert running_images(cluster) == {old_image}

        cluster.wait_until("every JobFlow to Succeed", lambda: set(phases(cluster, namespace).values()) == {"Succeed"},
                           timeout=600, interval=2)
        time.sleep(5)  # a finished JobFlow stays finished: nothing runs its flows again
        ended = phases(cluster, namespace)

        # A JobFlow 0.1.0 does not understand, created after the rollback: its webhook lets it in (it did not
        # check CEL functions), its handler holds it Pending and says why; the next upgrade runs it.
        apply(cluster, namespace, NEWER.replace("name: newer", "name: newer-late"))
        held = cluster.wait_until("0.1.0 to say why it holds newer-late", lambda: (
            (jobflow(cluster, namespace, "newer-late") or {}).get("status") or {}).get("state", {}).get(
                "reason") == "ConditionError" and jobflow(cluster, namespace, "newer-late"), timeout=60)
        probe.mark("upgrade again")
        chart_helm(cluster, "upgrade", RELEASE, str(CHART), "--reuse-values", "--set", "image.tag=", "--wait",
                   "--timeout", "5m")
        cluster.wait_until("newer-late to Succeed", lambda: phases(cluster, namespace)["newer-late"] == "Succeed",
                           timeout=120)
    finally:
        probe.stop()
        history.stop()

    print(f"\nupgrade: {len(ended)} JobFlows, {len(history.uids)} vcjobs created, upgraded in {upgraded_in:.1f} s, "
          f"rolled back in {rolled_back_in:.1f} s; webhook probes answered {probe.answered}, failed "
          f"{len(probe.failures)}, API server away {probe.api_away}; watch gaps {history.gaps}")
    assert len(ended) == 21 and set(ended.values()) == {"Succeed"}
    assert history.created_twice() == {}
    assert history.regressions() == {}
    assert probe.failures == [], "\n".join(probe.failures + probe.marks)
    assert probe.answered > 0
    assert held["status"]["state"]["phase"] == "Pending"
    assert "undeclared reference to 'upperAscii'" in held["status"]["state"]["message"]
