"""Child JobFlows on the real control plane (kube-apiserver, Volcano, kwok): a parent runs two children made from
one JobFlowTemplate with different parameters and reads both children's outputs; a failed child is handled by an
``outcome: Failed`` flow; a retry of the parent reruns only the failed child's failed flow; a ``forEach`` of five
children with ``parallelism: 2``; and the faults: a child deleted while it runs, after it succeeded, the parent
deleted while its children run, and three handlers behind an event stream that drops, duplicates and shuffles."""

from __future__ import annotations

import threading
import time

import pytest

from devcluster.testing import LocalCluster
from objects import History, apply, jobflow, template, vcjobs, wait_for_phase
from test_control_flow_on_volcano import jobflow_cli

pytestmark = pytest.mark.cluster

PREPARE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: prepare}
spec:
  jobFlow:
    spec:
      parameters: [{name: dataset, value: none}]
      outputs: [{name: path, value: "/data/{{params.dataset}}/{{targets.fetch.result.file}}"}]
      flows:
      - {name: fetch}
      - {name: clean, dependsOn: {targets: [fetch]}}
"""

TWO_CHILDREN = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  flows:
  - {name: a, jobFlow: {template: prepare, parameters: [{name: dataset, value: cats}]}}
  - {name: b, jobFlow: {template: prepare, parameters: [{name: dataset, value: dogs}]}}
  - name: train
    dependsOn: {targets: [a, b]}
    patch:
      jobSpec:
        tasks:
        - name: main
          template:
            spec:
              containers:
              - name: main
                env:
                - {name: A, value: "{{targets.a.result.path}}"}
                - {name: B, value: "{{targets.b.result.path}}"}
"""


def children_of(cluster: LocalCluster, namespace: str, parent: str) -> dict[str, dict]:
    listed = cluster.custom.list_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                                          label_selector=f"flow.volcano.sh/parent={parent}")
    return {item["metadata"]["name"]: item for item in listed["items"]}


def test_two_children_of_one_template_with_their_own_parameters_hand_their_outputs_to_the_next_flow(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("fetch", message="file=part-0.csv"), template("clean"),
                                            template("train"), PREPARE]))
    apply(cluster, namespace, TWO_CHILDREN.replace("NAME", "pipe"))
    parent = wait_for_phase(cluster, namespace, "pipe", "Succeed", timeout=120)
    children = children_of(cluster, namespace, "pipe")
    assert sorted(children) == ["pipe-a", "pipe-b"]
    assert {name: c["status"]["outputs"] for name, c in children.items()} == {
        "pipe-a": {"path": "/data/cats/part-0.csv"}, "pipe-b": {"path": "/data/dogs/part-0.csv"}}
    assert all(c["metadata"]["ownerReferences"][0]["uid"] == parent["metadata"]["uid"] for c in children.values())
    jobs = vcjobs(cluster, namespace)
    assert sorted(jobs) == ["pipe-a-clean", "pipe-a-fetch", "pipe-b-clean", "pipe-b-fetch", "pipe-train"]
    env = jobs["pipe-train"]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "A", "value": "/data/cats/part-0.csv"}, {"name": "B", "value": "/data/dogs/part-0.csv"}]
    records = {r["name"]: r for r in parent["status"]["jobStatusList"]}
    assert records["pipe-a"]["state"] == "Completed" and records["pipe-b"]["state"] == "Completed"
    assert parent["status"]["progress"] == "3/3"


FLAKY = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: flaky}
spec:
  jobFlow:
    spec:
      flows:
      - {name: ok}
      - {name: bad, dependsOn: {targets: [ok]}}
"""


def test_a_failed_child_is_handled_by_an_outcome_failed_flow_of_the_parent(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("ok"), template("bad", fail=True), template("alert"),
                                            template("next"), FLAKY]))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: handled}
spec:
  flows:
  - {name: c, jobFlow: {template: flaky}}
  - {name: alert, dependsOn: {targets: [c], outcome: Failed}}
  - {name: next, dependsOn: {targets: [c]}}
""")
    parent = wait_for_phase(cluster, namespace, "handled", "Succeed", timeout=120)  # its failure was handled
    assert jobflow(cluster, namespace, "handled-c")["status"]["state"]["phase"] == "Failed"
    jobs = vcjobs(cluster, namespace)
    assert jobs["handled-alert"]["status"]["state"]["phase"] == "Completed"
    assert "handled-next" not in jobs
    assert [s["name"] for s in parent["status"]["skippedFlows"]] == ["next"]


def test_a_retry_of_the_parent_reruns_only_the_failed_flows_of_its_failed_child(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("ok"), template("bad", fail_attempts=1), template("next"),
                                            FLAKY]))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: again}
spec:
  flows:
  - {name: c, jobFlow: {template: flaky}}
  - {name: next, dependsOn: {targets: [c]}}
