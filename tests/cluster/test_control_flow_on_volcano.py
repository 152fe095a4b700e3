"""Control flow on the real control plane: error handlers, Skipped flows, failure policy and finally flows.

Failures are real: the JobTemplate's pod ends Failed on its kwok node (``kwok.jobflow.dev/fail``) and Volcano's
job controller terminates the vcjob (policy ``PodFailed -> TerminateJob``).
"""

from __future__ import annotations

import io
import time
import xml.etree.ElementTree as ET
from datetime import datetime

import pytest

from devcluster.testing import LocalCluster
from kubectl_jobflow.cli import run
from objects import apply, events_of, jobflow, template, vcjobs, wait_for_phase
from seeds import diamond_flows, diamond_yaml

pytestmark = pytest.mark.cluster


def stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))

HANDLED = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: handled}
spec:
  flows:
  - name: train
  - name: alert
    dependsOn: {targets: [train], outcome: Failed}
  - name: report
    dependsOn: {targets: [train]}
  - name: notify
    finally: true
"""


def templates(**failing: bool) -> str:
    return "---\n".join(template(name, fail=failing.get(name, False)) for name in ("train", "alert", "report",
                                                                                   "notify"))


def test_a_failure_with_a_handler_runs_the_handler_skips_the_rest_and_the_jobflow_succeeds(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, templates(train=True))
    apply(cluster, namespace, HANDLED)

    flow = wait_for_phase(cluster, namespace, "handled", "Succeed", timeout=90)

    status = flow["status"]
    assert status["terminatedJobs"] == ["handled-train"]  # the pod failed, Volcano terminated the vcjob
    assert sorted(status["completedJobs"]) == ["handled-alert", "handled-notify"]
    assert [(s["name"], s["reason"]) for s in status["skippedFlows"]] == [("report", "DependencyNotMet")]
    assert status["progress"] == "4/4" and "reason" not in status["state"]
    assert sorted(vcjobs(cluster, namespace)) == ["handled-alert", "handled-notify", "handled-train"]
    notify, train = (vcjobs(cluster, namespace)[f"handled-{name}"] for name in ("notify", "train"))
    assert notify["metadata"]["creationTimestamp"] >= train["status"]["state"]["lastTransitionTime"]
    skipped = [m for t, r, m in events_of(cluster, namespace, "handled") if (t, r) == ("Normal", "DependencyNotMet")]
    assert skipped == ['flow "report" skipped: "train" Failed, and this flow runs only if its targets succeed']


def test_the_same_failure_without_a_handler_fails_the_jobflow_and_still_runs_its_finally_flow(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, templates(train=True))
    apply(cluster, namespace, HANDLED.replace("name: handled", "name: unhandled")
          .replace("  - name: alert\n    dependsOn: {targets: [train], outcome: Failed}\n", ""))

    flow = wait_for_phase(cluster, namespace, "unhandled", "Failed", timeout=90)
    assert flow["status"]["state"]["reason"] == "JobFailed"

    def notified() -> bool:
        job = vcjobs(cluster, namespace).get("unhandled-notify") or {}
        return ((job.get("status") or {}).get("state") or {}).get("phase") == "Completed"

    cluster.wait_until("the finally flow to run after the failure", notified, timeout=60)
    assert "unhandled-report" not in vcjobs(cluster, namespace)


def jobflow_cli(cluster: LocalCluster, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run([*argv, "--kubeconfig", str(cluster.state.kubeconfig)], out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def test_suspend_holds_the_next_flow_past_a_vcjobs_run_time_and_resume_finishes_it(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("a", run_for="2s") + "---\n" + template("b"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: held}\n"
                              "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
    cluster.wait_until("vcjob held-a", lambda: "held-a" in vcjobs(cluster, namespace), timeout=30)

    assert jobflow_cli(cluster, "suspend", "held", "-n", namespace) == (0, f"Suspended JobFlow: {namespace}/held\n")
    wait_for_phase(cluster, namespace, "held", "Suspended", timeout=30)
    cluster.wait_until("held-a to complete", lambda: cluster.vcjob_phase(namespace, "held-a") == "Completed",
                       timeout=30)
    time.sleep(3)  # longer than b's vcjob would take to be created after a completed (~0.1 s)
    assert "held-b" not in vcjobs(cluster, namespace)
    assert jobflow_cli(cluster, "suspend", "held", "-n", namespace)[1].endswith("is already suspended\n")

    assert jobflow_cli(cluster, "resume", "held", "-n", namespace)[0] == 0
    flow = wait_for_phase(cluster, namespace, "held", "Succeed", timeout=60)
    assert flow["status"]["completedJobs"] == ["held-a", "held-b"]


def test_a_flow_failing_twice_is_retried_after_growing_backoffs_and_its_dependent_starts_once_after_it_succeeds(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("train", fail_attempts=2) + "---\n" + template("report"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: flaky}
spec:
  flows:
  - name: train
    retry: {limit: 3, backoff: {delaySeconds: 2, factor: 2}}
  - name: report
    dependsOn: {targets: [train]}
""")

    flow = wait_for_phase(cluster, namespace, "flaky", "Succeed", timeout=120)

    records = {r["name"]: r for r in flow["status"]["jobStatusList"]}
    attempts = [records[name] for name in ("flaky-train", "flaky-train-r1", "flaky-train-r2")]
    assert [(r["attempt"], r["state"]) for r in attempts] == [(1, "Terminated"), (2, "Terminated"), (3, "Completed")]
    for before, after, backoff in ((attempts[0], attempts[1], 2), (attempts[1], attempts[2], 4)):
        gap = stamp(after["startTimestamp"]) - stamp(before["endTimestamp"])
        assert gap.total_seconds() >= backoff, (before["name"], after["name"], gap)
    report = records["flaky-report"]
    assert stamp(report["startTimestamp"]) >= stamp(attempts[2]["endTimestamp"])
    created = sorted(m for _, reason, m in events_of(cluster, namespace, "flaky") if reason == "Created")
    assert created == ["create a job named flaky-report!", "create a job named flaky-train!",
                       "create a job named flaky-train-r1!", "create a job named flaky-train-r2!"]
    assert flow["status"]["terminatedJobs"] == ["flaky-train", "flaky-train-r1"]


