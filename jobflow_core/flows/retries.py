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

Upstream's proposed shape (volcano-sh/apis PR #191) is accepted too: ``spec.retryPolicy`` is the default of every
flow, ``flows[].retryPolicy`` a flow's own, and ``flows[].retry`` wins over both (:func:`effective_retry`). It reads
as ``retry``:

===========================================  ====================================================================
``maxRetries: N``                            ``limit: N`` (unset or 0: no retry)
``policy: OnFailure`` (the default)          ``retryOn``: Failed, Terminated, Aborted
``policy: Always``                           ``retryOn``: those and Completed (a success runs again too)
``policy: Never``                            no retry
``backoff.baseDelay`` (default ``30s``)      ``delaySeconds`` (a ``metav1.Duration``, rounded up to whole seconds)
``backoff.maxDelay`` (default ``5m``)        ``maxDelaySeconds``
``backoff.type: Exponential`` (default)      ``factor: 2``; ``Constant``: ``factor: 1``
===========================================  ====================================================================

A duration that is not a Go duration (``1d``, ``5min``) is an admission error (:func:`policy_errors`).
"""

import math
from datetime import datetime, timedelta
from typing import Final

from jobflow_core.models import (Backoff, BackoffType, Flow, JobFlow, Retry, RetryPolicy, RetryStrategy,
                                 VcJobPhase)
from jobflow_core.vocabulary.durations import parse_go_duration
from jobflow_core.vocabulary.spec_errors import SpecError

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


POLICY_BASE_DELAY: Final = "30s"
POLICY_MAX_DELAY: Final = "5m"
MAX_RETRIES: Final = 100
"""The most retries a flow may have (``retry.limit``'s CRD bound)."""


def effective_retry(flow: Flow, *, default: RetryPolicy | None) -> Retry | None:
    """A flow's retries: its own ``retry``, else its ``retryPolicy``, else the JobFlow's ``retryPolicy``
    (``default``), read as the module docstring's table says."""
    if flow.retry is not None:
        return flow.retry
    policy = flow.retry_policy or default
    if policy is None or policy.policy is RetryStrategy.NEVER or not policy.max_retries:
        return None
    backoff = policy.backoff
    retry_on = [*DEFAULT_RETRY_ON, VcJobPhase.COMPLETED] if policy.policy is RetryStrategy.ALWAYS else None
    return Retry(limit=min(policy.max_retries, MAX_RETRIES), retryOn=retry_on, backoff=Backoff(
        delaySeconds=_seconds(backoff.base_delay if backoff else None, POLICY_BASE_DELAY),
        factor=1.0 if backoff is not None and backoff.type is BackoffType.CONSTANT else 2.0,
        maxDelaySeconds=_seconds(backoff.max_delay if backoff else None, POLICY_MAX_DELAY)))


def _seconds(text: str | None, default: str) -> int:
    seconds = parse_go_duration(text) if text is not None else None
    return math.ceil(seconds if seconds is not None else parse_go_duration(default) or 0)


def with_retry_policies(jobflow: JobFlow) -> JobFlow:
    """``jobflow`` with each flow's ``retryPolicy`` (or the JobFlow's) read into its ``retry``, so everything
    after reads one field; the same object when there is no ``retryPolicy`` anywhere (a JobFlow written for
    upstream, or ours)."""
    flows = jobflow.spec.flows or []
    default = jobflow.spec.retry_policy
    if default is None and all(flow.retry_policy is None for flow in flows):
        return jobflow
    # An approval gate has no vcjob to run again (a retry on one is refused by validation).
    flows = [flow.model_copy(update={"retry": effective_retry(flow, default=default)}) if flow.approval is None
             else flow for flow in flows]
    return jobflow.model_copy(update={"spec": jobflow.spec.model_copy(update={"flows": flows})})


def policy_errors(jobflow: JobFlow) -> list[SpecError]:
    """``retryPolicy`` durations that are not Go durations, and more retries than a flow may have."""
    found = []
    policies = [("spec.retryPolicy", jobflow.spec.retry_policy),
                *((f'flow "{flow.name}": retryPolicy', flow.retry_policy) for flow in jobflow.spec.flows or ())]
    for where, policy in policies:
        if policy is None:
            continue
        if policy.max_retries is not None and not 0 <= policy.max_retries <= MAX_RETRIES:
            found.append(SpecError(code="InvalidRetryPolicy", message=f"{where}.maxRetries {policy.max_retries} is "
                                   f"not from 0 to {MAX_RETRIES}", hint="lower it"))
        for name, text in (("baseDelay", policy.backoff.base_delay if policy.backoff else None),
                           ("maxDelay", policy.backoff.max_delay if policy.backoff else None)):
            if text is not None and parse_go_duration(text) is None:
                found.append(SpecError(code="InvalidRetryPolicy", message=f"{where}.backoff.{name} {text!r} is not a "
                                       "duration", hint="write it as Kubernetes does: 30s, 5m, 1h30m (no d or min)"))
    return found
