"""A JobFlow that waits for another JobFlow (``dependsOn.jobFlows``, :mod:`jobflow_core.dag.awaits`) on the real
control plane (kube-apiserver, Volcano, kwok), with the engine's resync turned off: the waiter labels itself and
starts from the awaited JobFlow's end alone; a failed dependency fails it unless it waits for any end; a
JobFlowTemplate dependency binds the newest run within its window, never an older one, and keeps that binding after
the run is deleted; a timeout fails the dependency; three handlers behind an event stream that drops, duplicates
and shuffles start the waiter's flow once and bind it once; and Knative's real ApiServerSource adapter wakes it
too."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from devcluster.testing import LocalCluster
from engine import Engine, start_engine
from objects import History, apply, jobflow, template, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

NO_RESYNC = 10**6
"""The event source's resync period, in seconds: never, within a test."""


@pytest.fixture
def quiet_engine(cluster: LocalCluster, namespace: str) -> Iterator[Engine]:
    """The engine with its resync effectively off, so what starts a waiter can only be an event (or a recheck its
    status asks for)."""
    running = start_engine(cluster, namespace, resync_seconds=NO_RESYNC)
    yield running
    running.stop()


def a_jobflow(name: str, *, flow: str, depends: str | None = None, labels: str | None = None) -> str:
    """A one-flow JobFlow; ``depends``: its ``spec.dependsOn`` as flow-style YAML; ``labels`` its labels, likewise."""
    return (f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\n"
            f"metadata: {{name: {name}{', labels: ' + labels if labels else ''}}}\n"
            f"spec:\n  flows: [{{name: {flow}}}]\n" + (f"  dependsOn: {depends}\n" if depends else ""))


def run_of(name: str, template_name: str, *, flow: str) -> str:
    """A run of JobFlowTemplate ``template_name``, as ``kubectl jobflow run`` labels it."""
    return a_jobflow(name, flow=flow, labels=f'{{flow.volcano.sh/jobflow-template: "{template_name}"}}')


def jobflow_template(name: str, *, flow: str) -> str:
    return (f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlowTemplate\nmetadata: {{name: {name}}}\n"
            f"spec:\n  jobFlow:\n    spec:\n      flows: [{{name: {flow}}}]\n")


def status(cluster: LocalCluster, namespace: str, name: str) -> dict:
    return (jobflow(cluster, namespace, name) or {}).get("status") or {}


def awaited(cluster: LocalCluster, namespace: str, name: str) -> list[dict]:
    return status(cluster, namespace, name).get("awaitedJobFlows") or []


def when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_a_waiter_created_first_starts_from_the_awaited_jobflows_succeed_without_a_resync(
        cluster: LocalCluster, namespace: str, quiet_engine: Engine) -> None:
    apply(cluster, namespace, template("train", run_for="1s") + "---\n" + template("evaluate"))
    apply(cluster, namespace, a_jobflow("eval", flow="evaluate", depends="{jobFlows: [{name: nightly}]}"))
    waiting = cluster.wait_until("eval to say what it waits for", lambda: (
        status(cluster, namespace, "eval").get("waitingFlows") or [None])[0], timeout=30)
    assert waiting["waitingFor"] == ["JobFlow/nightly"]
    assert '"nightly"' in waiting["message"], waiting
    labels = jobflow(cluster, namespace, "eval")["metadata"].get("labels") or {}
    assert labels.get("jobflow.waits.flow.volcano.sh/nightly") == "true", labels
    assert "eval-evaluate" not in vcjobs(cluster, namespace)

    apply(cluster, namespace, a_jobflow("nightly", flow="train"))
    nightly = wait_for_phase(cluster, namespace, "nightly", "Succeed", timeout=60)
    evaluate = cluster.wait_until("eval's vcjob", lambda: vcjobs(cluster, namespace).get("eval-evaluate"),
                                  timeout=30)
    assert when(evaluate["metadata"]["creationTimestamp"]) >= when(nightly["status"]["endTimestamp"])
    [entry] = awaited(cluster, namespace, "eval")
    assert (entry["name"], entry["jobFlow"], entry["uid"], entry["phase"]) == (
        "JobFlow/nightly", "nightly", nightly["metadata"]["uid"], "Succeed")
    wait_for_phase(cluster, namespace, "eval", "Succeed", timeout=60)
    labels = jobflow(cluster, namespace, "eval")["metadata"].get("labels") or {}
    assert not [key for key in labels if ".waits.flow.volcano.sh/" in key], labels


