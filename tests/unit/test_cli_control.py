"""``kubectl jobflow suspend``/``resume``: a JobFlow by NAME, a JobFlowTemplate's schedule by ``jft/NAME``;
``stop``/``terminate`` (``spec.shutdown``), and ``retry``, which removes it."""

import io
from datetime import UTC, datetime

import pytest

from apiclient.cluster import KubeError
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, ApiType
from kubectl_jobflow import cli, context


def merged(target: dict, patch: dict) -> dict:
    """``target`` with a JSON merge patch (RFC 7386) applied: null removes a key, objects merge, the rest replaces."""
    result = dict(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = merged({}, value) if isinstance(value, dict) else value
    return result


class Stored:
    """An API server holding a few objects: find, merge patches applied and recorded as sent (a ``resourceVersion``
    in one is a precondition, as the API server's: another one answers 409), and who the caller is."""

    def __init__(self, *objects: tuple[ApiType, dict], user: dict | None = None) -> None:
        self.objects = {(api_type.kind, obj["metadata"]["name"]): obj for api_type, obj in objects}
        self.patches: list[tuple[str, str, str, dict]] = []
        self.user = user or {"username": "ana", "groups": ["team-a", "system:authenticated"]}
        self.asked_who = 0

    def find(self, api_type: ApiType, namespace: str, name: str) -> dict | None:
        return self.objects.get((api_type.kind, name))

    def merge_patch(self, api_type: ApiType, namespace: str, name: str, patch: dict) -> dict:
        self.patches.append((api_type.kind, namespace, name, patch))
        obj = self.objects[(api_type.kind, name)]
        meta = obj["metadata"]
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != meta.get("resourceVersion"):
            raise KubeError(f'Operation cannot be fulfilled on jobflows.flow.volcano.sh "{name}": the object has been '
                            "modified; please apply your changes to the latest version and try again", status=409)
        obj = merged(obj, patch)
        obj["metadata"]["resourceVersion"] = str(int(meta.get("resourceVersion") or 0) + 1)
        self.objects[(api_type.kind, name)] = obj
        return obj

    def whoami(self) -> dict:
        self.asked_who += 1
        return self.user

    def close(self) -> None:
        pass


def nightly(**spec) -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
            "metadata": {"name": "nightly", "namespace": "ns", "creationTimestamp": "2026-11-24T09:00:30Z"},
            "spec": {"schedule": "*/5 * * * *", "jobFlow": {"spec": {"flows": [{"name": "a"}]}}, **spec},
            "status": {"lastScheduleTime": "2026-11-24T09:05:00Z"}}


def held() -> dict:
    return {"metadata": {"name": "nightly", "namespace": "ns"}, "spec": {"flows": [{"name": "a"}]}}


