"""``flows[].retry``: when a flow's vcjob is run again, how long to wait first, and how often to look.

A flow with ``retry: {limit: L}`` may run up to ``L + 1`` attempts. When attempt ``n`` ends in one of ``retryOn``
(default: Failed, Terminated and Aborted, every way a vcjob fails) and ``n <= L``, the flow has not ended: attempt
``n + 1`` starts once the backoff after attempt ``n``'s end has passed:

    delay(n) = min(delaySeconds * factor ** (n - 1), maxDelaySeconds)

(defaults 10 s, 2, 3600 s). Its dependents see only the last attempt's outcome. Waiting out a backoff uses the
same wake-up as a probe: the status says until when (``waitingFlows[].message``) and asks to be looked at again
every :func:`recheck_seconds` (``waitingFlows[].recheckSeconds``), which the event source, or the periodic resync,
honours. No handler sleeps, nothing polls in a loop. Times in the status have one-second precision, so an attempt
starts at least ``delay(n)`` after the recorded end of the one before.
"""

import math
from datetime import datetime, timedelta
from typing import Final

from jobflow_core.models import Flow, VcJobPhase

DEFAULT_DELAY_SECONDS: Final = 10
DEFAULT_FACTOR: Final = 2.0
DEFAULT_MAX_DELAY_SECONDS: Final = 3600
DEFAULT_RETRY_ON: Final = (VcJobPhase.FAILED, VcJobPhase.TERMINATED, VcJobPhase.ABORTED)


def max_attempts(flow: Flow) -> int:
    """How many attempts the flow may run: 1, plus ``retry.limit``."""
    return 1 + (flow.retry.limit if flow.retry else 0)


def retries(flow: Flow, *, attempt: int, phase: VcJobPhase | None) -> bool:
    """Whether attempt ``attempt``, ended in ``phase``, is followed by another."""
    if flow.retry is None or attempt >= max_attempts(flow):
        return False
    return phase in (flow.retry.retry_on or DEFAULT_RETRY_ON)


def delay_seconds(flow: Flow, *, after: int) -> int:
    """The backoff before the attempt that follows attempt ``after`` (whole seconds)."""
    backoff = flow.retry.backoff if flow.retry else None
    delay = DEFAULT_DELAY_SECONDS if backoff is None or backoff.delay_seconds is None else backoff.delay_seconds
    factor = DEFAULT_FACTOR if backoff is None or backoff.factor is None else backoff.factor
    cap = DEFAULT_MAX_DELAY_SECONDS if backoff is None or backoff.max_delay_seconds is None \
        else backoff.max_delay_seconds
    return math.ceil(min(delay * factor ** (after - 1), cap))


def due(flow: Flow, *, after: int, ended: datetime | None) -> datetime | None:
    """When the attempt after attempt ``after`` may start (None: at once, as its end time is not known)."""
    return None if ended is None else ended + timedelta(seconds=delay_seconds(flow, after=after))


def recheck_seconds(flow: Flow, *, after: int) -> int:
    """How often to look again while the backoff after attempt ``after`` runs: a third of it, at least 1 s, so an
    attempt starts at most a third of its backoff late."""
    return max(1, math.ceil(delay_seconds(flow, after=after) / 3))
