"""What was proved only in unit tests, on the real control plane: ``failurePolicy: KeepGoing``, a flow's
``timeoutSeconds``, ``kubectl jobflow retry --flow``, and the RUNS and FAILURE-RATE columns of ``kubectl get jt``.

Failures are real: the pod ends Failed on its kwok node and Volcano's job controller terminates the vcjob; a
timeout is a real ``AbortJob`` Command that Volcano carries out.
"""

from __future__ import annotations

import io
from datetime import datetime

import pytest

from devcluster.testing import LocalCluster
from kubectl_jobflow.cli import run
from objects import apply, events_of, template, vcjobs, wait_for_phase
from test_manifests import kubectl

pytestmark = pytest.mark.cluster

BRANCHES = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  failurePolicy: POLICY
  flows:
  - name: bad
  - name: needs-bad
    dependsOn: {targets: [bad]}
  - name: slow
  - name: after-slow
    dependsOn: {targets: [slow]}
"""


def stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def jobflow_cli(cluster: LocalCluster, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run([*argv, "--kubeconfig", str(cluster.state.kubeconfig)], out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def test_keep_going_runs_the_branch_that_does_not_need_the_failure_where_fail_fast_stops_it(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("bad", fail=True), template("needs-bad"),
                                            template("slow", run_for="3s"), template("after-slow")]))
    apply(cluster, namespace, BRANCHES.replace("NAME", "going").replace("POLICY", "KeepGoing"))
    apply(cluster, namespace, BRANCHES.replace("NAME", "fast").replace("POLICY", "FailFast"))

    going = wait_for_phase(cluster, namespace, "going", "Failed", timeout=90)
    jobs = vcjobs(cluster, namespace)
    # Failed only once everything ended: after-slow started after slow (3 s), long after bad failed.
    assert sorted(going["status"]["completedJobs"]) == ["going-after-slow", "going-slow"]
    assert going["status"]["terminatedJobs"] == ["going-bad"]
    assert [(s["name"], s["reason"]) for s in going["status"]["skippedFlows"]] == [("needs-bad", "DependencyNotMet")]
    assert going["status"]["state"]["reason"] == "JobFailed"
    assert jobs["going-after-slow"]["metadata"]["creationTimestamp"] >= \
        jobs["going-bad"]["status"]["state"]["lastTransitionTime"]

    fast = wait_for_phase(cluster, namespace, "fast", "Failed", timeout=90)
    cluster.wait_until("fast-slow to complete", lambda: cluster.vcjob_phase(namespace, "fast-slow") == "Completed",
                       timeout=30)
    assert "fast-after-slow" not in vcjobs(cluster, namespace)  # FailFast started nothing after the failure
    assert fast["status"]["state"]["reason"] == "JobFailed"

    # Both runs counted (needs-bad never ran: its columns are empty) in the JobTemplates' statistics, as `kubectl get
    # jt` shows them.
    def columns() -> dict[str, list[str]]:
        shown = kubectl(cluster, "get", "jt", "-n", namespace)
        assert shown.returncode == 0, shown.stderr
        header, *rows = [line.split() for line in shown.stdout.splitlines()]
        assert header[:3] == ["NAME", "RUNS", "FAILURE-RATE"], header
        return {row[0]: row[1:-1] for row in rows}  # the last column is AGE

    cluster.wait_until("the runs to be counted", lambda: columns()["slow"] == ["2", "0"], timeout=30)
    assert columns() == {"bad": ["2", "1"], "needs-bad": [], "slow": ["2", "0"],
                         "after-slow": ["1", "0"]}


def test_an_attempt_past_its_timeout_is_aborted_through_volcano_and_retried_then_the_jobflow_fails(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("slow", run_for="60s") + "---\n" + template("next"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: timed}
spec:
  flows:
  - name: slow
    timeoutSeconds: 3
    retry: {limit: 1, backoff: {delaySeconds: 1}}
  - name: next
    dependsOn: {targets: [slow]}
""")

    flow = wait_for_phase(cluster, namespace, "timed", "Failed", timeout=90)
    records = {r["name"]: r for r in flow["status"]["jobStatusList"]}
    assert [(records[n]["attempt"], records[n]["state"]) for n in ("timed-slow", "timed-slow-r1")] == \
        [(1, "Aborted"), (2, "Aborted")]
    jobs = vcjobs(cluster, namespace)
    assert sorted(jobs) == ["timed-slow", "timed-slow-r1"]  # next never started
    assert all(jobs[n]["status"]["state"]["phase"] == "Aborted" for n in jobs)
    for name in jobs:  # each attempt ran its timeout, and far less than its 60 s
        ran = stamp(records[name]["endTimestamp"]) - stamp(records[name]["startTimestamp"])
        assert 3 <= ran.total_seconds() < 30, (name, ran)
    timeouts = [m for t, r, m in events_of(cluster, namespace, "timed") if (t, r) == ("Warning", "Timeout")]
    assert len(timeouts) == 2 and all("timed-slow" in m for m in timeouts), timeouts


