"""Parameters and loops on the real control plane (Volcano job controller, scheduler, kwok)."""

from __future__ import annotations

import io
import json
import threading

import pytest
from kubernetes import watch

from devcluster.testing import LocalCluster
from kubectl_jobflow.cli import run
from objects import apply, template, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

SWEEP = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: sweep}
spec:
  parameters:
  - {name: lr, value: "0.1"}
  - {name: epochs, value: "10"}
  flows:
  - name: train
    patch:
      jobSpec:
        tasks:
        - name: main
          template:
            spec:
              containers:
              - name: main
                env:
                - {name: LR, value: "{{params.lr}}"}
                - {name: EPOCHS, value: "{{params.epochs}}"}
                args: ["--lr={{ params.lr }}", "--epochs={{params.epochs}}"]
"""


def jobflow_cli(cluster: LocalCluster, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run([*argv, "--kubeconfig", str(cluster.state.kubeconfig)], out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def test_one_jobflow_file_run_twice_with_other_parameters_makes_vcjobs_that_differ_only_in_them(
        cluster: LocalCluster, namespace: str, engine, tmp_path) -> None:
    apply(cluster, namespace, template("train"))
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    names = []
    for values in (["-p", "lr=0.01", "-p", "epochs=50"], ["-p", "lr=0.001"]):
        code, output = jobflow_cli(cluster, "create", "-f", str(path), "-n", namespace, "--generate-name", *values)
        assert code == 0, output
        names.append(output.strip().rsplit("/", 1)[1])
    assert all(name.startswith("sweep-") and len(name) == len("sweep-") + 5 for name in names)

    for name in names:
        wait_for_phase(cluster, namespace, name, "Succeed", timeout=60)
    first, second = (vcjobs(cluster, namespace)[f"{name}-train"] for name in names)
    containers = [job["spec"]["tasks"][0]["template"]["spec"]["containers"][0] for job in (first, second)]
    assert containers[0]["env"] == [{"name": "LR", "value": "0.01"}, {"name": "EPOCHS", "value": "50"}]
    assert containers[1]["env"] == [{"name": "LR", "value": "0.001"}, {"name": "EPOCHS", "value": "10"}]
    assert containers[1]["args"] == ["--lr=0.001", "--epochs=10"]
    for container in containers:
        del container["env"], container["args"]
    assert first["spec"] == second["spec"]  # nothing else differs

    code, output = jobflow_cli(cluster, "create", "-f", str(path), "-n", namespace, "-p", "rate=1")
    assert code == 2 and "declares no parameter rate (it declares: lr, epochs)" in output


class VcjobWatch:
    """Watches a namespace's vcjobs in the background, as a user would with ``kubectl get vcjob -w``, and
    remembers the most vcjobs named ``<prefix>...`` that were live and not ended at once."""

    FINAL = {"Completed", "Failed", "Terminated", "Aborted"}

    def __init__(self, cluster: LocalCluster, namespace: str, *, prefix: str) -> None:
        self.phases: dict[str, str] = {}
        self.most = 0
        self.prefix = prefix
        self._stop = threading.Event()
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, args=(cluster, namespace), daemon=True)
        self._thread.start()

    def _run(self, cluster: LocalCluster, namespace: str) -> None:
        stream = self._watch.stream(cluster.custom.list_namespaced_custom_object, "batch.volcano.sh", "v1alpha1",
                                    namespace, "jobs", timeout_seconds=300)
        try:
            for event in stream:
                job = event["object"]
                name = job["metadata"]["name"]
                if event["type"] == "DELETED":
                    self.phases.pop(name, None)
                else:
                    self.phases[name] = ((job.get("status") or {}).get("state") or {}).get("phase") or "New"
                self.most = max(self.most, sum(phase not in self.FINAL for name, phase in self.phases.items()
                                               if name.startswith(self.prefix)))
        except Exception:  # the connection is closed under it by stop()
            if not self._stop.is_set():
                raise

    def stop(self) -> None:
        self._stop.set()
        self._watch.stop()
        self._thread.join(timeout=10)


SWEEP_ITEMS = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: grid}
spec:
  flows:
  - name: train
    forEach:
      parallelism: 2
      items:
      - {lr: 0.1, batch: 32}
      - {lr: 0.1, batch: 64}
      - {lr: 0.01, batch: 32}
      - {lr: 0.01, batch: 64}
      - {lr: 0.001, batch: 32}
      - {lr: 0.001, batch: 64}
    patch:
      jobSpec:
        tasks:
        - name: main
          template:
            spec:
              containers:
              - name: main
                env:
                - {name: LR, value: "{{item.lr}}"}
                - {name: BATCH, value: "{{item.batch}}"}
  - name: pick
    dependsOn: {targets: [train]}
"""


