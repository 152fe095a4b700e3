"""What the JobFlow webhook checks beyond the DAG (test_validation.py): probes, and updates vcjobs will not see."""

import pytest

from jobflow_core.validation.jobflows import validate
from jobflow_core.validation.review import JOBFLOW, decide
from jobflow_core.validation.update_warnings import jobflow_update_warnings
from scenario import jobflow

PROBED = """
spec:
  flows:
    - name: server
    - name: client
      dependsOn:
        targets: [server]
        probe:
          {probe}
"""


def probe_messages(probe: str) -> list[str]:
    return [error.message for error in validate(jobflow(PROBED.format(probe=probe)))]


def test_well_formed_probes_are_valid():
    assert probe_messages(
        "{httpGetList: [{taskName: web, path: /ready, port: 8080, httpHeader: {name: X-Probe, value: jobflow}}],"
        " tcpSocketList: [{taskName: web, port: 5432}], taskStatusList: [{taskName: worker, phase: Succeeded}]}"
    ) == []


@pytest.mark.parametrize(
    "probe, message",
    [
        ("{httpGetList: [{taskName: web, port: 0}]}",
         'flow "client": dependsOn.probe.httpGetList[0].port 0 is not a port from 1 to 65535'),
        ("{httpGetList: [{taskName: web}]}",
         'flow "client": dependsOn.probe.httpGetList[0].port is missing: it must be a port from 1 to 65535'),
        ("{tcpSocketList: [{taskName: web, port: 70000}]}",
         'flow "client": dependsOn.probe.tcpSocketList[0].port 70000 is not a port from 1 to 65535'),
        ("{tcpSocketList: [{port: 80}]}",
         'flow "client": dependsOn.probe.tcpSocketList[0].taskName is missing: it must be a DNS-1123 label'),
        ("{taskStatusList: [{taskName: Worker_1, phase: Running}]}",
         'flow "client": dependsOn.probe.taskStatusList[0].taskName "Worker_1" is not a DNS-1123 label'),
        ("{taskStatusList: [{taskName: worker, phase: Completed}]}",
         'flow "client": dependsOn.probe.taskStatusList[0].phase "Completed" is not a pod phase'),
    ],
)
def test_a_probe_that_could_never_pass_is_rejected(probe, message):
    assert probe_messages(probe) == [message]


def test_a_bad_probe_says_what_to_do():
    [error] = validate(jobflow(PROBED.format(probe="{taskStatusList: [{taskName: w, phase: Done}]}")))
    assert error.code == "InvalidProbe"
    assert "Pending, Running, Succeeded, Failed, Unknown" in error.hint


# ---------------------------------------------------------------------------------------------------------------
# Updates that vcjobs created earlier will not see

SPEC = """
spec:
  flows:
    - name: a
    - name: b
      dependsOn: {targets: [a]}
"""
A_CREATED = {"jobStatusList": [{"name": "test-a", "state": "Completed"}], "completedJobs": ["test-a"]}


def test_changing_the_patch_of_a_flow_whose_vcjob_exists_warns_that_the_vcjob_will_not_change():
    old = jobflow(SPEC, status=A_CREATED)
    new = jobflow(SPEC.replace("- name: a", "- {name: a, patch: {jobSpec: {minAvailable: 2}}}"))
    assert jobflow_update_warnings(old, new) == [
        'flow "a" (patch) changed, but its vcjob "test-a" already exists and will not change '
        "(the new spec applies to vcjobs created from now on)"
    ]


def test_changing_a_flow_whose_vcjob_does_not_exist_yet_says_nothing():
    old = jobflow(SPEC, status=A_CREATED)
    new = jobflow(SPEC.replace("targets: [a]", "targets: []"))
    assert jobflow_update_warnings(old, new) == []


def test_changing_dependencies_of_a_started_flow_warns_too():
    status = {"runningJobs": ["test-b"], "conditions": {"test-a": {"phase": "Completed"}}}
    old = jobflow(SPEC, status=status)
    new = jobflow(SPEC.replace("dependsOn: {targets: [a]}", "dependsOn: {targets: []}"))
    [warning] = jobflow_update_warnings(old, new)
    assert warning.startswith('flow "b" (dependsOn) changed, but its vcjob "test-b" already exists')