def jobflow(monkeypatch, stored: Stored, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(context.Context, "cluster", property(lambda ctx: stored))
    out, err = io.StringIO(), io.StringIO()
    code = cli.run([*argv, "-n", "ns"], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def at_9_07(monkeypatch):
    monkeypatch.setattr("kubectl_jobflow.control.utc_now", lambda: datetime(2026, 11, 24, 9, 7, tzinfo=UTC))


def test_suspend_jft_sets_the_templates_spec_suspend_by_a_merge_patch_and_leaves_the_jobflow_alone(monkeypatch):
    stored = Stored((JOBFLOW, held()), (JOBFLOWTEMPLATE, nightly()))
    assert jobflow(monkeypatch, stored, "suspend", "jft/nightly") == (0, (
        "Suspended JobFlowTemplate: ns/nightly: no scheduled run starts until it is resumed (its active runs go on; "
        "runs by event or by hand still start)\n"), "")
    assert stored.patches == [("JobFlowTemplate", "ns", "nightly", {"spec": {"suspend": True}})]


def test_resume_jft_says_when_the_schedule_starts_a_run_next(monkeypatch, at_9_07):
    stored = Stored((JOBFLOWTEMPLATE, nightly(suspend=True)))
    assert jobflow(monkeypatch, stored, "resume", "jft/nightly") == (0, (
        "Resumed JobFlowTemplate: ns/nightly: the next scheduled time is 2026-11-24T09:10:00Z\n"), "")
    assert stored.patches == [("JobFlowTemplate", "ns", "nightly", {"spec": {"suspend": False}})]


def test_resume_jft_after_missed_times_says_the_last_one_starts_at_the_next_look(monkeypatch):
    stored = Stored((JOBFLOWTEMPLATE, nightly(suspend=True)))
    monkeypatch.setattr("kubectl_jobflow.control.utc_now", lambda: datetime(2026, 11, 24, 9, 22, tzinfo=UTC))
    code, out, _ = jobflow(monkeypatch, stored, "resume", "-N", "jobflowtemplate/nightly")
    assert code == 0 and out == (
        "Resumed JobFlowTemplate: ns/nightly: the run for 2026-11-24T09:20:00Z, the last scheduled time that passed "
        "while it was suspended, starts at the engine's next look; then the next scheduled time is "
        "2026-11-24T09:25:00Z\n")


def test_resume_jft_under_forbid_says_the_missed_run_waits_for_the_active_run(monkeypatch):
    stored = Stored((JOBFLOWTEMPLATE, nightly(suspend=True, concurrencyPolicy="Forbid")))
    stored.objects[("JobFlowTemplate", "nightly")]["status"]["active"] = ["nightly-m1764000000"]
    monkeypatch.setattr("kubectl_jobflow.control.utc_now", lambda: datetime(2026, 11, 24, 9, 22, tzinfo=UTC))
    code, out, _ = jobflow(monkeypatch, stored, "resume", "jft/nightly")
    assert code == 0 and out == (
        "Resumed JobFlowTemplate: ns/nightly: the run for 2026-11-24T09:20:00Z, the last scheduled time that passed "
        "while it was suspended, waits: nightly-m1764000000 is still active (concurrencyPolicy Forbid); it starts "
        "when that ends; then the next scheduled time is 2026-11-24T09:25:00Z\n")


def test_a_bare_name_and_jf_slash_name_still_suspend_the_jobflow(monkeypatch):
    for given in ("nightly", "jf/nightly", "JobFlow/nightly"):
        stored = Stored((JOBFLOW, held()), (JOBFLOWTEMPLATE, nightly()))
        assert jobflow(monkeypatch, stored, "suspend", given) == (0, "Suspended JobFlow: ns/nightly\n", "")
        assert stored.patches == [("JobFlow", "ns", "nightly", {"spec": {"suspend": True}})]


def test_suspending_a_suspended_template_says_so_and_patches_nothing(monkeypatch):
    stored = Stored((JOBFLOWTEMPLATE, nightly(suspend=True)))
    assert jobflow(monkeypatch, stored, "suspend", "jft/nightly") == (
        0, "JobFlowTemplate ns/nightly is already suspended\n", "")
    assert stored.patches == []


@pytest.mark.parametrize(("argv", "message"), [
    (("resume", "jft/missing"), 'Failed to resume: JobFlowTemplate "ns/missing" not found: check the name and the '
                                "namespace (-n); kubectl get jft lists them\n"),
    (("suspend", "jt/a"), "Failed to suspend: suspend acts on a JobFlow (NAME or jf/NAME) or a JobFlowTemplate "
                          "(jft/NAME), not 'jt/a': e.g. kubectl jobflow suspend jft/nightly\n"),
    (("suspend", "jft/"), "Failed to suspend: suspend acts on a JobFlow (NAME or jf/NAME) or a JobFlowTemplate "
                          "(jft/NAME), not 'jft/': e.g. kubectl jobflow suspend jft/nightly\n"),
    (("resume",), "Failed to resume: name the JobFlow or the JobFlowTemplate: kubectl jobflow resume NAME, or resume "
                  "jft/NAME for a JobFlowTemplate\n"),
])
def test_what_cannot_be_suspended_or_resumed_is_refused_saying_what_to_write(monkeypatch, argv, message):
    stored = Stored((JOBFLOWTEMPLATE, nightly()))
    # A missing object is a failure (1), a command line that names nothing suspendable a usage error (2).
    assert jobflow(monkeypatch, stored, *argv) == (1 if argv[1:] == ("jft/missing",) else 2, "", message)
    assert stored.patches == []


def running(**spec) -> dict:
    """JobFlow ``test`` of namespace ``ns``: a Completed, b running, c waiting for b; a ``finally`` flow z."""
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": "test", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"flows": [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}},
                               {"name": "c", "dependsOn": {"targets": ["b"]}}, {"name": "z", "finally": True}],
                     **spec},
            "status": {"state": {"phase": "Running"},
                       "jobStatusList": [{"name": "test-a", "state": "Completed"},
                                         {"name": "test-b", "state": "Running"}],
                       "waitingFlows": [{"name": "c", "jobName": "test-c", "waitingFor": ["b"]}]}}


def ended(phase: str, *records: tuple[str, str], **spec) -> dict:
    jobflow = running(**spec)
    jobflow["status"] = {"state": {"phase": phase}, "jobStatusList": [{"name": name, "state": state}
                                                                      for name, state in records]}
    return jobflow


def test_stop_sets_spec_shutdown_stop_by_a_merge_patch_and_says_what_follows(monkeypatch):
    stored = Stored((JOBFLOW, running()))
    assert jobflow(monkeypatch, stored, "stop", "test") == (0, (
        "Stopping JobFlow: ns/test: what runs is aborted, nothing new starts but its finally flows; it ends Failed "
        "(Stopped), then kubectl jobflow retry test runs it again\n"), "")
    assert stored.patches == [("JobFlow", "ns", "test", {"spec": {"shutdown": "Stop"}})]


def test_terminate_sets_terminate_and_says_finally_flows_are_aborted_too(monkeypatch):
    stored = Stored((JOBFLOW, running()))
    code, out, _ = jobflow(monkeypatch, stored, "terminate", "-N", "test")
    assert code == 0 and out == (
        "Terminating JobFlow: ns/test: what runs is aborted, its finally flows too, and nothing new starts; it ends "
        "Failed (Terminated), then kubectl jobflow retry test runs it again\n")
    assert stored.patches == [("JobFlow", "ns", "test", {"spec": {"shutdown": "Terminate"}})]


