"""``kubectl jobflow suspend``/``resume``: a JobFlow by NAME, a JobFlowTemplate's schedule by ``jft/NAME``."""

import io
from datetime import UTC, datetime

import pytest

from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, ApiType
from kubectl_jobflow import cli, context


class Stored:
    """An API server holding a few objects: find, and merge patches recorded as sent."""

    def __init__(self, *objects: tuple[ApiType, dict]) -> None:
        self.objects = {(api_type.kind, obj["metadata"]["name"]): obj for api_type, obj in objects}
        self.patches: list[tuple[str, str, str, dict]] = []

    def find(self, api_type: ApiType, namespace: str, name: str) -> dict | None:
        return self.objects.get((api_type.kind, name))

    def merge_patch(self, api_type: ApiType, namespace: str, name: str, patch: dict) -> dict:
        self.patches.append((api_type.kind, namespace, name, patch))
        obj = self.objects[(api_type.kind, name)]
        obj["spec"] = {**obj.get("spec", {}), **patch["spec"]}
        return obj

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
