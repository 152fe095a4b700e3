"""The outbox delivers to a real HTTP sink: coalescing per object, order, retry with backoff, and what it drops.

The sink is the shared capture sink (``tests/sinks.py``): it records every request and answers what the test says.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from apiclient import cloudevents
from apiclient.cloudevents import Change, Envelope
from devcluster.processes import free_port
from eventsource.outbox import Outbox
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB, ApiType
from sinks import NOT_HTTP, Request, Sink


def name_and_change(request: Request) -> tuple[str, str]:
    """(the object's name, the change) an event is about."""
    return request.headers["ce-name"], request.headers["ce-type"].rsplit(".", 1)[1]


def accepted(sink: Sink) -> list[tuple[str, str]]:
    return [name_and_change(request) for request in sink.accepted()]


def wait_until(what: str, condition: Callable[[], object], *, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.02)


def envelope(name: str, change: Change = Change.ADD, api_type: ApiType = JOBFLOW) -> Envelope:
    return Envelope(api_type, change, {"metadata": {"name": name, "namespace": "team-a"}})


def new_outbox(url: str, **backoff: float) -> Outbox:
    return Outbox(url, lambda env: cloudevents.encode(env, mode=cloudevents.Mode.REFERENCE,
                                                     source="https://10.96.0.1:443", overrides={}), **backoff)


@pytest.fixture
def start() -> Iterator[Callable[[Outbox], threading.Thread]]:
    """Runs an outbox's sender in a thread, and stops it after the test."""
    running: list[tuple[Outbox, threading.Thread]] = []

    def start(outbox: Outbox) -> threading.Thread:
        thread = threading.Thread(target=outbox.run, name="sender", daemon=True)
        thread.start()
        running.append((outbox, thread))
        return thread

    yield start
    for outbox, thread in running:
        outbox.stop()
        thread.join(timeout=10)


@pytest.fixture
def sinks() -> Iterator[list[Sink]]:
    started: list[Sink] = []
    yield started
    for sink in started:
        sink.close()


def test_pending_events_for_one_object_coalesce_and_the_newest_wins_even_a_delete(start, sinks):
    sinks.append(sink := Sink())
    outbox = new_outbox(sink.url)
    for event in (envelope("a"), envelope("b"), envelope("a", Change.UPDATE), envelope("a", Change.DELETE),
                  envelope("c")):
        outbox.put(event)
    assert outbox.pending() == 3

    start(outbox)
    wait_until("three deliveries", lambda: outbox.delivered == 3)
    assert accepted(sink) == [("a", "delete"), ("b", "add"), ("c", "add")]


def test_changes_of_a_jobflows_vcjobs_coalesce_with_the_jobflows_own_into_one_event(start, sinks):
    sinks.append(sink := Sink())
    outbox = new_outbox(sink.url)
    owner = [{"kind": "JobFlow", "name": "f", "controller": True}]
    outbox.put(envelope("f"))
    for name in ("f-a", "f-b", "f-a"):
        outbox.put(Envelope(VCJOB, Change.UPDATE, {"metadata": {"name": name, "namespace": "team-a",
                                                                "ownerReferences": owner}}))
    outbox.put(Envelope(VCJOB, Change.DELETE, {"metadata": {"name": "f-c", "namespace": "team-a",
                                                            "ownerReferences": owner}}))
    assert outbox.pending() == 2

    start(outbox)
    wait_until("two deliveries", lambda: outbox.delivered == 2)
    assert accepted(sink) == [("f-a", "update"), ("f-c", "delete")]
    assert sink.received[0].headers["ce-jobflow"] == "f"


def vcjob_in(phase: str, name: str = "f-a") -> Envelope:
    return Envelope(VCJOB, Change.UPDATE, {
        "metadata": {"name": name, "namespace": "team-a",
                     "ownerReferences": [{"kind": "JobFlow", "name": "f", "controller": True}]},
        "status": {"state": {"phase": phase}}})


def test_a_vcjob_change_that_may_wait_is_held_for_the_next_and_both_go_as_one_event(start, sinks):
    sinks.append(sink := Sink())
    outbox = new_outbox(sink.url, hold=0.3)
    start(outbox)
    outbox.put(vcjob_in("Pending"))
    time.sleep(0.1)
    assert outbox.delivered == 0  # held
    outbox.put(vcjob_in("Running"))
    wait_until("the held event", lambda: outbox.delivered == 1)
    time.sleep(0.4)
    assert outbox.delivered == 1  # the second change went with the first hold, not a hold of its own


def test_a_final_phase_goes_at_once_and_ends_the_hold_of_what_waited(start, sinks):
    sinks.append(sink := Sink())
    outbox = new_outbox(sink.url, hold=5)
    start(outbox)
    outbox.put(vcjob_in("Running"))
    started = time.monotonic()
    outbox.put(vcjob_in("Completed"))
    wait_until("the urgent event", lambda: outbox.delivered == 1)
    assert time.monotonic() - started < 1


def test_events_for_different_objects_go_out_in_arrival_order(start, sinks):
    sinks.append(sink := Sink())
    outbox = new_outbox(sink.url)
    names = [f"flow-{i:02}" for i in range(20)]
    for name in names:
        outbox.put(envelope(name))
    outbox.put(envelope("flow-00", api_type=JOBTEMPLATE))  # same name, other kind: another object

    start(outbox)
    wait_until("21 deliveries", lambda: outbox.delivered == 21)
    assert [name for name, _ in accepted(sink)] == [*names, "flow-00"]
    assert sink.received[-1].headers["ce-kind"] == "JobTemplate"


def test_a_503_is_retried_with_exponential_backoff_then_delivered_as_the_same_event(start, sinks):
    answers = iter([503, 503, 503])
    sinks.append(sink := Sink(answer=lambda headers: next(answers, 202)))
    outbox = new_outbox(sink.url, initial_backoff=0.2, max_backoff=5)
    outbox.put(envelope("a"))

    start(outbox)
    wait_until("the delivery", lambda: outbox.delivered == 1)
    assert [r.status for r in sink.received] == [503, 503, 503, 202]
    assert outbox.failures == 3
    gaps = [later.at - earlier.at for earlier, later in zip(sink.received, sink.received[1:])]
    assert all(gap >= 0.9 * wanted for gap, wanted in zip(gaps, [0.2, 0.4, 0.8])), gaps
    # As ApiServerSource's sender: a retry is the same event, so a sink can tell a duplicate.
    assert len({(r.headers["ce-id"], r.headers["ce-time"]) for r in sink.received}) == 1


def test_an_unreachable_sink_is_retried_until_it_listens(start, sinks):
    port = free_port()
    outbox = new_outbox(f"http://127.0.0.1:{port}/", initial_backoff=0.05, max_backoff=0.5)
    outbox.put(envelope("a"))

    start(outbox)
    wait_until("two refused connections", lambda: outbox.failures >= 2)
    sinks.append(sink := Sink(port=port))
    wait_until("the delivery", lambda: outbox.delivered == 1)
    assert accepted(sink) == [("a", "add")]


def test_a_sink_that_does_not_answer_in_http_is_retried_like_an_unreachable_one(start, sinks):
    answers = iter([NOT_HTTP, NOT_HTTP])
    sinks.append(sink := Sink(answer=lambda headers: next(answers, 202)))
    outbox = new_outbox(sink.url, initial_backoff=0.05, max_backoff=0.5)
    outbox.put(envelope("a"))

    sender = start(outbox)
    wait_until("the delivery", lambda: outbox.delivered == 1 or not sender.is_alive())
    assert sender.is_alive(), "the sender thread died on an answer that is not HTTP"
    assert [r.status for r in sink.received] == [NOT_HTTP, NOT_HTTP, 202]


def test_a_400_is_dropped_without_retry_and_the_next_event_goes_out(start, sinks):
    sinks.append(sink := Sink(answer=lambda headers: 400 if headers["ce-name"] == "bad" else 202))
    outbox = new_outbox(sink.url, initial_backoff=0.05)
    outbox.put(envelope("bad"))
    outbox.put(envelope("good"))

    start(outbox)
    wait_until("the good event", lambda: outbox.delivered == 1)
    # A retry of "bad" would have gone out before "good": failed events go back to the head of the line.
    assert [(name_and_change(r)[0], r.status) for r in sink.received] == [("bad", 400), ("good", 202)]
    assert outbox.failures == 0


def test_a_newer_change_during_an_outage_replaces_the_event_that_keeps_failing(start, sinks):
    outage = threading.Event()
    outage.set()
    sinks.append(sink := Sink(answer=lambda headers: 503 if outage.is_set() else 202))
    outbox = new_outbox(sink.url, initial_backoff=0.05, max_backoff=0.2)
    outbox.put(envelope("a", Change.UPDATE))

    start(outbox)
    wait_until("a refused attempt", lambda: outbox.failures >= 1)
    outbox.put(envelope("a", Change.DELETE))
    outbox.put(envelope("b"))
    wait_until("more refused attempts", lambda: outbox.failures >= 3)
    outage.clear()

    wait_until("two deliveries", lambda: outbox.delivered == 2)
    assert accepted(sink) == [("a", "delete"), ("b", "add")]
    assert outbox.pending() == 0


def test_stop_ends_the_sender_even_in_the_middle_of_a_long_backoff(start, sinks):
    sinks.append(sink := Sink(answer=503))
    outbox = new_outbox(sink.url, initial_backoff=60)
    outbox.put(envelope("a"))

    sender = start(outbox)
    wait_until("a refused attempt", lambda: outbox.failures == 1)
    outbox.stop()
    sender.join(timeout=10)
    assert not sender.is_alive()
    assert len(sink.received) == 1


def test_several_senders_never_send_two_events_of_one_object_at_once_and_deliver_every_object():
    busy: set[str] = set()
    overlaps: list[str] = []
    delivered: list[str] = []
    lock = threading.Lock()

    class SlowSink(Outbox):
        def _post(self, message):  # the real encoding, a slow sink that records concurrency per object
            name = message[0]["ce-name"]
            with lock:
                if name in busy:
                    overlaps.append(name)
                busy.add(name)
            time.sleep(0.02)
            with lock:
                busy.discard(name)
                delivered.append(name)
            return 202, b"", None

    outbox = SlowSink("http://unused", lambda e: cloudevents.encode(e, mode=cloudevents.Mode.REFERENCE, source="s",
                                                                    overrides={}))
    senders = [threading.Thread(target=outbox.run, daemon=True) for _ in range(4)]
    for sender in senders:
        sender.start()
    for round_ in range(5):
        for name in ("a", "b", "c", "d", "e", "f"):
            outbox.put(Envelope(JOBFLOW, Change.UPDATE, {"metadata": {"namespace": "ns", "name": name,
                                                                        "resourceVersion": str(round_)}}))
        time.sleep(0.01)
    deadline = time.monotonic() + 10
    while (outbox.pending() or len(set(delivered)) < 6) and time.monotonic() < deadline:
        time.sleep(0.01)
    outbox.stop()
    assert overlaps == []
    assert set(delivered) == {"a", "b", "c", "d", "e", "f"}


def test_an_https_sink_is_trusted_through_k_ca_certs(tmp_path) -> None:
    import ssl

    from devcluster.pki import loopback_serving_cert

    cert = loopback_serving_cert(tmp_path, "sink")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert.cert, cert.key)
    encode = lambda e: cloudevents.encode(e, mode=cloudevents.Mode.REFERENCE, source="s", overrides={})  # noqa: E731
    with Sink(tls=context) as sink:
        outbox = Outbox(sink.url, encode, ca_certs=cert.ca.read_text())
        sender = threading.Thread(target=outbox.run, daemon=True)
        sender.start()
        outbox.put(Envelope(JOBFLOW, Change.ADD, {"metadata": {"namespace": "ns", "name": "tls"}}))
        deadline = time.monotonic() + 10
        while not sink.received and time.monotonic() < deadline:
            time.sleep(0.05)
        outbox.stop()
    assert [request.headers["ce-name"] for request in sink.received] == ["tls"]


