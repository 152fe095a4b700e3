"""CloudEvents out: a local HTTP receiver, as the handler's K_SINK, gets every transition of a real diamond, at
least once, with equal ids for duplicates; with the receiver answering 503 for 20 s in the middle, nothing is
lost (the status keeps what was not delivered, and the event source wakes the handler until it is)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from devcluster.testing import LocalCluster
from engine import start_engine
from handlers.notify import Notifier
from jobflow_core.planning.notifications import TYPE_PREFIX
from objects import apply, jobflow, template, wait_for_phase
from seeds import diamond_yaml
from sinks import Sink

pytestmark = pytest.mark.cluster

DIAMOND = diamond_yaml("told", retain="retain")

TRANSITIONS = sorted([("jobflow.started", "told"), ("jobflow.succeeded", "told"),
                      *((f"job.{kind}", f"told-{flow}") for flow in "abcde" for kind in ("created", "completed"))])


def transitions_of(receiver: Sink) -> dict[str, tuple[str, str]]:
    """id -> (type without the prefix, subject) of what it accepted; asserting a duplicate always carries the same
    transition."""
    by_id: dict[str, tuple[str, str]] = {}
    for request in receiver.accepted():
        id_, kind, subject = (request.headers[name] for name in ("ce-id", "ce-type", "ce-subject"))
        assert by_id.setdefault(id_, (kind.removeprefix(TYPE_PREFIX), subject)) == \
            (kind.removeprefix(TYPE_PREFIX), subject), f"id {id_} used for two transitions"
    return by_id


@pytest.fixture
def receiver() -> Iterator[Sink]:
    """An HTTP CloudEvents sink (``tests/sinks.py``) that records what it accepts."""
    with Sink() as running:
        yield running


def delivered_all(cluster: LocalCluster, namespace: str, receiver: Sink) -> bool:
    status = (jobflow(cluster, namespace, "told") or {}).get("status") or {}
    pending = (status.get("notifications") or {}).get("pending")
    return status.get("state", {}).get("phase") == "Succeed" and not pending and \
        ("jobflow.succeeded", "told") in transitions_of(receiver).values()


def run_diamond(cluster: LocalCluster, namespace: str, receiver: Sink, *, run_for: str) -> None:
    apply(cluster, namespace, "---\n".join(template(name, run_for=run_for) for name in "abcde"))
    apply(cluster, namespace, DIAMOND)


def test_a_receiver_gets_every_transition_of_a_diamond_once_per_id(cluster: LocalCluster, namespace: str,
                                                                   receiver: Sink) -> None:
    engine = start_engine(cluster, namespace, handler_config={"NOTIFIER": Notifier(receiver.url)})
    try:
        run_diamond(cluster, namespace, receiver, run_for="1s")
        wait_for_phase(cluster, namespace, "told", "Succeed", timeout=90)
        cluster.wait_until("every notification to be delivered",
                           lambda: delivered_all(cluster, namespace, receiver), timeout=30)
    finally:
        engine.stop()
    transitions = transitions_of(receiver)
    assert sorted(transitions.values()) == TRANSITIONS
    uid = jobflow(cluster, namespace, "told")["metadata"]["uid"]
    assert sorted(transitions, key=lambda id_: int(id_.rsplit(".", 1)[1])) == \
        [f"{uid}.{n}" for n in range(1, len(TRANSITIONS) + 1)]
    assert {request.headers["ce-source"] for request in receiver.accepted()} == \
        {f"/apis/flow.volcano.sh/v1alpha1/namespaces/{namespace}/jobflows/told"}
    order = [transitions[id_] for id_ in dict.fromkeys(request.headers["ce-id"] for request in receiver.accepted())]
    assert order.index(("job.completed", "told-a")) < order.index(("job.created", "told-b"))
    assert order[-1] == ("jobflow.succeeded", "told")


def test_a_receiver_answering_503_for_20_seconds_loses_nothing(cluster: LocalCluster, namespace: str,
                                                              receiver: Sink) -> None:
    engine = start_engine(cluster, namespace, handler_config={"NOTIFIER": Notifier(receiver.url)})
    try:
        run_diamond(cluster, namespace, receiver, run_for="2s")
        cluster.wait_until("the first notification", receiver.accepted, timeout=60)
        outage_ends = time.monotonic() + 20
        receiver.answer = lambda headers: 503 if time.monotonic() < outage_ends else 202
        cluster.wait_until("the outage to end", lambda: time.monotonic() > outage_ends, timeout=30)
        held = (jobflow(cluster, namespace, "told")["status"].get("notifications") or {}).get("pending") or []
        assert held, "nothing was waiting in the status during the outage"
        cluster.wait_until("every notification to be delivered after the outage",
                           lambda: delivered_all(cluster, namespace, receiver), timeout=60)
    finally:
        engine.stop()
    assert receiver.refused()
    assert sorted(transitions_of(receiver).values()) == TRANSITIONS