def test_retry_with_flow_reruns_the_named_flow_and_what_follows_it_but_not_what_precedes_it(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("a"), template("b"), template("c", fail_attempts=1)]))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: chain}\n"
                              "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}, "
                              "{name: c, dependsOn: {targets: [b]}}]}")
    wait_for_phase(cluster, namespace, "chain", "Failed", timeout=90)
    before = {name: job["metadata"]["uid"] for name, job in vcjobs(cluster, namespace).items()}
    assert sorted(before) == ["chain-a", "chain-b", "chain-c"]

    code, said = jobflow_cli(cluster, "retry", "chain", "-n", namespace, "--flow", "b")
    assert code == 0, said

    flow = wait_for_phase(cluster, namespace, "chain", "Succeed", timeout=90)
    after = {name: job["metadata"]["uid"] for name, job in vcjobs(cluster, namespace).items()}
    assert sorted(after) == ["chain-a", "chain-b", "chain-b-r1", "chain-c", "chain-c-r1"]
    assert all(after[name] == before[name] for name in before)  # a (and the first b, c) untouched
    assert flow["status"]["rerun"]["fromAttempt"] == {"b": 2, "c": 2}
    jobs = vcjobs(cluster, namespace)
    assert jobs["chain-c-r1"]["metadata"]["creationTimestamp"] >= \
        jobs["chain-b-r1"]["status"]["state"]["lastTransitionTime"]
    reruns = [m for t, r, m in events_of(cluster, namespace, "chain") if r == "Rerun"]
    assert len(reruns) == 1, reruns


def test_a_jobflow_written_with_upstreams_proposed_retry_policy_retries_after_its_constant_backoff(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("train", fail_attempts=2) + "---\n" + template("report"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: proposal}
spec:
  retryPolicy:
    maxRetries: 2
    policy: OnFailure
    backoff: {type: Constant, baseDelay: 2s, maxDelay: 1m}
  flows:
  - name: train
  - name: report
    dependsOn: {targets: [train]}
""")
    stored = cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                                         "proposal")
    assert stored["spec"]["retryPolicy"]["backoff"]["type"] == "Constant"  # kept by the CRD, not pruned

    flow = wait_for_phase(cluster, namespace, "proposal", "Succeed", timeout=120)
    records = {r["name"]: r for r in flow["status"]["jobStatusList"]}
    attempts = [records[name] for name in ("proposal-train", "proposal-train-r1", "proposal-train-r2")]
    assert [(r["attempt"], r["state"]) for r in attempts] == [(1, "Terminated"), (2, "Terminated"), (3, "Completed")]
    for before, after in zip(attempts, attempts[1:]):
        gap = (stamp(after["startTimestamp"]) - stamp(before["endTimestamp"])).total_seconds()
        assert 2 <= gap < 4 + 2, (before["name"], after["name"], gap)  # constant: 2 s each time, not 2 then 4
    assert stamp(records["proposal-report"]["startTimestamp"]) >= stamp(attempts[2]["endTimestamp"])
