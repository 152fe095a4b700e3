"""``kubectl jobflow history``'s table: what started each run, its phase, start and duration; ``kubectl jobflow
run`` refusing a run that leaves a parameter without a value, in the words the dashboard's Run now shows too."""

import io
from datetime import UTC, datetime

import pytest

from jobflow_core.vocabulary.api import JOBFLOWTEMPLATE
from kubectl_jobflow import cli, context
from kubectl_jobflow.runs import rows

NOW = datetime(2026, 11, 24, 10, 0, 0, tzinfo=UTC)


def run(name: str, created: str, annotations: dict, phase: str | None = None, ended: str | None = None) -> dict:
    status = {"state": {"phase": phase}} if phase else {}
    if ended:
        status["jobStatusList"] = [{"name": f"{name}-a", "endTimestamp": ended}]
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}, "status": status}


def test_each_run_says_what_started_it_oldest_first_with_its_duration():
    listed = [
        run("etl-m1795520000", "2026-11-24T09:58:00Z", {"flow.volcano.sh/run-cause": "manual"}, "Running"),
        run("etl-29400000", "2026-11-24T09:00:02Z", {"flow.volcano.sh/run-cause": "schedule",
                                                     "flow.volcano.sh/scheduled-time": "2026-11-24T09:00:00Z"},
            "Succeed", "2026-11-24T09:03:20Z"),
        run("etl-e0123456789", "2026-11-24T09:30:00Z", {"flow.volcano.sh/run-cause": "event",
                                                        "flow.volcano.sh/trigger": "data-ready",
                                                        "flow.volcano.sh/event-id": "landing-7"}, "Failed",
            "2026-11-24T09:30:45Z"),
    ]
    assert rows(listed, now=NOW) == [
        ["etl-29400000", "schedule 2026-11-24T09:00:00Z", "Succeed", "59m", "3m18s"],
        ["etl-e0123456789", "event landing-7 (data-ready)", "Failed", "30m", "45s"],
        ["etl-m1795520000", "manual", "Running", "2m", "2m"],
    ]


def test_a_run_not_planned_yet_shows_pending():
    assert rows([run("etl-m1", "2026-11-24T09:59:50Z", {"flow.volcano.sh/run-cause": "manual"})], now=NOW) == [
        ["etl-m1", "manual", "Pending", "10s", "10s"]]


class Templates:
    """An API server holding JobFlowTemplate ns/etl, whose parameter ``date`` has no default and ``lr`` has one."""

    def __init__(self) -> None:
        self.created: list[dict] = []

    def find(self, api_type, namespace: str, name: str) -> dict | None:
        if (api_type, namespace, name) != (JOBFLOWTEMPLATE, "ns", "etl"):
            return None
        return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
                "metadata": {"name": "etl", "namespace": "ns", "uid": "uid-etl"},
                "spec": {"jobFlow": {"spec": {"flows": [{"name": "a"}],
                                              "parameters": [{"name": "date"}, {"name": "lr", "value": "0.01"}]}}}}

    def create(self, api_type, namespace: str, body: dict) -> dict:
        self.created.append(body)
        return body

    def close(self) -> None:
        pass


UNSET = ("JobFlowTemplate ns/etl gives no default to parameter date: set it for this run (kubectl jobflow run etl "
         "-p date=VALUE), or give it a value in spec.jobFlow.spec.parameters")


def run_command(monkeypatch, stored: Templates, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(context.Context, "cluster", property(lambda ctx: stored))
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["run", "etl", *argv, "-n", "ns"], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_run_without_a_value_for_a_parameter_that_has_no_default_is_refused_and_creates_nothing(monkeypatch):
    stored = Templates()
    code, out, err = run_command(monkeypatch, stored, "-p", "lr=0.1")
    assert code != 0 and out == "" and UNSET in err
    assert stored.created == []


def test_run_giving_the_parameter_without_a_default_starts_the_run_with_it(monkeypatch):
    stored = Templates()
    code, out, _ = run_command(monkeypatch, stored, "-p", "date=2026-11-24")
    assert code == 0 and out.startswith("Started run: ns/etl-m")
    [created] = stored.created
    assert created["spec"]["parameters"] == [{"name": "date", "value": "2026-11-24"}, {"name": "lr", "value": "0.01"}]


def test_run_now_on_the_dashboard_refuses_the_unset_parameter_in_the_words_of_the_command_line():
    from dashboard.actions import template_actor
    from dashboard.app import ActionError

    stored = Templates()
    with pytest.raises(ActionError) as refused:
        template_actor(stored)("run", "ns", "etl", {"lr": "0.1"}, None)
    assert str(refused.value) == UNSET and refused.value.status == 409
    assert stored.created == []
