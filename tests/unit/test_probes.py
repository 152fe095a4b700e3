"""``dependsOn.probe``: a flow starts when its probes pass against every target, Completed or not."""

import yaml

from jobflow_core import CheckKind, CheckResult, NetworkCheck, observe, plan
from jobflow_core.models import JobTemplate, VcJob, VcJobPhase
from scenario import T0, jobflow, template, templates_for, vcjob

P = VcJobPhase

TF_SPEC = """
minAvailable: 3
queue: default
tasks:
- {name: ps, replicas: 1, template: {spec: {containers: [{name: ps, image: tf}]}}}
- {name: worker, replicas: 2, template: {spec: {containers: [{name: worker, image: tf}]}}}
"""

BOCLOUD = jobflow("""
spec:
  flows:
  - name: tf
  - name: next
    dependsOn:
      targets: [tf]
      probe:
        taskStatusList: [{taskName: worker, phase: Succeeded}]
""")

SERVING = jobflow("""
spec:
  flows:
  - name: tf
  - name: client
    dependsOn:
      targets: [tf]
      probe:
        httpGetList: [{taskName: ps, path: /ready, port: 8080, httpHeader: {name: X-Probe, value: "1"}}]
        tcpSocketList: [{taskName: worker, port: 2222}]
""")


def tf_job(flow, phase, counts=None) -> VcJob:
    wire = vcjob(flow, "tf", phase).to_wire()
    wire["spec"] = yaml.safe_load(TF_SPEC)
    if counts is not None:
        wire["status"]["taskStatusCount"] = counts
    return VcJob.model_validate(wire)


def templates(flow) -> dict[str, JobTemplate]:
    return templates_for(flow) | {"tf": template("tf", spec=TF_SPEC)}


def planned(flow, *jobs, results=None):
    return plan(flow, templates=templates(flow), jobs=list(jobs), now=T0, probe_results=results)


def waiting(result, name):
    return next(w for w in result.status.waiting_flows or () if w.name == name)


def test_a_task_status_probe_starts_the_flow_once_enough_pods_are_in_the_phase_while_the_target_runs():
    two_succeeded = {"ps": {"phase": {"Running": 1}}, "worker": {"phase": {"Succeeded": 2}}}
    result = planned(BOCLOUD, tf_job(BOCLOUD, P.RUNNING, two_succeeded))
    assert [c.job_name for c in result.creates] == ["test-next"]


def test_a_task_status_probe_waits_and_says_how_many_pods_it_has():
    one = {"worker": {"phase": {"Succeeded": 1, "Running": 1}}}
    result = planned(BOCLOUD, tf_job(BOCLOUD, P.RUNNING, one))
    assert result.creates == []
    wait = waiting(result, "next")
    assert wait.waiting_for == ["tf"]
    assert "task 'worker' of vcjob 'test-tf': 1/2 pods Succeeded" in wait.message
    assert wait.recheck_seconds == 10


def test_a_completed_target_passes_a_succeeded_probe_although_volcano_dropped_its_counts():
    assert [c.job_name for c in planned(BOCLOUD, tf_job(BOCLOUD, P.COMPLETED)).creates] == ["test-next"]


def test_an_unknown_task_name_blocks_the_flow_with_a_clear_message_and_one_warning():
    flow = jobflow("""
    spec:
      flows:
      - name: tf
      - name: next
        dependsOn: {targets: [tf], probe: {taskStatusList: [{taskName: wrker, phase: Succeeded}]}}
    """)
    result = planned(flow, tf_job(flow, P.RUNNING, {"worker": {"phase": {"Succeeded": 2}}}))
    assert result.creates == []
    assert result.status.state.reason == "ProbeTaskNotFound"
    assert "names task 'wrker', but vcjob 'test-tf' has tasks 'ps', 'worker'" in result.status.state.message
    assert [(e.type, e.reason) for e in result.events if e.reason == "ProbeTaskNotFound"] == [
        ("Warning", "ProbeTaskNotFound")]
    again = plan(flow.model_copy(update={"status": result.status}), templates=templates(flow),
                 jobs=[tf_job(flow, P.RUNNING, {"worker": {"phase": {"Succeeded": 2}}})], now=T0)
    assert [e.reason for e in again.events] == []
    assert waiting(result, "next").recheck_seconds is None


def test_network_checks_are_asked_for_only_once_the_target_has_a_live_vcjob():
    assert observe(SERVING, jobs=[]).network_checks() == []
    checks = observe(SERVING, jobs=[tf_job(SERVING, P.RUNNING)]).network_checks()
    assert checks == [
        NetworkCheck(CheckKind.HTTP_GET, "test-tf", "default", "ps", 8080, "/ready", ("X-Probe", "1")),
        NetworkCheck(CheckKind.TCP_SOCKET, "test-tf", "default", "worker", 2222),
    ]


def test_network_probes_start_the_flow_only_when_every_check_passed():
    job = tf_job(SERVING, P.RUNNING)
    http, tcp = observe(SERVING, jobs=[job]).network_checks()
    unanswered = planned(SERVING, job)
    assert unanswered.creates == [] and "not checked yet" in waiting(unanswered, "client").message
    half = planned(SERVING, job, results={http: CheckResult(True, "HTTP 200"),
                                          tcp: CheckResult(False, "connection refused")})
    assert half.creates == []
    assert "TCP :2222 on task 'worker' of vcjob 'test-tf': connection refused" in waiting(half, "client").message
    both = planned(SERVING, job, results={http: CheckResult(True, "HTTP 200"), tcp: CheckResult(True, "open")})
    assert [c.job_name for c in both.creates] == ["test-client"]


def test_a_probe_target_without_a_vcjob_yet_is_waited_for():
    result = planned(SERVING)
    assert "flow 'tf' has no running vcjob yet" in waiting(result, "client").message


def test_a_network_probe_whose_target_completed_before_it_passed_is_skipped_not_waited_for_forever():
    result = planned(SERVING, tf_job(SERVING, P.COMPLETED))
    assert result.creates == [] and result.status.waiting_flows is None
    [skipped] = result.status.skipped_flows
    assert (skipped.name, skipped.reason) == ("client", "DependencyNotMet")
    assert skipped.message.startswith('"tf" Succeeded before its probe passed, so the probe never will')
    assert result.status.state.phase == "Succeed"
