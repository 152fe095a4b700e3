"""Data between flows on the real control plane: a target's result (its pods' termination message, written by
kwok's pod as ``kwok.jobflow.dev/message`` says) put into the next flow's vcjob, and a fan-out over a list."""

from __future__ import annotations

import pytest

from devcluster.testing import LocalCluster
from objects import apply, template, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

PIPELINE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  flows:
  - name: prepare
  - name: split
    dependsOn: {targets: [prepare]}
    patch:
      jobSpec:
        tasks:
        - name: main
          template:
            metadata:
              annotations: {data.example.com/rows: "{{targets.prepare.result.rows}}"}
            spec:
              containers:
              - name: main
                env: [{name: DATA_PATH, value: "{{targets.prepare.result.path}}"}]
  - name: process
    dependsOn: {targets: [split]}
    forEach: {result: split}
    patch:
      jobSpec:
        tasks:
        - name: main
          template:
            spec:
              containers:
              - {name: main, args: ["--shard={{item}}", "--from={{targets.prepare.result.path}}"]}
"""


def pipeline_templates() -> str:
    return "---\n".join([template("prepare", message="path=/data/2026-11-25 rows=1200"),
                         template("split", message='["s0","s1","s2"]'), template("process")])


def main_container(job: dict) -> dict:
    return job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]


def test_step_2_gets_step_1s_result_in_its_env_and_step_3_fans_out_over_step_2s_list(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, pipeline_templates())
    apply(cluster, namespace, PIPELINE.replace("NAME", "etl"))

    flow = wait_for_phase(cluster, namespace, "etl", "Succeed", timeout=90)
    jobs = vcjobs(cluster, namespace)
    assert sorted(jobs) == ["etl-prepare", "etl-process-0", "etl-process-1", "etl-process-2", "etl-split"]
    split = jobs["etl-split"]
    assert main_container(split)["env"] == [{"name": "DATA_PATH", "value": "/data/2026-11-25"}]
    assert split["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["data.example.com/rows"] == "1200"
    assert main_container(split)["image"] == "busybox"  # the template's own fields are kept
    assert [main_container(jobs[f"etl-process-{i}"])["args"] for i in range(3)] == \
        [[f"--shard=s{i}", "--from=/data/2026-11-25"] for i in range(3)]
    results = {r["name"]: r.get("result") for r in flow["status"]["jobStatusList"]}
    assert results["etl-prepare"] == "path=/data/2026-11-25 rows=1200"  # kept: the pods may go


def test_one_template_runs_under_two_flow_names_with_their_own_patches_and_counts_both_runs(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("train") + "---\n" + template("report"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: sizes}
spec:
  flows:
  - name: small
    jobTemplate: train
    patch: {jobSpec: {tasks: [{name: main, template: {spec: {containers: [{name: main, args: [--size=small]}]}}}]}}
  - name: big
    jobTemplate: train
    patch: {jobSpec: {tasks: [{name: main, template: {spec: {containers: [{name: main, args: [--size=big]}]}}}]}}
  - name: report
    dependsOn: {targets: [small, big]}
""")
    wait_for_phase(cluster, namespace, "sizes", "Succeed", timeout=90)
    jobs = vcjobs(cluster, namespace)
    assert sorted(jobs) == ["sizes-big", "sizes-report", "sizes-small"]
    assert [main_container(jobs[f"sizes-{size}"])["args"] for size in ("small", "big")] == \
        [["--size=small"], ["--size=big"]]
    assert {name: job["metadata"]["labels"]["volcano.sh/createdByJobTemplate"] for name, job in jobs.items()} == \
        {"sizes-small": f"{namespace}.train", "sizes-big": f"{namespace}.train", "sizes-report": f"{namespace}.report"}

    def train() -> dict:
        return cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates",
                                                          "train").get("status") or {}

    cluster.wait_until("both runs counted for train", lambda: train().get("runs") == 2, timeout=30)
    assert sorted(train()["jobDependsOnList"]) == ["sizes-big", "sizes-small"]


NOTIFY = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  flows:
  - name: train
    patch: {jobSpec: {tasks: [{name: main, template: {metadata: {annotations: {kwok.jobflow.dev/fail: "SHOULD_FAIL"}}}}]}}
  - name: notify
    finally: true
    when: jobflow.outcome == "Failed"
    patch:
      jobSpec:
        tasks:
        - name: main
          template:
            spec:
              containers:
              - name: main
                env:
                - {name: FAILED_FLOWS, value: "{{jobflow.failedFlows}}"}
                - {name: FIRST_ERROR, value: "{{jobflow.firstError}}"}
"""


def test_a_finally_flow_patched_with_the_failed_flows_name_runs_on_failure_only(
        cluster: LocalCluster, namespace: str, engine) -> None:
    train = template("train", fail=True).replace("kwok.jobflow.dev/fail: 'true'", "kwok.jobflow.dev/fail: 'false'")
    apply(cluster, namespace, train + "---\n" + template("notify"))
    apply(cluster, namespace, NOTIFY.replace("NAME", "bad").replace("SHOULD_FAIL", "true"))
    apply(cluster, namespace, NOTIFY.replace("NAME", "good").replace("SHOULD_FAIL", "false"))

    wait_for_phase(cluster, namespace, "bad", "Failed", timeout=90)
    cluster.wait_until("bad-notify to complete", lambda: cluster.vcjob_phase(namespace, "bad-notify") == "Completed",
                       timeout=60)
    good = wait_for_phase(cluster, namespace, "good", "Succeed", timeout=90)
    jobs = vcjobs(cluster, namespace)
    env = {e["name"]: e["value"] for e in main_container(jobs["bad-notify"])["env"]}
    assert env["FAILED_FLOWS"] == "train"
    assert env["FIRST_ERROR"].startswith("vcjob bad-train ended Terminated"), env
    assert "good-notify" not in jobs
    assert [(s["name"], s["reason"]) for s in good["status"]["skippedFlows"]] == [("notify", "ConditionFalse")]
