"""JobFlows waiting for a probe are re-announced as often as their status asks, and only while they wait."""

import threading
import time

from apiclient.cloudevents import Change
from eventsource.recheck import Rechecker


class Collector:
    """Stands in for the Outbox: records what would be sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def put(self, envelope) -> None:
        self.sent.append((envelope.change, envelope.obj["metadata"]["name"]))


def flow(name: str, recheck: float | None) -> dict:
    waiting = [{"name": "client", "jobName": f"{name}-client", "recheckSeconds": recheck}] if recheck else []
    return {"metadata": {"namespace": "ns", "name": name}, "status": {"waitingFlows": waiting}}


def run(rechecker: Rechecker) -> threading.Thread:
    thread = threading.Thread(target=rechecker.run, daemon=True)
    thread.start()
    return thread


def test_a_waiting_jobflow_is_re_announced_every_recheck_seconds_until_it_stops_waiting():
    out, stop = Collector(), threading.Event()
    rechecker = Rechecker(out, stop)
    thread = run(rechecker)
    rechecker.observe(Change.UPDATE, flow("serving", 0.2))
    time.sleep(0.75)
    announced = len(out.sent)
    rechecker.observe(Change.UPDATE, flow("serving", None))
    time.sleep(0.5)
    stop.set()
    thread.join(timeout=5)
    assert 2 <= announced <= 4
    assert set(out.sent) == {("update", "serving")}
    assert len(out.sent) == announced
    assert rechecker.waiting() == 0


def test_a_deleted_jobflow_is_forgotten_and_others_are_not_announced():
    out, stop = Collector(), threading.Event()
    rechecker = Rechecker(out, stop)
    rechecker.observe(Change.ADD, flow("done", None))
    rechecker.observe(Change.ADD, flow("serving", 30))
    assert rechecker.waiting() == 1
    rechecker.observe(Change.DELETE, flow("serving", 30))
    assert rechecker.waiting() == 0
