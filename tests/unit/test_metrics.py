"""``GET /metrics``: what the handler did, in Prometheus' text format, and the table that documents it."""

from __future__ import annotations

import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from handlers import metrics
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB
from test_shell_reconciler import NS, template
from test_shell_routes import client, kube, send  # noqa: F401 (fixtures, used by name)


def scrape(client) -> dict[tuple[str, tuple], float]:  # noqa: F811
    reply = client.get("/metrics")
    assert reply.status_code == 200 and reply.headers["Content-Type"].startswith("text/plain")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(reply.get_data(as_text=True)) for sample in family.samples}


def delta(before: dict, after: dict, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0) - before.get(key, 0)


def test_an_event_moves_the_counters_and_fills_the_histograms(client, kube):  # noqa: F811
    before = scrape(client)
    assert send(client, JOBFLOW, "f").status_code == 202
    after = scrape(client)
    assert delta(before, after, "jobflow_handler_events_total", type="dev.knative.apiserver.ref.update",
                 code="202") == 1
    assert delta(before, after, "jobflow_handler_vcjobs_created_total") == 1
    assert delta(before, after, "jobflow_handler_status_writes_total") == 1
    assert delta(before, after, "jobflow_handler_reconcile_duration_seconds_count") == 1
    assert client.post("/", data=b"nonsense", headers={"Content-Type": "application/json"}).status_code == 400
    assert delta(after, scrape(client), "jobflow_handler_events_total", type="invalid", code="400") == 1


def test_event_types_the_sender_makes_up_are_counted_together_so_the_series_stay_bounded(client, kube):  # noqa: F811
    before = scrape(client)
    for i in range(20):
        reply = client.post("/", data=b"{}", headers={
            "Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": str(i), "ce-source": "x",
            "ce-type": f"com.example.made-up-{i}", "ce-kind": "JobFlow", "ce-apiversion": "flow.volcano.sh/v1alpha1",
            "ce-namespace": NS, "ce-name": "f"})
        assert reply.status_code == 202
    after = scrape(client)
    assert delta(before, after, "jobflow_handler_events_total", type="other", code="202") == 20
    assert not any("made-up" in str(labels) for _, labels in after)


def test_the_dependency_latency_is_observed_when_a_dependent_is_created(client, kube):  # noqa: F811
    send(client, JOBFLOW, "f")
    kube.put(template("b"))
    kube.move(NS, "f-a", "Completed")
    before = scrape(client)
    send(client, VCJOB, "f-a")
    after = scrape(client)
    assert delta(before, after, "jobflow_dependency_latency_seconds_count") == 1


@pytest.mark.parametrize("name", re.findall(r"^``(jobflow_\w+)``", metrics.__doc__, re.MULTILINE))
def test_every_documented_metric_is_exported(client, name):  # noqa: F811
    exported = {family.name for family in text_string_to_metric_families(client.get("/metrics").get_data(
        as_text=True))}
    assert name.removesuffix("_total") in exported