""")
    wait_for_phase(cluster, namespace, "again", "Failed", timeout=120)
    child_uid = jobflow(cluster, namespace, "again-c")["metadata"]["uid"]
    code, said = jobflow_cli(cluster, "retry", "again", "-n", namespace)
    assert code == 0, said
    parent = wait_for_phase(cluster, namespace, "again", "Succeed", timeout=120)
    child = jobflow(cluster, namespace, "again-c")
    assert child["metadata"]["uid"] == child_uid  # the same child, rerun: not a new one
    assert child["status"]["state"]["phase"] == "Succeed"
    assert sorted(vcjobs(cluster, namespace)) == ["again-c-bad", "again-c-bad-r1", "again-c-ok", "again-next"]
    assert parent["status"]["rerun"]["childReruns"] == {"again-c": parent["status"]["rerun"]["id"]}
    assert "again-c-r1" not in children_of(cluster, namespace, "again")


UNIT = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: unit}
spec:
  jobFlow:
    spec:
      parameters: [{name: n, value: "0"}]
      outputs: [{name: n, value: "{{params.n}}"}]
      flows: [{name: step}]
"""


def test_a_for_each_of_five_children_runs_at_most_two_at_once(cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("step", run_for="1s") + "---\n" + UNIT)
    most, stop = [0], threading.Event()

    def watch_running() -> None:
        while not stop.is_set():
            running = [c for c in children_of(cluster, namespace, "fan").values()
                       if ((c.get("status") or {}).get("state") or {}).get("phase") not in ("Succeed", "Failed")]
            most[0] = max(most[0], len(running))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch_running, daemon=True)
    watcher.start()
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: fan}
spec:
  flows:
  - name: each
    forEach: {range: {count: 5}, parallelism: 2}
    jobFlow: {template: unit, parameters: [{name: n, value: "{{item}}"}]}
""")
    parent = wait_for_phase(cluster, namespace, "fan", "Succeed", timeout=180)
    stop.set()
    watcher.join(timeout=5)
    children = children_of(cluster, namespace, "fan")
    assert sorted(children) == [f"fan-each-{i}" for i in range(5)]
    assert {name: c["status"]["outputs"]["n"] for name, c in children.items()} == {
        f"fan-each-{i}": str(i) for i in range(5)}
    assert 1 <= most[0] <= 2
    assert parent["status"]["fanOuts"][0]["succeeded"] == 5


def test_children_are_made_once_whatever_is_deleted_and_go_with_their_parent(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("fetch", message="file=x"), template("clean", run_for="3s"),
                                            template("train"), PREPARE]))
    history = History(cluster, namespace)
    apply(cluster, namespace, TWO_CHILDREN.replace("NAME", "gone"))
    cluster.wait_until("pipe-a runs", lambda: "gone-a-clean" in vcjobs(cluster, namespace), timeout=60)
    first_a = jobflow(cluster, namespace, "gone-a")["metadata"]["uid"]
    cluster.custom.delete_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "gone-a")
    cluster.wait_until("a child deleted while it ran is made again", lambda: (jobflow(cluster, namespace, "gone-a")
                       or {}).get("metadata", {}).get("uid") not in (None, first_a), timeout=60)
    wait_for_phase(cluster, namespace, "gone", "Succeed", timeout=120)
    succeeded_b = jobflow(cluster, namespace, "gone-b")["metadata"]["uid"]
    cluster.custom.delete_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "gone-b")
    cluster.wait_until("the succeeded child goes", lambda: jobflow(cluster, namespace, "gone-b") is None, timeout=30)
    time.sleep(3)
    assert jobflow(cluster, namespace, "gone-b") is None  # recorded Completed: never made again
    assert jobflow(cluster, namespace, "gone")["status"]["state"]["phase"] == "Succeed"
    seen = history.stop()
    assert seen.flow_uids["gone-b"] == {succeeded_b} and len(seen.flow_uids["gone-a"]) == 2
    # The child deleted while it ran took its vcjobs with it; the new child ran them again. Nothing else twice.
    assert seen.created_twice() == {"gone-a-fetch": 2, "gone-a-clean": 2} and seen.regressions() == {}

    apply(cluster, namespace, TWO_CHILDREN.replace("NAME", "dropped"))
    cluster.wait_until("its children run", lambda: "dropped-b-clean" in vcjobs(cluster, namespace), timeout=60)
    cluster.custom.delete_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "dropped")
    cluster.wait_until("the children and their vcjobs go with the parent (nothing held by a finalizer)",
                       lambda: not children_of(cluster, namespace, "dropped")
                       and not [j for j in vcjobs(cluster, namespace) if j.startswith("dropped-")], timeout=90)


def test_three_handlers_with_dropped_duplicated_and_shuffled_events_make_each_child_once(
        cluster: LocalCluster, namespace: str) -> None:
    import eventsource
    from apiclient import cloudevents
    from engine import Mangler, Pinger, Spreader, serve
    from handlers.kube import KubeApi

    apply(cluster, namespace, "---\n".join([template("fetch", message="file=x"), template("clean"), template("train"),
                                            template("step"), PREPARE, UNIT]))
    with serve(KubeApi(cluster.connection)) as one, serve(KubeApi(cluster.connection)) as two, \
            serve(KubeApi(cluster.connection)) as three:
        spread = Spreader([one, two, three])
        mangler = Mangler(spread.url, seed=45)
        source = eventsource.start(cluster.connection, sink=mangler.url, namespaces=[namespace],
                                   mode=cloudevents.Mode.REFERENCE, resync_seconds=3600, senders=4, watch_seconds=2)
        pinger = Pinger(one, seconds=5)
        history = History(cluster, namespace)
        try:
            apply(cluster, namespace, TWO_CHILDREN.replace("NAME", "race"))
            apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: many}
spec:
  flows:
  - {name: each, forEach: {range: {count: 3}}, jobFlow: {template: unit, parameters: [{name: n, value: "{{item}}"}]}}
""")
            for name in ("race", "many"):
                wait_for_phase(cluster, namespace, name, "Succeed", timeout=180)
        finally:
            pinger.stop()
            source.stop()
            mangler.server.shutdown()
            spread.server.shutdown()
        seen = history.stop()
    children = ["race-a", "race-b", "many-each-0", "many-each-1", "many-each-2"]
    assert {name: len(seen.flow_uids.get(name, ())) for name in children} == dict.fromkeys(children, 1)
    assert seen.created_twice() == {} and seen.regressions() == {}
    print(f"{mangler.dropped} events dropped, {mangler.delivered} deliveries, handlers took {spread.counts}")
    assert mangler.dropped > 0 and all(spread.counts)