def test_a_deadline_shorter_than_the_flow_aborts_what_runs_through_volcano_and_fails_the_jobflow(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("slow", run_for="60s") + "---\n" + template("after"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: late}\n"
                              "spec: {activeDeadlineSeconds: 4, flows: [{name: slow}, "
                              "{name: after, dependsOn: {targets: [slow]}}]}")

    flow = wait_for_phase(cluster, namespace, "late", "Failed", timeout=60)
    assert flow["status"]["state"]["reason"] == "DeadlineExceeded", flow["status"]
    cluster.wait_until("Volcano to abort late-slow", lambda: cluster.vcjob_phase(namespace, "late-slow") == "Aborted",
                       timeout=30)
    assert "late-after" not in vcjobs(cluster, namespace)
    aborted = [m for t, r, m in events_of(cluster, namespace, "late") if (t, r) == ("Warning", "DeadlineExceeded")]
    assert any(m.startswith('aborting vcjob "late-slow"') for m in aborted)


def test_a_probe_that_does_not_pass_within_its_timeout_skips_its_flow_instead_of_waiting_forever(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("server", keep_running=True) + "---\n" + template("client"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: silent}
spec:
  flows:
  - name: server
  - name: client
    dependsOn:
      targets: [server]
      probe: {timeoutSeconds: 4, tcpSocketList: [{taskName: main, port: 1}]}
""")

    def skipped() -> list:
        status = (jobflow(cluster, namespace, "silent") or {}).get("status") or {}
        return status.get("skippedFlows") or []

    [entry] = cluster.wait_until("the client to be skipped", skipped, timeout=60)
    assert entry["name"] == "client" and entry["message"].startswith("its probe did not pass within 4s")
    assert "silent-client" not in vcjobs(cluster, namespace)


def test_kubectl_jobflow_retry_reruns_the_failed_c_and_its_dependent_e_but_not_a_b_d(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join(template(name, fail_attempts=1 if name == "c" else 0) for name in "abcde"))
    apply(cluster, namespace, diamond_yaml("diamond"))
    wait_for_phase(cluster, namespace, "diamond", "Failed", timeout=90)
    cluster.wait_until("d to complete", lambda: cluster.vcjob_phase(namespace, "diamond-d") == "Completed",
                       timeout=30)
    before = {name: job["metadata"]["uid"] for name, job in vcjobs(cluster, namespace).items()}
    assert sorted(before) == ["diamond-a", "diamond-b", "diamond-c", "diamond-d"]

    code, said = jobflow_cli(cluster, "retry", "diamond", "-n", namespace)
    assert code == 0 and said.startswith(f"Retrying JobFlow: {namespace}/diamond: its failed flows"), said

    flow = wait_for_phase(cluster, namespace, "diamond", "Succeed", timeout=90)
    after = {name: job["metadata"]["uid"] for name, job in vcjobs(cluster, namespace).items()}
    assert sorted(after) == ["diamond-a", "diamond-b", "diamond-c", "diamond-c-r1", "diamond-d", "diamond-e"]
    assert all(after[name] == before[name] for name in before)  # a, b, d (and the failed c) were not run again
    assert flow["status"]["rerun"]["fromAttempt"] == {"c": 2}
    assert jobflow_cli(cluster, "retry", "diamond", "-n", namespace)[0] == 1  # only a Failed JobFlow


def test_a_switch_on_the_termination_message_of_train_runs_deploy_and_skips_retrain_and_what_follows_it(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("train", message="accuracy=0.93"), template("deploy"),
                                            template("retrain"), template("evaluate")]))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: switch}
spec:
  flows:
  - name: train
  - name: deploy
    dependsOn: {targets: [train]}
    when: targets.train.result.accuracy >= 0.9
  - name: retrain
    dependsOn: {targets: [train]}
    when: "!(targets.train.result.accuracy >= 0.9)"
  - name: evaluate
    dependsOn: {targets: [retrain]}
""")

    flow = wait_for_phase(cluster, namespace, "switch", "Succeed", timeout=90)

    status = flow["status"]
    assert sorted(status["completedJobs"]) == ["switch-deploy", "switch-train"]
    assert {s["name"]: s["reason"] for s in status["skippedFlows"]} == {"retrain": "ConditionFalse",
                                                                         "evaluate": "DependencyNotMet"}
    [train] = [r for r in status["jobStatusList"] if r["name"] == "switch-train"]
    assert train["result"] == "accuracy=0.93"  # kept in the status: the pods may go
    assert sorted(vcjobs(cluster, namespace)) == ["switch-deploy", "switch-train"]