def test_running_another_template_in_a_started_flow_warns_too():
    old = jobflow(SPEC, status=A_CREATED)
    new = jobflow(SPEC.replace("- name: a", "- {name: a, jobTemplate: a2}"))
    [warning] = jobflow_update_warnings(old, new)
    assert warning.startswith('flow "a" (jobTemplate) changed, but its vcjob "test-a" already exists')


def test_removing_a_flow_whose_vcjob_exists_warns_that_the_vcjob_stays():
    old = jobflow(SPEC, status=A_CREATED)
    new = jobflow("spec: {flows: [{name: b}]}")
    assert jobflow_update_warnings(old, new) == [
        'flow "a" removed from spec.flows, but its vcjob "test-a" already exists and stays '
        "(the JobFlow still owns it; delete it if it is no longer needed)"
    ]


def test_many_changed_flows_are_named_in_one_short_warning():
    names = [f"f{i}" for i in range(40)]
    spec = "spec: {flows: [" + ", ".join(f"{{name: {n}}}" for n in names) + "]}"
    old = jobflow(spec, status={"jobStatusList": [{"name": f"test-{n}"} for n in names]})
    new = jobflow(spec.replace("name: f", "patch: {jobSpec: {queue: q}}, name: f"))
    [warning] = jobflow_update_warnings(old, new)
    assert warning.startswith('flows "f0" (patch), "f1" (patch), "f2" (patch), "f3" (patch), "f4" (patch) and 35 more')
    assert len(warning) < 256  # the API server may cut longer warnings


def request(operation: str, new: dict, old: dict | None = None) -> dict:
    return {
        "uid": "1",
        "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobFlow"},
        "operation": operation,
        "namespace": "default",
        "object": new,
        **({"oldObject": old} if old is not None else {}),
    }


def wire(text: str, **kwargs) -> dict:
    return jobflow(text, **kwargs).to_wire()


CYCLE = "spec: {flows: [{name: a, dependsOn: {targets: [b]}}, {name: b, dependsOn: {targets: [a]}}]}"


def test_an_update_of_a_valid_jobflow_is_allowed_with_its_warnings():
    old = wire(SPEC, status=A_CREATED)
    new = wire(SPEC.replace("- name: a", "- {name: a, patch: {jobSpec: {queue: q}}}"), status=A_CREATED)
    verdict = decide(request("UPDATE", new, old), kind=JOBFLOW)
    assert verdict.allowed
    assert [w[:40] for w in verdict.warnings] == ['flow "a" (patch) changed, but its vcjob ']


def test_an_update_that_makes_a_jobflow_invalid_is_denied():
    verdict = decide(request("UPDATE", wire(CYCLE), wire(SPEC)), kind=JOBFLOW)
    assert not verdict.allowed
    assert verdict.message.startswith("jobflow Flow is not DAG: a -> b -> a")


def test_an_invalid_jobflow_stored_earlier_still_takes_metadata_changes_with_a_warning():
    old = wire(CYCLE)
    new = {**old, "metadata": {**old["metadata"], "labels": {"team": "x"}, "finalizers": []}}
    verdict = decide(request("UPDATE", new, old), kind=JOBFLOW)
    assert verdict.allowed
    [warning] = verdict.warnings
    assert warning.startswith("this JobFlow is invalid, and is let through only because its spec is unchanged: "
                              "jobflow Flow is not DAG: a -> b -> a")


def test_deletes_and_connects_are_not_checked():
    assert decide({"operation": "DELETE", "oldObject": wire(CYCLE)}, kind=JOBFLOW).allowed


def test_a_jobflow_with_thousands_of_problems_lists_ten_and_counts_the_rest():
    flows = ", ".join(f"{{name: f{i}}}, {{name: f{i}}}" for i in range(2000))
    verdict = decide(request("CREATE", wire(f"spec: {{flows: [{flows}]}}")), kind=JOBFLOW)
    assert not verdict.allowed
    assert verdict.message.count("duplicate flow name") == 10
    assert verdict.message.endswith("; and 1990 more problems")