def test_terminate_after_stop_replaces_it_and_says_what_it_was(monkeypatch):
    stored = Stored((JOBFLOW, running(shutdown="Stop")))
    code, out, _ = jobflow(monkeypatch, stored, "terminate", "test")
    assert code == 0 and out.startswith("Terminating JobFlow: ns/test (it was Stop): ")
    assert stored.objects[("JobFlow", "test")]["spec"]["shutdown"] == "Terminate"


def test_stopping_a_stopping_jobflow_says_so_and_patches_nothing(monkeypatch):
    stored = Stored((JOBFLOW, running(shutdown="Stop")), (JOBFLOW, ended("Failed", shutdown="Stop") | {
        "metadata": {"name": "done", "namespace": "ns"}}))
    assert jobflow(monkeypatch, stored, "stop", "test") == (
        0, "JobFlow ns/test is already stopping (spec.shutdown: Stop)\n", "")
    assert jobflow(monkeypatch, stored, "stop", "done") == (
        0, "JobFlow ns/done is already stopped (spec.shutdown: Stop)\n", "")
    assert stored.patches == []


def test_a_succeeded_jobflow_has_nothing_to_stop_and_is_refused(monkeypatch):
    stored = Stored((JOBFLOW, ended("Succeed", ("test-a", "Completed"))))
    assert jobflow(monkeypatch, stored, "terminate", "test") == (
        1, "", "Failed to terminate: JobFlow ns/test already Succeed: nothing of it runs, nothing to terminate\n")
    assert stored.patches == []


def test_a_failed_jobflow_whose_other_vcjobs_still_run_is_stopped_and_they_are_named(monkeypatch):
    stored = Stored((JOBFLOW, ended("Failed", ("test-a", "Failed"), ("test-b", "Running"))))
    assert jobflow(monkeypatch, stored, "stop", "test") == (0, (
        "Stopping JobFlow: ns/test: it already ended Failed; its vcjobs that still run (test-b) are aborted; kubectl "
        "jobflow retry test runs it again\n"), "")
    assert stored.patches == [("JobFlow", "ns", "test", {"spec": {"shutdown": "Stop"}})]


def test_a_failed_jobflow_with_nothing_running_is_left_alone_saying_there_is_nothing_to_stop(monkeypatch):
    stored = Stored((JOBFLOW, ended("Failed", ("test-a", "Failed"), ("test-b", "Aborted"))))
    assert jobflow(monkeypatch, stored, "stop", "test") == (0, (
        "JobFlow ns/test already ended Failed and none of its vcjobs runs (as its status says): nothing to stop\n"),
        "")
    assert stored.patches == []


@pytest.mark.parametrize(("argv", "code", "message"), [
    (("stop", "nope"), 1, 'Failed to stop: JobFlow "ns/nope" not found: check the name and the namespace (-n)\n'),
    (("terminate",), 2, "Failed to terminate: name the JobFlow: kubectl jobflow terminate NAME\n"),
])
def test_stop_or_terminate_of_nothing_is_refused_saying_what_to_write(monkeypatch, argv, code, message):
    stored = Stored((JOBFLOW, running()))
    assert jobflow(monkeypatch, stored, *argv) == (code, "", message)
    assert stored.patches == []


def test_retry_removes_spec_shutdown_in_the_same_patch_as_the_rerun_request(monkeypatch):
    stored = Stored((JOBFLOW, ended("Failed", ("test-a", "Completed"), ("test-b", "Aborted"), shutdown="Stop")))
    code, out, _ = jobflow(monkeypatch, stored, "retry", "test")
    assert code == 0 and "; spec.shutdown (Stop) removed; follow it with kubectl jobflow status test --watch)" in out
    [(_, _, _, patch)] = stored.patches
    assert patch["spec"] == {"shutdown": None}
    assert set(patch["metadata"]["annotations"]) == {"flow.volcano.sh/rerun", "flow.volcano.sh/rerun-flows"}
    assert "shutdown" not in stored.objects[("JobFlow", "test")]["spec"]


def test_retry_without_a_shutdown_still_sends_its_removal_and_mentions_none(monkeypatch):
    stored = Stored((JOBFLOW, ended("Failed", ("test-b", "Failed"))))
    code, out, _ = jobflow(monkeypatch, stored, "retry", "test", "--flow", "b")
    assert code == 0 and "removed" not in out and out.startswith("Retrying JobFlow: ns/test: b and what follows")
    assert stored.patches[0][3]["spec"] == {"shutdown": None}


def test_retry_of_a_jobflow_still_stopping_is_refused_until_it_ended_failed(monkeypatch):
    stored = Stored((JOBFLOW, running(shutdown="Stop")))
    assert jobflow(monkeypatch, stored, "retry", "test") == (1, "", (
        "Failed to retry: JobFlow ns/test is Running: only a Failed JobFlow can be retried (see kubectl jobflow "
        "status test)\n"))
    assert stored.patches == []