BRANCHES = {  # flow: (its when, whether it holds for train's result and the parameters)
    "strings": ('params.model.lowerAscii().split("-")[0] == "resnet" && params.model.substring(0, 3).upperAscii() '
                '== "RES"', True),
    "lists": ("targets.train.result.losses.sum() < 1.0 && targets.train.result.losses.max() == 0.5 && "
              "!targets.train.result.losses.isSorted()", True),
    "regex": ('targets.train.result.files.exists(f, f.find("[.]csv$") != "") && '
              'params.model.findAll("[0-9]+") == ["50"]', True),
    "quantity": ('quantity(targets.train.result.memory).isGreaterThan(quantity("1Gi")) && '
                 'quantity(targets.train.result.memory).asInteger() == 2147483648', True),
    "false-branch": ('params.model.lowerAscii().indexOf("vgg") >= 0', False),
}
EXPENSIVE = "[" + ",".join(["1"] * 400) + "].map(x, [" + ",".join(["1"] * 400) + "].map(y, x * y)).size() > 0"


def test_conditions_with_kubernetes_cel_functions_take_the_right_branch_and_an_expensive_one_is_stopped(
        cluster: LocalCluster, namespace: str, engine) -> None:
    result = '{"losses": [0.5, 0.2, 0.1], "files": ["a.csv"], "memory": "2Gi"}'
    apply(cluster, namespace, "---\n".join([template("train", message=result),
                                            *(template(name) for name in [*BRANCHES, "costly"])]))
    flows = "".join(f"  - name: {name}\n    dependsOn: {{targets: [train]}}\n    when: '{when}'\n"
                    for name, (when, _) in BRANCHES.items())
    apply(cluster, namespace, f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: cel}}
