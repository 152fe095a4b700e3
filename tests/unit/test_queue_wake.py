"""Who a change of the line wakes (issue 41, :mod:`jobflow_core.queueing.wake`): the rules one by one, and the
property that makes the periodic look a mere safety net: whenever a change of one JobFlow lets a waiting JobFlow
start (:func:`~jobflow_core.queueing.line.admit` said wait before and start after), that change wakes it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings, strategies as st

from jobflow_core.queueing.line import InLine, QueueView, admit
from jobflow_core.queueing.wake import WAKE_RULES, Freed, freed, to_wake, waiting

T0 = datetime(2026, 11, 27, tzinfo=UTC)


def entry(name: str, *, queue: str | None = "q", started: bool = False, ended: bool = False, reserved: int = 0,
          requests: int | None = 8, at: int = 0, risk: int | None = None) -> InLine:
    """``risk``: at risk, its deadline this many seconds after T0."""
    return InLine(namespace="ns", name=name, created=T0 + timedelta(seconds=at), queue=queue, started=started,
                  ended=ended, reserved={"cpu": reserved * 1000} if reserved else {},
                  requests={"cpu": requests * 1000} if requests is not None else None,
                  at_risk=T0 + timedelta(seconds=risk) if risk is not None else None)


RUNNING = entry("run", started=True, reserved=16, at=0)
WAITERS = [entry(f"w{i}", at=i) for i in range(1, 4)]


def test_a_started_jobflow_ending_wakes_every_one_waiting_in_its_queue_in_line_order() -> None:
    [room] = freed(RUNNING, replace(RUNNING, ended=True))

    assert room == Freed("q")
    other_queue = entry("elsewhere", queue="p", at=0)
    assert to_wake(room, [WAITERS[2], other_queue, WAITERS[0], RUNNING, WAITERS[1]]) == [
        ("ns", "w1"), ("ns", "w2"), ("ns", "w3")]


def test_deleted_or_shrunk_frees_room_grown_or_unchanged_does_not() -> None:
    assert freed(RUNNING, None) == [Freed("q")]
    assert freed(RUNNING, replace(RUNNING, reserved={"cpu": 8000})) == [Freed("q")]
    assert freed(RUNNING, replace(RUNNING, reserved={"cpu": 24000})) == []
    assert freed(RUNNING, RUNNING) == []
    assert freed(None, RUNNING) == [] and freed(None, WAITERS[0]) == []  # a new JobFlow never makes room


def test_a_waiting_jobflow_leaving_the_line_wakes_only_those_behind_it() -> None:
    leaving = WAITERS[1]

    [room] = freed(leaving, None)

    assert room == Freed("q", behind=leaving)
    assert to_wake(room, WAITERS) == [("ns", "w3")]
    taking = replace(leaving, started=True, reserved={"cpu": 8000})
    assert freed(leaving, taking) == []  # it took the room it was counted for


def test_a_first_reconcile_wakes_those_behind_it_in_every_queue() -> None:
    new = entry("new", queue=None, requests=None, at=0)
    behind = [entry("a", queue="q", at=1), entry("b", queue="p", at=2)]

    rooms = freed(new, replace(new, queue="p", requests={"cpu": 1000}))

    assert Freed(None, behind=new) in rooms
    assert {key for room in rooms for key in to_wake(room, behind)} == {("ns", "a"), ("ns", "b")}


def test_a_waiting_jobflow_no_longer_at_risk_wakes_those_it_stood_ahead_of() -> None:
    risky = entry("r", at=3, risk=-3600)  # at risk: it stands ahead of w1..w3 (their creation + 1 h is later)
    [room] = freed(risky, replace(risky, at_risk=None))
    assert room == Freed("q", behind=risky)
    assert to_wake(room, WAITERS) == [("ns", "w1"), ("ns", "w2"), ("ns", "w3")]


def test_every_rule_is_named() -> None:
    assert len({rule.when for rule in WAKE_RULES}) == len(WAKE_RULES) == 4


QUEUES = st.sampled_from([None, "", "q", "q", "q", "p"])  # mostly one queue, so that changes matter


@st.composite
def lines(draw) -> tuple[list[InLine], InLine, InLine | None]:
    """A line of a few JobFlows, one of which changes (to anything a status could say, or deleted)."""
    def one(name: str) -> InLine:
        return entry(name, queue=draw(QUEUES), started=draw(st.booleans()),
                     ended=draw(st.sampled_from([False] * 3 + [True])),
                     reserved=draw(st.sampled_from([0, 4, 8, 16])), requests=draw(st.sampled_from([None, 4, 8, 16])),
                     at=draw(st.integers(0, 3)), risk=draw(st.sampled_from([None, None, -3600, -3599])))
    line = [one(f"j{i}") for i in range(draw(st.integers(1, 6)))]
    changed = draw(st.sampled_from(line))
    arbitrary = replace(one(changed.name), created=changed.created)
    likely = [replace(changed, ended=True), replace(changed, reserved={"cpu": 4000}),
              replace(changed, queue="q", requests={"cpu": 4000}),
              replace(changed, started=True, reserved={"cpu": 4000}), replace(changed, at_risk=None),
              replace(changed, at_risk=T0 - timedelta(seconds=3599))]
    after = draw(st.sampled_from([None, arbitrary, *likely]))  # what statuses say next, and anything at all
    return line, changed, after


@settings(max_examples=3000, deadline=None)
@given(lines(), st.sampled_from([12, 16, 24]))
def test_whoever_a_change_lets_start_is_woken_by_it(drawn, capacity: int) -> None:
    line, before, after = drawn
    rest = [e for e in line if e.name != before.name]
    line_after = rest + ([after] if after is not None else [])
    rooms = freed(before, after)
    woken = {key for room in rooms for key in to_wake(room, line_after)}

    for waiter in (e for e in rest if waiting(e) and e.requests is not None):
        def starts(jobflows: list[InLine]) -> bool:
            view = QueueView(name=waiter.queue, capacity={"cpu": capacity * 1000}, jobflows=tuple(jobflows),
                             at_risk=waiter.at_risk)
            return admit(view, namespace=waiter.namespace, name=waiter.name, created=waiter.created,
                         needs=waiter.requests).start
        if not starts(line) and starts(line_after):
            assert (waiter.namespace, waiter.name) in woken, (before, after, rooms)
