"""Who to wake when room frees in a Volcano queue: the JobFlows waiting in its line, from the change that freed it.

A JobFlow waiting for room (:mod:`jobflow_core.queueing.line`) can start only when the line ahead of it changes:
a started JobFlow ends, goes or holds less (its reservation shrinks as stages end), or one ahead of it leaves the
line without starting (deleted, suspended, ended, blocked). Each of those is a change of a JobFlow the engine
watches, so the change itself wakes the waiting ones (:data:`WAKE_RULES`, first rule that holds wins; two of them
for deadlines, :mod:`jobflow_core.queueing.deadline`): our event
source from its watch cache (``apiclient/watch_cache.py``), the handler after a status write that ended a JobFlow
when no event source of ours is there to do it (Knative's ApiServerSource: ``handlers/dispatch.py``).

What no watched change tells (a Queue's ``capability`` edited, nodes added) is left to the slow periodic look,
:data:`~jobflow_core.queueing.line.RECHECK_SECONDS`.

When room frees, every waiting JobFlow of the queue is woken, in line order, not only the first: the event source does
not know the queue's capacity; a woken JobFlow that still has no room is one cheap reconcile that writes nothing.
When a JobFlow only stops counting as one ahead (it left the line, or its first reconcile says it needs less than it
was counted for), only those behind it are woken. The handler wakes only for room freed (an end, a shrink): knowing
who waits costs it a LIST of the JobFlows, too dear for every JobFlow's first reconcile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from jobflow_core.queueing.line import InLine
from jobflow_core.vocabulary.resources import Resources


def waiting(entry: InLine | None) -> bool:
    """Whether ``entry`` stands in a queue's line waiting for room: reconciled into a queue, not ended, and not
    started or, started, its next stages held (``Held``)."""
    return entry is not None and bool(entry.queue) and (not entry.started or entry.held) and not entry.ended


ELSEWHERE: Final = "\0every other queue"
"""Stands for the queues neither state of the changed JobFlow names: only a JobFlow never reconciled (``queue``
None) counts in their lines."""


def held(entry: InLine | None, queue: str) -> Resources:
    """What ``entry`` holds in ``queue`` for every JobFlow waiting there (:func:`~jobflow_core.queueing.line.admit`
    counts a started JobFlow's reservation)."""
    if entry is None or entry.ended or not entry.started or entry.queue != queue:
        return {}
    return entry.reserved


def counted(entry: InLine | None, queue: str) -> Resources | None:
    """What a JobFlow waiting in ``queue`` *behind* ``entry`` counts it for: what it holds, or, not started, what it
    needs (None: not known yet, counted as much as the one asking)."""
    if entry is None or entry.ended:
        return {}
    if entry.started:
        return held(entry, queue)
    return entry.requests if entry.queue in (queue, None) else {}


def _less(before: Resources | None, after: Resources | None) -> bool:
    """Whether ``after`` is less than ``before`` in some resource; an amount not known may be anything."""
    if before is not None and not any(before.values()):
        return False  # nothing is less than nothing
    if before is None or after is None:
        return before is not after
    return any(after.get(name, 0) < amount for name, amount in before.items())


@dataclass(frozen=True)
class WakeRule:
    when: str
    holds: Callable[[InLine | None, InLine | None, str], bool]
    """Given the JobFlow before the change and after it (None: absent) and a queue."""
    behind_only: bool
    """Only the JobFlows behind it in line gain; else every JobFlow waiting in that queue."""


def _stands_later(before: InLine | None, after: InLine | None, queue: str) -> bool:
    """Not started, it stands later in line than it did (it is no longer at risk): those it passes back count it
    no more."""
    return before is not None and after is not None and not before.started and not after.started \
        and not after.ended and before.queue in (queue, None) and after.key > before.key


def _left_risk(before: InLine | None, after: InLine | None, queue: str) -> bool:
    """Started, it is no longer at risk: the at-risk JobFlows standing ahead of it stop counting what it holds
    (:func:`~jobflow_core.queueing.line.holds_for`)."""
    return before is not None and before.started and before.at_risk is not None and bool(held(before, queue)) \
        and (after is None or after.at_risk is None)


WAKE_RULES: Final = (
    WakeRule("what it holds in the queue shrank (it ended, went, or a stage ended and the next needs less): room for "
             "every JobFlow waiting there", lambda before, after, queue: _less(held(before, queue), held(after, queue)),
             False),
    WakeRule("what those behind it count it for shrank (it left the line, was reconciled for the first time, needs "
             "less, or started holding less than it asked)",
             lambda before, after, queue: _less(counted(before, queue), counted(after, queue)), True),
    WakeRule("it stands later in line than before (no longer at risk): room for those it no longer stands ahead of",
             _stands_later, True),
    WakeRule("a started JobFlow is no longer at risk: room for the at-risk JobFlows ahead of it, which stop counting "
             "what it holds", _left_risk, False),
)


@dataclass(frozen=True)
class Freed:
    """Room a change left in a queue: for every JobFlow waiting there, or only for those behind ``behind``."""

    queue: str | None
    """None: every queue (a JobFlow never reconciled counts as one ahead in the line of each)."""
    behind: InLine | None = None


def freed(before: InLine | None, after: InLine | None) -> list[Freed]:
    """The room a JobFlow's change (``before`` -> ``after``; None: absent) left, per queue: the first rule of
    :data:`WAKE_RULES` that holds for it."""
    changed = before or after
    if changed is None:
        return []
    queues = dict.fromkeys(q for q in (getattr(before, "queue", None), getattr(after, "queue", None), ELSEWHERE) if q)
    rooms = []
    for queue in queues:
        rule = next((rule for rule in WAKE_RULES if rule.holds(before, after, queue)), None)
        if rule is not None:
            rooms.append(Freed(None if queue == ELSEWHERE else queue, changed if rule.behind_only else None))
    return rooms


def to_wake(room: Freed, line: Iterable[InLine]) -> list[tuple[str, str]]:
    """The JobFlows waiting in the queue ``room`` names (behind ``room.behind`` only, when it says), in line order,
    as (namespace, name)."""
    return [(entry.namespace, entry.name) for entry in sorted(
        (e for e in line if waiting(e) and room.queue in (None, e.queue)
         and (room.behind is None or e.key > room.behind.key)), key=lambda e: e.key)]
