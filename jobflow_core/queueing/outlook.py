"""When a JobFlow waiting in its queue's line is expected to start: the line played forward.

A deadline is at risk long before the clock says so when the JobFlow stands behind others: its own forecast
(:mod:`jobflow_core.insight.eta`) starts it now. This plays the line forward as
:func:`~jobflow_core.queueing.line.admit` would decide it, from what the JobFlows' statuses say:

* each started JobFlow holds what it reserves until its expected completion (``status.expectedCompletion``, never
  before now);
* each JobFlow ahead starts, in line order, at the first moment the queue holds what it needs next to what is held
  then (head of line: none starts before the one ahead of it), and holds that until it is expected to end
  (``status.queue.expectedSeconds`` after its start);
* the JobFlow asking starts the same way after them.

A JobFlow holds its first stages' needs for its whole run: right for chains of one width, an over-estimate for a
JobFlow that narrows, an under-estimate for one that widens (its later stages come with the started JobFlows'
priority anyway). A JobFlow whose expected time is not known (not reconciled yet, a JobTemplate that never ran)
counts as running as long as the one asking; when that is not known either, neither is the answer (None). Pure;
the answer depends on ``now``, so it is read for a decision, never written as it is.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from jobflow_core.queueing.line import InLine, QueueView
from jobflow_core.vocabulary import resources
from jobflow_core.vocabulary.resources import Resources


@dataclass(frozen=True)
class Hold:
    until: datetime
    amount: Resources


def ahead_of(view: QueueView, asking: InLine, *, steered: bool = False) -> list[InLine]:
    """The JobFlows of ``view``'s line that have not started and stand ahead of ``asking``, in line order: by its own
    place were it not at risk (what its deadline is judged by), or with ``steered`` where it stands now."""
    me = asking.key if steered else asking.plain_key
    return sorted((j for j in view.jobflows if (j.namespace, j.name) != (asking.namespace, asking.name)
                   and not j.ended and not j.started and j.queue in (view.name, None) and j.key < me),
                  key=lambda j: j.key)


def expected_start(view: QueueView, asking: InLine, *, needs: Resources, seconds: int | None, now: datetime,
                   steered: bool = False) -> datetime | None:
    """When ``asking`` (not started), whose first stages need ``needs``, is expected to start in ``view``'s line
    (see the module docstring); None when that cannot be known. ``seconds``: its own expected run, for the JobFlows
    counted as needing as much as it (not reconciled yet)."""
    if view.capacity is None:
        return now
    holds = []
    for entry in view.jobflows:
        if entry.started and not entry.ended and entry.queue == view.name and entry.reserved \
                and (entry.namespace, entry.name) != (asking.namespace, asking.name):
            if entry.expected_end is None and seconds is None:
                return None
            end = entry.expected_end or now + timedelta(seconds=seconds or 0)
            holds.append(Hold(max(end, now), resources.at_most(entry.reserved, view.capacity)))
    at = now
    for entry in ahead_of(view, asking, steered=steered):
        need = resources.at_most(entry.requests if entry.requests is not None else needs, view.capacity)
        run = entry.seconds if entry.seconds is not None else seconds
        if run is None:
            return None
        at = first_fit(at, holds, need, view.capacity)
        holds.append(Hold(at + timedelta(seconds=run), need))
    return first_fit(at, holds, resources.at_most(needs, view.capacity), view.capacity)


def first_fit(at: datetime, holds: Sequence[Hold], need: Resources, capacity: Resources) -> datetime:
    """The first moment from ``at`` when ``capacity`` holds ``need`` next to the holds not ended by then (once every
    hold ended it does: ``need`` is at most the capacity)."""
    for moment in [at, *sorted({h.until for h in holds if h.until > at})]:
        held = resources.add(*(h.amount for h in holds if h.until > moment))
        if not resources.exceeding(resources.add(held, need), capacity):
            return moment
    return at  # unreachable when need <= capacity; a need beyond it is the start table's Unschedulable