def test_an_event_a_handler_of_another_version_answered_is_sent_again_until_one_of_this_version_does(
        start, sinks, monkeypatch):
    monkeypatch.setattr("eventsource.outbox.OTHER_VERSION_SECONDS", 0.05)
    sinks.append(sink := Sink())  # no version header: a 0.1.0 handler
    outbox = Outbox(sink.url, new_outbox(sink.url).encode, version="0.2.0")
    start(outbox)
    outbox.put(envelope("a"))

    wait_until("a second delivery", lambda: len(sink.accepted()) >= 2)
    sink.reply_headers = {"Jobflow-Engine-Version": "0.1.9"}  # a handler of another version: still again
    count = len(sink.accepted())
    wait_until("another delivery", lambda: len(sink.accepted()) > count + 1)
    sink.reply_headers = {"Jobflow-Engine-Version": "0.2.0"}  # the new handlers took over
    wait_until("this version to answer", lambda: any(r.ok for r in sink.received[count + 2:]))
    time.sleep(0.3)
    settled = len(sink.accepted())
    time.sleep(0.3)

    assert len(sink.accepted()) == settled
    assert {name_and_change(r) for r in sink.accepted()} == {("a", "add")}
    # Each a new event (a new id): a handler that remembers the ids it answered must not take it for that one.
    assert len({r.headers["ce-id"] for r in sink.accepted()}) == len(sink.accepted())