def test_a_sweep_of_3_rates_by_2_batch_sizes_runs_6_vcjobs_at_most_2_at_once_then_the_fan_in(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("train", run_for="1s") + "---\n" + template("pick"))
    watcher = VcjobWatch(cluster, namespace, prefix="grid-train-")
    try:
        apply(cluster, namespace, SWEEP_ITEMS)
        flow = wait_for_phase(cluster, namespace, "grid", "Succeed", timeout=120)
    finally:
        watcher.stop()

    jobs = vcjobs(cluster, namespace)
    assert sorted(jobs) == sorted([f"grid-train-{i}" for i in range(6)] + ["grid-pick"])
    envs = [{e["name"]: e["value"] for e in jobs[f"grid-train-{i}"]["spec"]["tasks"][0]["template"]["spec"]
             ["containers"][0]["env"]} for i in range(6)]
    assert envs == [{"LR": lr, "BATCH": batch} for lr in ("0.1", "0.01", "0.001") for batch in ("32", "64")]
    assert [jobs[f"grid-train-{i}"]["metadata"]["labels"]["flow.volcano.sh/item-index"] for i in range(6)] == \
        [str(i) for i in range(6)]
    assert watcher.most == 2  # never more than parallelism, and the limit was used
    last_item_end = max(jobs[f"grid-train-{i}"]["status"]["state"]["lastTransitionTime"] for i in range(6))
    assert jobs["grid-pick"]["metadata"]["creationTimestamp"] >= last_item_end
    items_live = [name for name in watcher.phases if name.startswith("grid-train-")]
    assert len(items_live) == 6 and flow["status"]["progress"] == "2/2"


