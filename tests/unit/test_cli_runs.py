"""``kubectl jobflow history``'s table: what started each run, its phase, start and duration."""

from datetime import UTC, datetime

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
