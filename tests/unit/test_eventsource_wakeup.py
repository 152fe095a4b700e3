"""A JobFlowTemplate is re-announced once, just after its status's nextScheduleTime, and not when it names none."""

import threading
import time
from datetime import UTC, datetime

from apiclient.cloudevents import Change
from eventsource import wakeup
from eventsource.wakeup import Waker


class Collector:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str]] = []

    def put(self, envelope) -> None:
        self.sent.append((envelope.api_type.kind, envelope.change, envelope.obj["metadata"]["name"]))


def template(name: str, next_in: float | None) -> dict:
    status = {}
    if next_in is not None:
        moment = datetime.fromtimestamp(time.time() + next_in, UTC)
        status["nextScheduleTime"] = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"metadata": {"namespace": "ns", "name": name}, "status": status}


def test_a_template_is_announced_once_after_its_next_time_and_a_suspended_one_never(monkeypatch):
    monkeypatch.setattr(wakeup, "LATE_SECONDS", 0.1)
    out, stop = Collector(), threading.Event()
    waker = Waker(out, stop)
    threading.Thread(target=waker.run, daemon=True).start()
    waker.observe(Change.UPDATE, template("nightly", 0.3))
    waker.observe(Change.UPDATE, template("paused", 0.3))
    waker.observe(Change.UPDATE, template("paused", None))  # suspended since: its status names no next time
    time.sleep(0.2)
    assert out.sent == []
    time.sleep(1.0)
    stop.set()
    assert out.sent == [("JobFlowTemplate", Change.UPDATE, "nightly")] and waker.scheduled() == 0


def test_a_deleted_template_is_forgotten():
    waker = Waker(Collector(), threading.Event())
    waker.observe(Change.UPDATE, template("gone", 60))
    waker.observe(Change.DELETE, template("gone", 60))
    assert waker.scheduled() == 0