def test_a_fan_out_over_the_result_of_split_runs_one_process_vcjob_per_element(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("split", message='["s0","s1","s2"]') + "---\n" + template("process"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: shards}
spec:
  flows:
  - name: split
  - name: process
    dependsOn: {targets: [split]}
    forEach: {result: split}
    patch: {jobSpec: {tasks: [{name: main, template: {spec: {containers: [{name: main, args: ["{{item}}"]}]}}}]}}
""")
    flow = wait_for_phase(cluster, namespace, "shards", "Succeed", timeout=90)
    jobs = vcjobs(cluster, namespace)
    assert sorted(jobs) == ["shards-process-0", "shards-process-1", "shards-process-2", "shards-split"]
    assert [jobs[f"shards-process-{i}"]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["args"]
            for i in range(3)] == [["s0"], ["s1"], ["s2"]]
    [split] = [r for r in flow["status"]["jobStatusList"] if r["name"] == "shards-split"]
    assert split["result"] == '["s0","s1","s2"]'


SHARD_ITEMS = "[" + ", ".join(f"{{fail: '{str(i in (3, 7)).lower()}'}}" for i in range(10)) + "]"
"""Ten shards; items 3 and 7 carry kwok's fail annotation through the patch, so their pods end Failed."""

AGGREGATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  flows:
  - name: shard
    forEach: {items: ITEMS}
    patch:
      jobSpec:
        tasks:
        - name: main
          template:
            metadata:
              annotations: {kwok.jobflow.dev/fail: "{{item.fail}}"}
  - name: merge
    dependsOn: {targets: [shard], outcome: Finished}
    when: "CONDITION"
"""


def test_ten_shards_of_which_two_fail_merge_under_at_least_8_succeeded_and_skip_under_all_succeeded(
        cluster: LocalCluster, namespace: str, engine) -> None:
    shard = template("shard", fail=True).replace("kwok.jobflow.dev/fail: 'true'", "kwok.jobflow.dev/fail: 'false'")
    apply(cluster, namespace, shard + "---\n" + template("merge"))
    for name, condition in (("lenient", "targets.shard.succeeded >= 8"), ("strict", "targets.shard.failed == 0")):
        apply(cluster, namespace, AGGREGATE.replace("NAME", name).replace("ITEMS", SHARD_ITEMS)
              .replace("CONDITION", condition))
    lenient = wait_for_phase(cluster, namespace, "lenient", "Succeed", timeout=120)
    strict = wait_for_phase(cluster, namespace, "strict", "Succeed", timeout=120)
    jobs = vcjobs(cluster, namespace)
    assert sorted(name for name in jobs if name.startswith("lenient-shard-")
                  and jobs[name]["status"]["state"]["phase"] != "Completed") == ["lenient-shard-3", "lenient-shard-7"]
    assert "lenient-merge" in jobs and "strict-merge" not in jobs
    assert [(s["name"], s["reason"]) for s in strict["status"]["skippedFlows"]] == [("merge", "ConditionFalse")]
    assert lenient["status"]["progress"] == "2/2"


LOOP = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  flows:
  - name: train
    repeat: {until: "double(result) < 0.01", limit: LIMIT}
  - name: deploy
    dependsOn: {targets: [train]}
    when: targets.train.iterations == 3
"""


def test_a_loop_whose_pods_report_0_5_then_0_1_then_0_005_stops_after_the_third_and_a_limit_of_2_fails_it(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("train", messages=("0.5", "0.1", "0.005", "0.001")) + "---\n"
          + template("deploy"))
    apply(cluster, namespace, LOOP.replace("NAME", "converges").replace("LIMIT", "10"))
    apply(cluster, namespace, LOOP.replace("NAME", "gives-up").replace("LIMIT", "2"))

    converged = wait_for_phase(cluster, namespace, "converges", "Succeed", timeout=120)
    results = {r["name"]: r.get("result") for r in converged["status"]["jobStatusList"]}
    assert results == {"converges-train-0": "0.5", "converges-train-1": "0.1", "converges-train-2": "0.005",
                       "converges-deploy": None}
    jobs = vcjobs(cluster, namespace)
    assert [jobs[f"converges-train-{i}"]["metadata"]["labels"]["flow.volcano.sh/iteration"] for i in range(3)] == \
        ["0", "1", "2"]
    assert jobs["converges-train-1"]["metadata"]["creationTimestamp"] >= \
        jobs["converges-train-0"]["status"]["state"]["lastTransitionTime"]

    gave_up = wait_for_phase(cluster, namespace, "gives-up", "Failed", timeout=120)
    assert gave_up["status"]["state"]["message"].startswith(
        "flow \"train\" (repeat) failed: 2 iterations ran and until (double(result) < 0.01) never held "
        "(last result: '0.1')")
    assert sorted(name for name in vcjobs(cluster, namespace) if name.startswith("gives-up-")) == \
        ["gives-up-train-0", "gives-up-train-1"]


def test_a_200_item_fan_out_at_parallelism_50_succeeds_and_its_jobflow_stays_small(
        cluster: LocalCluster, namespace: str, engine) -> None:
    # CI's size; benchmarks/fan_out.py runs 1,000 (docs/performance.md).
    apply(cluster, namespace, template("item", run_for="0s"))
    watcher = VcjobWatch(cluster, namespace, prefix="many-item-")
    try:
        apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: many}\n"
                                  "spec: {flows: [{name: item, forEach: {range: {count: 200}, parallelism: 50}}]}")
        flow = wait_for_phase(cluster, namespace, "many", "Succeed", timeout=240)
    finally:
        watcher.stop()
    assert watcher.most <= 50
    assert flow["status"]["fanOuts"] == [{"name": "item", "total": 200, "succeeded": 200, "failed": 0,
                                          "running": 0, "waiting": 0}]
    assert len(flow["status"]["completedJobs"]) == 200 and "jobStatusList" not in flow["status"]
    assert len(json.dumps(flow, separators=(",", ":"))) < 16 * 200 + 4000  # the documented bound, plus metadata