spec:
  parameters: [{{name: model, value: ResNet-50}}]
  flows:
  - name: train
{flows}  - name: costly
    dependsOn: {{targets: [train]}}
    when: '{EXPENSIVE}'
""")

    def settled() -> dict | None:
        status = (jobflow(cluster, namespace, "cel") or {}).get("status") or {}
        done = set(status.get("completedJobs") or ())
        ended = len(done) == 1 + sum(holds for _, holds in BRANCHES.values())
        return status if ended and (status.get("state") or {}).get("reason") == "ConditionError" else None

    status = cluster.wait_until("the branches settled and the costly condition stopped", settled, timeout=120)
    assert sorted(status["completedJobs"]) == sorted(
        ["cel-train", *(f"cel-{name}" for name, (_, holds) in BRANCHES.items() if holds)])
    assert {s["name"]: s["reason"] for s in status.get("skippedFlows") or ()} == {"false-branch": "ConditionFalse"}
    assert "it was stopped: it takes more than 100,000 evaluation steps, the limit of one expression; simplify " \
           "it" in status["state"]["message"]
    assert "activation" not in status["state"]["message"]


FAIL_C = {"jobSpec": {"tasks": [{
    "name": "main", "template": {"metadata": {"annotations": {"kwok.jobflow.dev/fail": "true"}}},
    "policies": [{"event": "PodFailed", "action": "TerminateJob"}]}]}}
"""A patch that makes flow ``c``'s pod fail, and Volcano its vcjob with it."""


def diamond_run(name: str, *, fail_c: bool = False) -> str:
    """The seed diamond named ``name``; with ``fail_c``, flow ``c`` fails."""
    flows = diamond_flows()
    if fail_c:
        flows[2]["patch"] = FAIL_C  # flow c
    return diamond_yaml(name, flows=flows)


def test_job_templates_count_runs_failures_and_durations_across_jobflows_and_replayed_events_change_nothing(
        cluster: LocalCluster, namespace: str, engine) -> None:
    from engine import send
    from jobflow_core.vocabulary.api import JOBFLOW, VCJOB
    from objects import jobflow as read_jobflow

    apply(cluster, namespace, "---\n".join(template(name) for name in "abcde"))
    for number in range(1, 4):
        apply(cluster, namespace, diamond_run(f"run{number}"))
        wait_for_phase(cluster, namespace, f"run{number}", "Succeed", timeout=90)
    apply(cluster, namespace, diamond_run("broken", fail_c=True))
    wait_for_phase(cluster, namespace, "broken", "Failed", timeout=90)

    def stats(name: str) -> dict:
        found = cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace,
                                                           "jobtemplates", name)["status"]
        return {key: value for key, value in found.items() if key != "jobDependsOnList"}

    cluster.wait_until("c's failed run to be counted", lambda: stats("c").get("runs") == 4, timeout=30)
    a, c = stats("a"), stats("c")
    assert (a["runs"], a["succeeded"], a["failed"], a["failureRate"]) == (4, 4, 0, 0.0)
    assert (c["runs"], c["succeeded"], c["failed"], c["failureRate"]) == (4, 3, 1, 0.25)
    assert c["lastFailure"]["job"] == "broken-c" and 0 < a["durationP50Seconds"] <= a["durationP90Seconds"] < 30
    assert stats("e").get("runs") == 3  # e never ran in the broken flow
    # c failed, of a, b, c and d (d still ends after the failure: FailFast starts nothing new, stops nothing)
    cluster.wait_until("the JobFlow's failure rate", lambda: read_jobflow(cluster, namespace, "broken")["status"]
                       .get("failureRate") == 0.25, timeout=30)

    before = {name: stats(name) for name in "abcde"}
    for _ in range(2):  # every event of every run, delivered again, twice
        for name in vcjobs(cluster, namespace):
            assert send(engine.handler.url, VCJOB, namespace, name)[0] < 300
        for name in ("run1", "run2", "run3", "broken"):
            assert send(engine.handler.url, JOBFLOW, namespace, name)[0] < 300
    assert {name: stats(name) for name in "abcde"} == before