def test_a_child_left_by_a_stopped_engine_holds_its_namespace_until_kubectl_jobflow_release(
        cluster: LocalCluster, namespace: str) -> None:
    from engine import start_engine
    from test_uninstall import namespace_gone

    engine = start_engine(cluster, namespace)
    try:
        apply(cluster, namespace, "---\n".join([template("fetch", keep_running=True), template("clean"),
                                                template("train"), PREPARE]))
        apply(cluster, namespace, TWO_CHILDREN.replace("NAME", "left"))
        cluster.wait_until("the children run", lambda: {"left-a-fetch", "left-b-fetch"} <= set(vcjobs(
            cluster, namespace)), timeout=60)
    finally:
        engine.stop()
    cluster.delete_namespace(namespace)
    cluster.wait_until("the children held by the engine's finalizer", lambda: all(
        (jobflow(cluster, namespace, name) or {}).get("metadata", {}).get("deletionTimestamp")
        for name in ("left-a", "left-b")), timeout=60)
    code, said = jobflow_cli(cluster, "release", "-n", namespace)
    assert code == 0, said
    assert f"Released child JobFlow: {namespace}/left-a" in said and "and 2 child JobFlow(s)" in said
    cluster.wait_until(f"namespace {namespace} to go", lambda: namespace_gone(cluster, namespace), timeout=90,
                       interval=1)


def test_a_stop_passes_down_to_the_child_and_a_retry_of_the_parent_runs_the_same_child_on(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("fetch", message="file=x"), template("clean", run_for="4s"),
                                            template("train"), PREPARE]))
    apply(cluster, namespace, TWO_CHILDREN.replace("NAME", "halt"))
    cluster.wait_until("the children clean", lambda: {"halt-a-clean", "halt-b-clean"} <= set(vcjobs(
        cluster, namespace)), timeout=60)
    code, said = jobflow_cli(cluster, "stop", "halt", "-n", namespace)
    assert code == 0, said
    parent = wait_for_phase(cluster, namespace, "halt", "Failed", timeout=60)
    assert parent["status"]["state"]["reason"] == "Stopped"
    children = children_of(cluster, namespace, "halt")
    assert {c["spec"].get("shutdown") for c in children.values()} == {"Stop"}
    assert {c["status"]["state"]["reason"] for c in children.values()} == {"Stopped"}
    uids = {name: c["metadata"]["uid"] for name, c in children.items()}
    code, said = jobflow_cli(cluster, "retry", "halt", "-n", namespace)
    assert code == 0, said
    wait_for_phase(cluster, namespace, "halt", "Succeed", timeout=120)
    children = children_of(cluster, namespace, "halt")
    assert {name: c["metadata"]["uid"] for name, c in children.items()} == uids  # the same children, run on
    assert all("shutdown" not in c["spec"] for c in children.values())
    assert "halt-train" in vcjobs(cluster, namespace)
