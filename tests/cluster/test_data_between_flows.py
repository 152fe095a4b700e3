"""Data between flows on the real control plane: a target's result (its pods' termination message, written by
kwok's pod as ``kwok.jobflow.dev/message`` says) put into the next flow's vcjob, and a fan-out over a list; one
JobTemplate under several flow names; a finally flow that reads the JobFlow's outcome; a memoized step."""

from __future__ import annotations

import json

import pytest

from devcluster.testing import LocalCluster
from objects import apply, events_of, template, vcjobs, wait_for_phase
from test_control_flow_on_volcano import jobflow_cli
from test_manifests import kubectl

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
    patch: {jobSpec: {tasks: [{name: main, template: {metadata: {annotations: {kwok.jobflow.dev/fail:
    "SHOULD_FAIL"}}}}]}}
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


MEMOIZED = PIPELINE.replace("""spec:
  flows:
  - name: prepare
""", """spec:
  parameters: [{name: day, value: "DAY"}]
  flows:
  - name: prepare
    memoize: {maxAge: 1h}
    patch: {jobSpec: {tasks: [{name: main, template: {spec: {containers: [{name: main, args: ["--day={{params.day}}"]}]}}}]}}
""")
"""The three-step pipeline above, its first step memoized and reading a parameter."""


def cached_in_cli(cluster: LocalCluster, namespace: str, name: str) -> dict[str, str]:
    """What ``kubectl jobflow status``, ``graph`` and ``timeline`` print for the flow ``prepare`` of ``name``."""
    shown = {}
    for command, row in (("status", "prepare"), ("graph", "prepare"), ("timeline", f"{name}-prepare")):
        code, output = jobflow_cli(cluster, command, name, "-n", namespace)
        assert code == 0, output
        [shown[command]] = [line for line in output.splitlines() if line.strip(" *").startswith(row + " ")]
    return shown


def test_a_memoized_first_step_runs_once_for_the_same_inputs_again_for_another_parameter_or_a_cleared_cache(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, pipeline_templates())
    apply(cluster, namespace, MEMOIZED.replace("NAME", "first").replace("DAY", "2026-11-25"))
    wait_for_phase(cluster, namespace, "first", "Succeed", timeout=120)
    cache = cluster.core.read_namespaced_config_map("jobflow-memo", namespace).data
    [(key, entry)] = cache.items()
    assert json.loads(entry)["job"] == f"{namespace}/first-prepare" and \
        json.loads(entry)["result"] == "path=/data/2026-11-25 rows=1200"
    assert vcjobs(cluster, namespace)["first-prepare"]["metadata"]["annotations"]["flow.volcano.sh/memo-key"] == key

    apply(cluster, namespace, MEMOIZED.replace("NAME", "second").replace("DAY", "2026-11-25"))
    second = wait_for_phase(cluster, namespace, "second", "Succeed", timeout=120)
    jobs = vcjobs(cluster, namespace)
    assert sorted(name for name in jobs if name.startswith("second-")) == \
        ["second-process-0", "second-process-1", "second-process-2", "second-split"]  # prepare not run: reused
    assert main_container(jobs["second-split"])["env"] == main_container(jobs["first-split"])["env"] == \
        [{"name": "DATA_PATH", "value": "/data/2026-11-25"}]
    assert [main_container(jobs[f"second-process-{i}"])["args"] for i in range(3)] == \
        [main_container(jobs[f"first-process-{i}"])["args"] for i in range(3)] == \
        [[f"--shard=s{i}", "--from=/data/2026-11-25"] for i in range(3)]
    [record] = [r for r in second["status"]["jobStatusList"] if r["name"] == "second-prepare"]
    assert (record["state"], record["reason"], record["cachedFrom"]) == \
        ("Completed", "Cached", f"{namespace}/first-prepare")
    assert any(r == "Cached" for _, r, _ in events_of(cluster, namespace, "second"))
    shown = cached_in_cli(cluster, namespace, "second")
    assert all("Cached" in line for line in shown.values()), shown
    assert "Cached" not in "".join(cached_in_cli(cluster, namespace, "first").values())  # it ran

    apply(cluster, namespace, MEMOIZED.replace("NAME", "third").replace("DAY", "2026-11-26"))
    wait_for_phase(cluster, namespace, "third", "Succeed", timeout=120)
    assert "third-prepare" in vcjobs(cluster, namespace)  # another day: another key, run again
    assert len(cluster.core.read_namespaced_config_map("jobflow-memo", namespace).data) == 2

    deleted = kubectl(cluster, "delete", "configmap", "jobflow-memo", "-n", namespace)
    assert deleted.returncode == 0, deleted.stderr
    apply(cluster, namespace, MEMOIZED.replace("NAME", "fourth").replace("DAY", "2026-11-25"))
    wait_for_phase(cluster, namespace, "fourth", "Succeed", timeout=120)
    assert "fourth-prepare" in vcjobs(cluster, namespace)  # the first day's run is forgotten: run again
    [(again, entry)] = cluster.core.read_namespaced_config_map("jobflow-memo", namespace).data.items()
    assert (again, json.loads(entry)["job"]) == (key, f"{namespace}/fourth-prepare")
