"""CloudEvents out: a local HTTP receiver, as the handler's K_SINK, gets every transition of a real diamond, at
least once, with equal ids for duplicates; with the receiver answering 503 for 20 s in the middle, nothing is
lost (the status keeps what was not delivered, and the event source wakes the handler until it is)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from engine import start_engine
from handlers.notify import Notifier
from jobflow_core.planning.notifications import TYPE_PREFIX
from objects import apply, jobflow, template, wait_for_phase

pytestmark = pytest.mark.cluster

DIAMOND = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: told}
spec:
  jobRetainPolicy: retain
  flows:
  - {name: a}
  - {name: b, dependsOn: {targets: [a]}}
  - {name: c, dependsOn: {targets: [b]}}
  - {name: d, dependsOn: {targets: [b]}}
  - {name: e, dependsOn: {targets: [c, d]}}
"""

TRANSITIONS = sorted([("jobflow.started", "told"), ("jobflow.succeeded", "told"),
                      *((f"job.{kind}", f"told-{flow}") for flow in "abcde" for kind in ("created", "completed"))])


class Receiver:
    """An HTTP CloudEvents sink that records what it accepts, and can refuse everything with 503 for a while."""

    def __init__(self) -> None:
        self.accepted: list[tuple[str, str, str, str]] = []  # (id, type, subject, source)
        self.refused = 0
        self.refusing_until = 0.0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if time.monotonic() < receiver.refusing_until:
                    receiver.refused += 1
                    self.send_response(503)
                else:
                    receiver.accepted.append((self.headers["ce-id"], self.headers["ce-type"],
                                              self.headers["ce-subject"], self.headers["ce-source"]))
                    self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def transitions(self) -> dict[str, tuple[str, str]]:
        """id -> (type without the prefix, subject); asserting a duplicate always carries the same transition."""
        by_id: dict[str, tuple[str, str]] = {}
        for id_, kind, subject, _ in self.accepted:
            assert by_id.setdefault(id_, (kind.removeprefix(TYPE_PREFIX), subject)) == \
                (kind.removeprefix(TYPE_PREFIX), subject), f"id {id_} used for two transitions"
        return by_id


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.server.shutdown()


def delivered_all(cluster: LocalCluster, namespace: str, receiver: Receiver) -> bool:
    status = (jobflow(cluster, namespace, "told") or {}).get("status") or {}
    pending = (status.get("notifications") or {}).get("pending")
    return status.get("state", {}).get("phase") == "Succeed" and not pending and \
        ("jobflow.succeeded", "told") in receiver.transitions().values()


def run_diamond(cluster: LocalCluster, namespace: str, receiver: Receiver, *, run_for: str) -> None:
    apply(cluster, namespace, "---\n".join(template(name, run_for=run_for) for name in "abcde"))
    apply(cluster, namespace, DIAMOND)


def test_a_receiver_gets_every_transition_of_a_diamond_once_per_id(cluster: LocalCluster, namespace: str,
                                                                   receiver: Receiver) -> None:
    engine = start_engine(cluster, namespace, handler_config={"NOTIFIER": Notifier(receiver.url)})
    try:
        run_diamond(cluster, namespace, receiver, run_for="1s")
        wait_for_phase(cluster, namespace, "told", "Succeed", timeout=90)
        cluster.wait_until("every notification to be delivered",
                           lambda: delivered_all(cluster, namespace, receiver), timeout=30)
    finally:
        engine.stop()
    transitions = receiver.transitions()
    assert sorted(transitions.values()) == TRANSITIONS
    uid = jobflow(cluster, namespace, "told")["metadata"]["uid"]
    assert sorted(transitions, key=lambda id_: int(id_.rsplit(".", 1)[1])) == \
        [f"{uid}.{n}" for n in range(1, len(TRANSITIONS) + 1)]
    assert {source for *_, source in receiver.accepted} == \
        {f"/apis/flow.volcano.sh/v1alpha1/namespaces/{namespace}/jobflows/told"}
    order = [transitions[id_] for id_ in dict.fromkeys(id_ for id_, *_ in receiver.accepted)]
    assert order.index(("job.completed", "told-a")) < order.index(("job.created", "told-b"))
    assert order[-1] == ("jobflow.succeeded", "told")


def test_a_receiver_answering_503_for_20_seconds_loses_nothing(cluster: LocalCluster, namespace: str,
                                                              receiver: Receiver) -> None:
    engine = start_engine(cluster, namespace, handler_config={"NOTIFIER": Notifier(receiver.url)})
    try:
        run_diamond(cluster, namespace, receiver, run_for="2s")
        cluster.wait_until("the first notification", lambda: receiver.accepted, timeout=60)
        receiver.refusing_until = time.monotonic() + 20
        cluster.wait_until("the outage to end", lambda: time.monotonic() > receiver.refusing_until, timeout=30)
        held = (jobflow(cluster, namespace, "told")["status"].get("notifications") or {}).get("pending") or []
        assert held, "nothing was waiting in the status during the outage"
        cluster.wait_until("every notification to be delivered after the outage",
                           lambda: delivered_all(cluster, namespace, receiver), timeout=60)
    finally:
        engine.stop()
    assert receiver.refused > 0
    assert sorted(receiver.transitions().values()) == TRANSITIONS