def test_a_failed_awaited_jobflow_fails_its_waiter_unless_it_waits_for_any_end(
        cluster: LocalCluster, namespace: str, quiet_engine: Engine) -> None:
    apply(cluster, namespace, template("train", fail=True) + "---\n" + template("evaluate"))
    apply(cluster, namespace, "---\n".join([
        a_jobflow("any", flow="evaluate", depends="{jobFlows: [{name: nightly}], outcome: Finished}"),
        a_jobflow("strict", flow="evaluate", depends="{jobFlows: [{name: nightly}]}")]))
    cluster.wait_until("both to wait", lambda: all(status(cluster, namespace, name).get("waitingFlows")
                                                   for name in ("any", "strict")), timeout=30)
    apply(cluster, namespace, a_jobflow("nightly", flow="train"))
    wait_for_phase(cluster, namespace, "nightly", "Failed", timeout=60)
    strict = wait_for_phase(cluster, namespace, "strict", "Failed", timeout=30)
    assert strict["status"]["state"]["reason"] == "DependencyFailed", strict["status"]
    assert strict["status"]["awaitedJobFlows"][0]["phase"] == "Failed"
    wait_for_phase(cluster, namespace, "any", "Succeed", timeout=60)
    jobs = vcjobs(cluster, namespace)
    assert "any-evaluate" in jobs and "strict-evaluate" not in jobs


def test_a_template_dependency_binds_a_new_run_not_one_older_than_its_window(
        cluster: LocalCluster, namespace: str, quiet_engine: Engine) -> None:
    apply(cluster, namespace, "---\n".join([template("train"), template("evaluate"),
                                            jobflow_template("nightly", flow="train")]))
    apply(cluster, namespace, run_of("nightly-old", "nightly", flow="train"))
    old = wait_for_phase(cluster, namespace, "nightly-old", "Succeed", timeout=60)
    created = when(old["metadata"]["creationTimestamp"])
    time.sleep(max(0.0, (created + timedelta(seconds=5) - datetime.now(UTC)).total_seconds()))
    apply(cluster, namespace, a_jobflow("eval", flow="evaluate",
                                        depends="{jobFlows: [{template: nightly, withinSeconds: 3}]}"))
    cluster.wait_until("eval to wait", lambda: status(cluster, namespace, "eval").get("waitingFlows"), timeout=30)
    time.sleep(3)
    assert "eval-evaluate" not in vcjobs(cluster, namespace), "bound to a run older than withinSeconds"
    [entry] = awaited(cluster, namespace, "eval")
    assert entry["name"] == "JobFlowTemplate/nightly" and "jobFlow" not in entry, entry
    labels = jobflow(cluster, namespace, "eval")["metadata"].get("labels") or {}
    assert labels.get("jobflowtemplate.waits.flow.volcano.sh/nightly") == "true", labels

    apply(cluster, namespace, run_of("nightly-new", "nightly", flow="train"))
    new = wait_for_phase(cluster, namespace, "nightly-new", "Succeed", timeout=60)
    cluster.wait_until("eval's vcjob", lambda: "eval-evaluate" in vcjobs(cluster, namespace), timeout=30)
    [entry] = awaited(cluster, namespace, "eval")
    assert (entry["jobFlow"], entry["uid"], entry["phase"]) == ("nightly-new", new["metadata"]["uid"], "Succeed")
    wait_for_phase(cluster, namespace, "eval", "Succeed", timeout=60)


def test_the_binding_and_the_recorded_end_outlive_the_deleted_run(
        cluster: LocalCluster, namespace: str, quiet_engine: Engine) -> None:
    apply(cluster, namespace, "---\n".join([template("train"), template("evaluate", run_for="5s"),
                                            jobflow_template("nightly", flow="train")]))
    apply(cluster, namespace, run_of("nightly-1", "nightly", flow="train"))
    wait_for_phase(cluster, namespace, "nightly-1", "Succeed", timeout=60)
    apply(cluster, namespace, a_jobflow("eval", flow="evaluate", depends="{jobFlows: [{template: nightly}]}"))
    cluster.wait_until("eval's vcjob", lambda: "eval-evaluate" in vcjobs(cluster, namespace), timeout=30)
    [bound] = awaited(cluster, namespace, "eval")
    assert (bound["jobFlow"], bound["phase"]) == ("nightly-1", "Succeed") and bound["endTimestamp"], bound

    cluster.custom.delete_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "nightly-1")
    cluster.wait_until("the run to go", lambda: jobflow(cluster, namespace, "nightly-1") is None, timeout=30)
    time.sleep(2)
    assert awaited(cluster, namespace, "eval") == [bound]
    cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "eval",
                                                  {"metadata": {"annotations": {"touched": "1"}}})
    eval_ = wait_for_phase(cluster, namespace, "eval", "Succeed", timeout=60)
    assert eval_["status"]["awaitedJobFlows"] == [bound]


