"""The CloudEvents-out adapter (``handlers.notify``) and the wake-ups that bring undelivered notifications out."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from devcluster.processes import free_port
from eventsource.recheck import recheck_seconds
from handlers import metrics
from handlers.notify import Notifier
from jobflow_core.models import Notification
from jobflow_core.planning.notifications import DELIVERY_RECHECK_SECONDS
from jobflow_core.routing.concerns import can_change
from sinks import Sink

NOTICES = [Notification(id=f"uid-1.{n}", type="sh.volcano.flow.job.created", subject=f"f-{n}",
                        time=datetime(2026, 11, 24, 10, 0, n, tzinfo=UTC), data={"job": f"f-{n}", "flow": str(n)})
           for n in (1, 2, 3)]


def test_an_event_carries_the_recorded_id_and_the_jobflows_source_in_binary_mode():
    headers, body = Notifier("http://sink/", overrides={"cluster": "eu1"}).encode("ns", "f", NOTICES[0])
    lowered = {key.lower(): value for key, value in headers.items()}
    assert lowered["ce-id"] == "uid-1.1" and lowered["ce-specversion"] == "1.0"
    assert lowered["ce-source"] == "/apis/flow.volcano.sh/v1alpha1/namespaces/ns/jobflows/f"
    assert lowered["ce-type"] == "sh.volcano.flow.job.created" and lowered["ce-subject"] == "f-1"
    assert lowered["ce-time"].startswith("2026-11-24T10:00:01")
    assert (lowered["ce-jobflow"], lowered["ce-namespace"], lowered["ce-cluster"]) == ("f", "ns", "eu1")
    assert lowered["content-type"] == "application/json"
    assert json.loads(body) == {"job": "f-1", "flow": "1"}


def test_sending_stops_at_the_first_refusal_and_returns_only_what_the_sink_took():
    replies = iter([202, 503, 202])
    failed = metrics.NOTIFICATIONS.labels("failed")._value.get()
    with Sink(answer=lambda headers: next(replies)) as sink:
        taken = Notifier(sink.url).send("ns", "f", NOTICES)
    seen = [request.headers["ce-id"] for request in sink.received]
    assert taken == {"uid-1.1"} and seen == ["uid-1.1", "uid-1.2"]  # the third waits behind the second
    assert metrics.NOTIFICATIONS.labels("failed")._value.get() == failed + 1


def test_a_sink_that_does_not_answer_takes_nothing():
    assert Notifier(f"http://127.0.0.1:{free_port()}/", timeout=0.5).send("ns", "f", NOTICES) == set()


def test_the_sink_comes_from_k_sink_and_a_bad_k_ce_overrides_stops_the_start_with_why():
    assert Notifier.from_environment({}) is None
    notifier = Notifier.from_environment({"K_SINK": "http://broker/", "K_CE_OVERRIDES": '{"extensions": {"a": "b"}}'})
    assert notifier is not None and (notifier.sink, notifier.overrides) == ("http://broker/", {"a": "b"})
    with pytest.raises(ValueError, match="lower-case"):
        Notifier.from_environment({"K_SINK": "http://broker/", "K_CE_OVERRIDES": '{"extensions": {"A_b": "c"}}'})


def test_a_jobflow_with_undelivered_notifications_is_woken_and_resynced_even_when_it_succeeded():
    succeeded = {"spec": {"jobRetainPolicy": "retain"}, "status": {"state": {"phase": "Succeed"}}}
    assert recheck_seconds(succeeded) is None and not can_change(succeeded)
    holding = {**succeeded, "status": {**succeeded["status"], "notifications": {"sequence": 3,
                                                                                "pending": [{"id": "u.3"}]}}}
    assert recheck_seconds(holding) == DELIVERY_RECHECK_SECONDS and can_change(holding)


def test_another_reconciles_fresh_notifications_are_left_to_it_and_sent_once_the_grace_passed():
    from datetime import timedelta

    from jobflow_core.planning.notifications import SENDER_GRACE_SECONDS, due

    recorded = NOTICES[0].time
    assert due(NOTICES[0], now=recorded, ours=True)
    assert not due(NOTICES[0], now=recorded + timedelta(seconds=SENDER_GRACE_SECONDS - 1), ours=False)
    assert due(NOTICES[0], now=recorded + timedelta(seconds=SENDER_GRACE_SECONDS), ours=False)
    assert SENDER_GRACE_SECONDS < DELIVERY_RECHECK_SECONDS  # the next wake-up after a failure sends it
