"""CloudEvents out, decided in the core (:mod:`jobflow_core.planning.notifications`): which transitions a status write
records, with which ids, and what a lost write, a replay or a sink that is down does to them."""

from __future__ import annotations

from datetime import timedelta

import hypothesis.strategies as st
from hypothesis import given, settings

from jobflow_core.models import JobFlowPhase, JobFlowStatus, VcJobPhase
from jobflow_core.planning.notifications import MAX_PENDING, TYPE_PREFIX, delivered, pending
from scenario import DIAMOND, UID, Cluster, jobflow

P = VcJobPhase


class Sink:
    """Takes every pending notification of the written status, as an HTTP sink answering 2xx would."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str, str]] = []  # (id, type without the prefix, subject)

    def drain(self, cluster: Cluster) -> None:
        for notification in pending(cluster.flow.status):
            self.received.append((notification.id, notification.type.removeprefix(TYPE_PREFIX),
                                  notification.subject))
        if cluster.flow.status is not None:
            ids = {notification.id for notification in pending(cluster.flow.status)}
            cluster.flow = cluster.flow.model_copy(update={"status": delivered(cluster.flow.status, ids)})


def run(cluster: Cluster, sink: Sink, moves: list[tuple[str, P]]) -> None:
    cluster.step()
    sink.drain(cluster)
    for flow, phase in moves:
        cluster.move(flow, phase)
        cluster.step()
        sink.drain(cluster)


DIAMOND_RUN = [(flow, phase) for flow in "abcde" for phase in (P.RUNNING, P.COMPLETED)]

DIAMOND_SEQUENCE = [
    ("job.created", "test-a"), ("jobflow.started", "test"),  # Running once a's pod runs
    ("job.completed", "test-a"), ("job.created", "test-b"),
    ("job.completed", "test-b"), ("job.created", "test-c"), ("job.created", "test-d"),
    ("job.completed", "test-c"),
    ("job.completed", "test-d"), ("job.created", "test-e"),
    ("job.completed", "test-e"), ("jobflow.succeeded", "test"),
]


def test_a_diamond_records_the_documented_sequence_with_consecutive_ids():
    cluster, sink = Cluster(jobflow(DIAMOND), notify=True), Sink()
    run(cluster, sink, DIAMOND_RUN)
    assert [(kind, subject) for _, kind, subject in sink.received] == DIAMOND_SEQUENCE
    assert [id_ for id_, _, _ in sink.received] == [f"{UID}.{n}" for n in range(1, len(DIAMOND_SEQUENCE) + 1)]
    assert cluster.flow.status.notifications.sequence == len(DIAMOND_SEQUENCE)
    assert cluster.flow.status.notifications.pending is None  # all delivered


def test_the_data_is_an_excerpt_of_the_status():
    cluster = Cluster(jobflow(DIAMOND), notify=True)
    cluster.step()
    cluster.move("a", P.RUNNING)
    cluster.move("a", P.COMPLETED)
    planned_at = cluster.now
    cluster.step()
    by_type = {n.type.removeprefix(TYPE_PREFIX) + ":" + n.subject: n for n in pending(cluster.flow.status)}
    assert by_type["jobflow.started:test"].data == {"jobFlow": "test", "phase": "Running", "progress": "1/5",
                                                   "failureRate": 0.0}
    assert by_type["job.completed:test-a"].data == {"jobFlow": "test", "flow": "a", "job": "test-a",
                                                    "phase": "Completed"}
    assert by_type["job.created:test-b"].data == {"jobFlow": "test", "flow": "b", "job": "test-b"}
    assert by_type["job.created:test-b"].time == planned_at  # the observation's time: no clock in the core


def test_replanning_what_was_written_records_nothing_new():
    cluster = Cluster(jobflow(DIAMOND), notify=True)
    cluster.step()
    cluster.step()  # records the vcjob as the API server stored it
    before = cluster.flow.status
    again = cluster.step()
    assert not again.status_changed and cluster.flow.status == before


def test_a_lost_status_write_is_planned_again_with_the_same_ids():
    cluster = Cluster(jobflow(DIAMOND), notify=True)
    cluster.step()
    cluster.move("a", P.COMPLETED)
    read = cluster.flow
    first = cluster.step()  # this write is lost: the status read is still the old one
    cluster.flow = read
    second = cluster.step()
    def same(status: JobFlowStatus) -> list[tuple]:  # the time is the written plan's: only that one counts
        return [(n.id, n.type, n.subject, n.data) for n in pending(status)]

    assert same(second.status) == same(first.status)
    assert [n.id for n in pending(second.status)][-2:] == [f"{UID}.3", f"{UID}.4"]


def test_what_the_sink_did_not_take_stays_pending_and_later_writes_add_behind_it():
    cluster, sink = Cluster(jobflow(DIAMOND), notify=True), Sink()
    cluster.step()  # the sink is down: nothing drained
    cluster.move("a", P.COMPLETED)
    cluster.step()
    sink.drain(cluster)
    assert [kind for _, kind, _ in sink.received] == ["job.created", "jobflow.started", "job.completed",
                                                       "job.created"]


def test_without_a_sink_nothing_is_recorded_and_what_was_pending_is_kept():
    cluster = Cluster(jobflow(DIAMOND), notify=True)
    cluster.step()
    held = cluster.flow.status.notifications
    cluster.notify = False
    cluster.move("a", P.COMPLETED)
    cluster.step()
    assert cluster.flow.status.notifications == held
    plain = Cluster(jobflow(DIAMOND))
    plain.step()
    assert plain.flow.status.notifications is None
    assert "notifications" not in plain.flow.status.to_wire()


RETRIED = """
metadata: {name: test}
spec:
  flows:
  - name: a
    retry: {limit: 1}
  - name: b
    dependsOn: {targets: [a]}
    when: "false"
  - name: c
    dependsOn: {targets: [a]}