def test_a_handler_of_another_version_kept_on_purpose_gets_each_change_a_bounded_number_of_times(
        start, sinks, monkeypatch):
    monkeypatch.setattr("eventsource.outbox.OTHER_VERSION_SECONDS", 0.01)
    monkeypatch.setattr("eventsource.outbox.OTHER_VERSION_RESENDS", 3)
    sinks.append(sink := Sink(reply_headers={"Jobflow-Engine-Version": "0.1.0"}))
    outbox = Outbox(sink.url, new_outbox(sink.url).encode, version="0.2.0")
    start(outbox)
    outbox.put(envelope("a"))

    wait_until("four deliveries", lambda: len(sink.accepted()) >= 4)
    time.sleep(0.3)
    assert len(sink.accepted()) == 4


def test_without_a_version_of_its_own_the_outbox_sends_each_change_once(start, sinks, monkeypatch):
    monkeypatch.setattr("eventsource.outbox.OTHER_VERSION_SECONDS", 0.01)
    sinks.append(sink := Sink())
    outbox = new_outbox(sink.url)  # ApiServerSource's contract: the sink is not necessarily our handler
    start(outbox)
    outbox.put(envelope("a"))

    wait_until("a delivery", lambda: sink.accepted())
    time.sleep(0.3)
    assert len(sink.accepted()) == 1