def test_on_the_third_run_of_a_diamond_the_forecast_is_within_30_percent_of_what_happens(
        cluster: LocalCluster, namespace: str, engine) -> None:
    from objects import jobflow as read_jobflow

    # Runs of about 6 s: the API server keeps whole seconds, so shorter runs would measure mostly rounding.
    apply(cluster, namespace, "---\n".join(template(name, run_for="5s") for name in "abcde"))
    for number in (1, 2):
        apply(cluster, namespace, diamond_run(f"warm{number}"))
        wait_for_phase(cluster, namespace, f"warm{number}", "Succeed", timeout=180)
    [created] = apply(cluster, namespace, diamond_run("third"))
    forecast = cluster.wait_until("the third run's forecast", lambda: (read_jobflow(
        cluster, namespace, "third").get("status") or {}).get("expectedCompletion") and read_jobflow(
        cluster, namespace, "third")["status"], timeout=30)
    flow = wait_for_phase(cluster, namespace, "third", "Succeed", timeout=120)

    t0 = stamp(created["metadata"]["creationTimestamp"])
    jobs = vcjobs(cluster, namespace)
    actual_end = max(stamp(jobs[f"third-{n}"]["status"]["state"]["lastTransitionTime"]) for n in "abcde")
    expected_end = stamp(forecast["expectedCompletion"])
    assert abs((expected_end - t0) / (actual_end - t0) - 1) <= 0.3, (expected_end, actual_end)
    assert forecast["criticalPath"][:2] == ["a", "b"] and forecast["criticalPath"][-1] == "e"
    starts = {w["name"]: w["expectedStart"] for w in forecast["waitingFlows"] if "expectedStart" in w}
    assert set(starts) >= {"c", "d", "e"}
    for name, when in starts.items():
        actual = stamp(jobs[f"third-{name}"]["metadata"]["creationTimestamp"]) - t0
        assert abs((stamp(when) - t0) / actual - 1) <= 0.3, (name, when, actual)
    assert "expectedCompletion" not in flow["status"]  # over: no forecast left
    # Where the time went, as kubectl jobflow timeline draws it, in text and SVG.
    code, output = jobflow_cli(cluster, "timeline", "third", "-n", namespace)
    assert code == 0, output
    rows = output.splitlines()[1:-1]
    assert sorted(row.split("|")[0].strip(" *") for row in rows) == [f"third-{n}" for n in "abcde"]
    assert all("#" in row.split("|")[1] and "Completed" in row.split("|")[2] for row in rows)  # each ran
    path = output.splitlines()[-1]
    assert path.startswith("critical path: a -> b -> ") and path.endswith(" -> e")
    code, drawing = jobflow_cli(cluster, "timeline", "third", "-n", namespace, "--format", "svg")
    bars = ET.fromstring(drawing).findall("{http://www.w3.org/2000/svg}g")
    assert code == 0 and sorted(bar.get("data-job") for bar in bars) == [f"third-{n}" for n in "abcde"]