"""


def test_a_failure_a_retry_a_skipped_flow_and_a_failed_jobflow():
    cluster, sink = Cluster(jobflow(RETRIED), notify=True), Sink()
    cluster.step()
    cluster.move_job("test-a", P.FAILED)
    cluster.step()
    cluster.now += timedelta(hours=1)  # past the backoff
    cluster.step()
    sink.drain(cluster)
    cluster.move_job("test-a-r1", P.COMPLETED)
    cluster.step()
    sink.drain(cluster)
    cluster.move_job("test-c", P.FAILED)
    cluster.step()
    sink.drain(cluster)
    assert [(kind, subject) for _, kind, subject in sink.received] == [
        ("job.created", "test-a"),
        ("jobflow.started", "test"), ("job.failed", "test-a"), ("job.retried", "test-a-r1"),
        ("job.completed", "test-a-r1"), ("job.created", "test-c"), ("job.skipped", "test-b"),
        ("job.failed", "test-c"), ("jobflow.failed", "test"),
    ]
    assert cluster.phase == JobFlowPhase.FAILED


def test_suspend_and_resume():
    cluster, sink = Cluster(jobflow(DIAMOND), notify=True), Sink()

    def suspend(value: bool) -> None:
        spec = cluster.flow.spec.model_copy(update={"suspend": value})
        cluster.flow = cluster.flow.model_copy(update={"spec": spec})

    cluster.step()
    cluster.move("a", P.RUNNING)
    cluster.step()
    suspend(True)
    cluster.move("a", P.COMPLETED)
    cluster.step()
    suspend(False)
    cluster.step()
    sink.drain(cluster)
    kinds = [kind for _, kind, _ in sink.received]
    assert kinds == ["job.created", "jobflow.started", "job.completed", "jobflow.suspended", "jobflow.resumed",
                     "job.created"]


def test_a_sink_down_for_long_keeps_the_newest_and_counts_what_it_dropped():
    flows = "\n".join(f"  - name: f{i}" for i in range(60))
    cluster = Cluster(jobflow(f"metadata: {{name: test}}\nspec:\n  flows:\n{flows}\n"), notify=True)
    cluster.step()  # started + 60 created
    for i in range(60):
        cluster.move(f"f{i}", P.COMPLETED)
    cluster.step()  # 60 completed + succeeded
    held = cluster.flow.status.notifications
    assert held.sequence == 122 and len(held.pending) == MAX_PENDING and held.dropped == 22
    assert held.pending[-1].id == f"{UID}.122" and held.pending[0].id == f"{UID}.23"


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_under_lost_writes_replays_and_a_flaky_sink_every_transition_arrives_once_per_id(data):
    """Whatever is lost or repeated, the sink ends with every transition of the run, each under one id, and no
    id for two transitions. (What happens between two looks is recorded in one write, in the documented order
    within a write: the order of the run itself is kept only as far as the handler saw it.)"""
    cluster, sink = Cluster(jobflow(DIAMOND), notify=True), Sink()
    moves = list(DIAMOND_RUN)
    while moves or cluster.phase != JobFlowPhase.SUCCEED:
        action = data.draw(st.sampled_from(["move", "write", "lose", "deliver", "deliver-twice", "refuse"]))
        if action == "move" and moves and f"test-{moves[0][0]}" in cluster.jobs:
            cluster.move(*moves.pop(0))
        elif action in ("write", "lose"):
            read = cluster.flow
            cluster.step()
            if action == "lose":
                cluster.flow = read
        elif action in ("deliver", "deliver-twice"):
            if action == "deliver-twice":  # delivered, but the drain write was lost: sent again later
                sink.received += [(n.id, n.type.removeprefix(TYPE_PREFIX), n.subject)
                                  for n in pending(cluster.flow.status)]
            sink.drain(cluster)
        else:  # the sink refuses: nothing is drained; without anything left to move, time goes on
            cluster.step()
    cluster.step()
    sink.drain(cluster)
    by_id = {id_: (kind, subject) for id_, kind, subject in sink.received}
    assert len({(kind, subject) for kind, subject in by_id.values()}) == len(by_id)  # one transition per id
    assert sorted(by_id.values()) == sorted(DIAMOND_SEQUENCE)
    first_seen = [int(id_.rsplit(".", 1)[1]) for id_ in dict.fromkeys(id_ for id_, _, _ in sink.received)]
    assert first_seen == list(range(1, len(DIAMOND_SEQUENCE) + 1))  # delivered in the order recorded


def test_the_status_without_notifications_is_upstreams():
    assert JobFlowStatus().to_wire() == {}