def test_a_dependency_that_does_not_end_within_its_timeout_fails_the_waiter(
        cluster: LocalCluster, namespace: str, quiet_engine: Engine) -> None:
    apply(cluster, namespace, template("evaluate"))
    apply(cluster, namespace, a_jobflow("eval", flow="evaluate",
                                        depends="{jobFlows: [{name: never, timeoutSeconds: 3}]}"))
    pending = cluster.wait_until("eval to wait", lambda: status(cluster, namespace, "eval").get("waitingFlows")
                                 and status(cluster, namespace, "eval"), timeout=30)
    assert pending.get("recheckSeconds") == 1, pending  # what wakes it: the event source's recheck
    failed = wait_for_phase(cluster, namespace, "eval", "Failed", timeout=30)
    late = (when(failed["status"]["endTimestamp"]) - when(failed["metadata"]["creationTimestamp"])).total_seconds()
    print(f"timed out {late:.0f} s after its creation (timeoutSeconds: 3)")
    assert failed["status"]["state"]["reason"] == "DependencyFailed", failed["status"]
    [entry] = failed["status"]["awaitedJobFlows"]
    assert (entry["name"], entry["reason"]) == ("JobFlow/never", "TimedOut"), entry
    assert "eval-evaluate" not in vcjobs(cluster, namespace)


class Bindings:
    """Every UID each of some JobFlows' dependencies was seen bound to (``status.awaitedJobFlows``), polled in the
    background: a dependency with two was bound twice."""

    def __init__(self, cluster: LocalCluster, namespace: str, names: tuple[str, ...]) -> None:
        self.cluster, self.namespace, self.names = cluster, namespace, names
        self.seen: dict[tuple[str, str], set[str]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            for name in self.names:
                for entry in awaited(self.cluster, self.namespace, name):
                    if entry.get("uid"):
                        self.seen.setdefault((name, entry["name"]), set()).add(entry["uid"])

    def stop(self) -> dict[tuple[str, str], set[str]]:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.seen


def test_three_handlers_with_dropped_duplicated_and_shuffled_events_start_each_waiter_once(
        cluster: LocalCluster, namespace: str) -> None:
    import eventsource
    from apiclient import cloudevents
    from engine import Mangler, Pinger, Spreader, serve
    from handlers.kube import KubeApi

    apply(cluster, namespace, "---\n".join([template("train", run_for="1s"), template("evaluate"),
                                            jobflow_template("nightly", flow="train")]))
    with serve(KubeApi(cluster.connection)) as one, serve(KubeApi(cluster.connection)) as two, \
            serve(KubeApi(cluster.connection)) as three:
        spread = Spreader([one, two, three])
        mangler = Mangler(spread.url, seed=46)
        source = eventsource.start(cluster.connection, sink=mangler.url, namespaces=[namespace],
                                   mode=cloudevents.Mode.REFERENCE, resync_seconds=3600, senders=4, watch_seconds=2)
        pinger = Pinger(one, seconds=5)  # dropped events are the resync's to make up for
        history = History(cluster, namespace)
        bindings = Bindings(cluster, namespace, ("by-name", "by-template"))
        try:
            apply(cluster, namespace, "---\n".join([
                a_jobflow("by-name", flow="evaluate", depends="{jobFlows: [{name: upstream}]}"),
                "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: by-template}\n"
                "spec: {flows: [{name: evaluate, dependsOn: {jobFlows: [{template: nightly}]}}]}\n"]))
            apply(cluster, namespace, a_jobflow("upstream", flow="train") + "---\n"
                  + run_of("nightly-1", "nightly", flow="train"))
            for name in ("upstream", "nightly-1", "by-name", "by-template"):
                wait_for_phase(cluster, namespace, name, "Succeed", timeout=120)
            time.sleep(2)  # late duplicates still arriving
        finally:
            pinger.stop()
            source.stop()
            mangler.server.shutdown()
            spread.server.shutdown()
        seen, bound = history.stop(), bindings.stop()
    uids = {name: jobflow(cluster, namespace, name)["metadata"]["uid"] for name in ("upstream", "nightly-1")}
    assert bound == {("by-name", "JobFlow/upstream"): {uids["upstream"]},
                     ("by-template", "JobFlowTemplate/nightly"): {uids["nightly-1"]}}
    assert seen.created_twice() == {} and seen.regressions() == {}
    assert {"by-name-evaluate", "by-template-evaluate"} <= set(seen.uids)
    print(f"{mangler.dropped} events dropped, {mangler.delivered} deliveries, handlers took {spread.counts}")
    assert mangler.dropped > 0 and all(spread.counts)


def test_under_the_real_apiserversource_the_awaited_end_starts_the_waiter(cluster: LocalCluster, namespace: str,
                                                                           handler) -> None:
    from test_real_apiserversource import start_adapter

    adapter = start_adapter(cluster, namespace, handler)  # no resync: no PingSource
    try:
        apply(cluster, namespace, template("train") + "---\n" + template("evaluate"))
        apply(cluster, namespace, a_jobflow("eval", flow="evaluate", depends="{jobFlows: [{name: nightly}]}"))
        cluster.wait_until("eval to wait", lambda: status(cluster, namespace, "eval").get("waitingFlows"),
                           timeout=30)
        apply(cluster, namespace, a_jobflow("nightly", flow="train"))
        nightly = wait_for_phase(cluster, namespace, "nightly", "Succeed", timeout=60)
        wait_for_phase(cluster, namespace, "eval", "Succeed", timeout=60)
    finally:
        adapter.stop()
    assert awaited(cluster, namespace, "eval")[0]["uid"] == nightly["metadata"]["uid"]
