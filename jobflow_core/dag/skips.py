"""Why a flow is Skipped: one ordered table of rules, the first that holds decides.

A flow that still needs a vcjob is *Skipped* when what it waits for can no longer happen: it never gets a vcjob, it
is listed in ``status.skippedFlows`` with the reason word of its row, and it counts as ended. Skipping propagates,
because the flows that wait for a Skipped flow are put to the same table (:mod:`jobflow_core.dag.outcomes` settles the
flows in dependency order). :data:`SKIP_RULES`, read top to bottom, the way
:data:`jobflow_core.planning.starts.START_RULES` decides whether a flow starts:

==========================================================================  ================
when                                                                        reason
==========================================================================  ================
it has no probe, waits for its targets to succeed (the default), and one    DependencyNotMet
Failed or was Skipped
it has no probe, waits for a target to fail, and every target ended         DependencyNotMet
without failing
its probe can pass as written, but a target it has not passed against       DependencyNotMet
ended or was Skipped
its probe can pass as written, but did not pass within its                  DependencyNotMet
``timeoutSeconds`` of its last target's vcjob being created
its dependencies are met and its ``when`` condition is false                ConditionFalse
otherwise: it is not skipped
==========================================================================  ================

A ``Finished`` dependency is never skipped (every end is what it waits for). A probe that can never pass as
written (a task its target does not have) is not a skip but a blocker for the user to fix
(:data:`~jobflow_core.planning.starts.START_RULES`, ``ProbeTaskNotFound``), so the probe rows leave it alone. What a
flow that is not skipped waits for, and whether it is ready, is :mod:`jobflow_core.dag.dependencies`'s to say (with
:mod:`jobflow_core.dag.probes`), and a ``when`` condition that cannot be evaluated yet leaves it waiting or blocked.

A new way for a flow to become Skipped is a new row here, with its reason word in
:mod:`jobflow_core.vocabulary.kube_events` and its example in ``tests/unit/test_skips.py``.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Final

from jobflow_core.dag.dependencies import OutcomeOf, Readiness, check_dependencies, check_probe, describe_ended
from jobflow_core.dag.probes import CheckResult, NetworkCheck
from jobflow_core.flows.deadlines import passed, probe_deadline
from jobflow_core.models import AwaitedOutcome, Flow, VcJob
from jobflow_core.vocabulary.kube_events import Reason
from jobflow_core.vocabulary.phase import FlowOutcome


@dataclass(frozen=True)
class ConditionCheck:
    """A flow's ``when`` condition, evaluated once its dependencies are met."""

    holds: bool | None
    """Its value; None when it cannot be evaluated now (a result not read yet, or an evaluation error)."""
    message: str = ""
    """For a condition that cannot be evaluated: what the flow waits for, or CEL's error."""
    error: str | None = None
    """For a condition that fails to evaluate: what is wrong and what to fix, for the status."""


class SkipFacts:
    """What the rules may ask about one flow that needs a vcjob. Each fact is worked out when a rule first asks: a
    flow that its targets already skip never has its probe deadline or its condition looked at."""

    def __init__(self, flow: Flow, *, outcome_of: OutcomeOf, live_job: Callable[[str], VcJob | None],
                 probe_results: Mapping[NetworkCheck, CheckResult], now: datetime | None,
                 condition: Callable[[], ConditionCheck]) -> None:
        self.flow, self.outcome_of, self.now = flow, outcome_of, now
        self._live_job, self._probe_results, self._condition = live_job, probe_results, condition

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.flow.depends_on.targets or ())) if self.flow.depends_on else ()

    @property
    def probed(self) -> bool:
        return self.flow.depends_on is not None and self.flow.depends_on.probe is not None

    @property
    def awaited(self) -> AwaitedOutcome:
        return (self.flow.depends_on.outcome if self.flow.depends_on else None) or AwaitedOutcome.SUCCEEDED

    @cached_property
    def outcomes(self) -> dict[str, FlowOutcome | None]:
        """Each target's outcome (None: not ended yet), in ``dependsOn.targets`` order."""
        return {target: self.outcome_of(target) for target in self.targets}

    @cached_property
    def readiness(self) -> Readiness:
        """Whether its targets let it start now, and what it waits for (its probe's, for a flow with one)."""
        if self.probed:
            return check_probe(self.flow, live_job=self._live_job, results=self._probe_results)
        return check_dependencies(self.flow, outcome_of=self.outcome_of)

    @cached_property
    def probe_gave_up(self) -> bool:
        """Its probe's ``timeoutSeconds`` ran out (:mod:`jobflow_core.flows.deadlines`)."""
        return passed(probe_deadline(self.flow, [self._live_job(target) for target in self.targets]), self.now)

    @cached_property
    def condition(self) -> ConditionCheck | None:
        """Its ``when`` condition, once its dependencies are met (None: it has none, or they are not met)."""
        return self._condition() if self.flow.when and self.readiness.ready else None


@dataclass(frozen=True)
class SkipRule:
    when: str
    reason: Reason
    holds: Callable[[SkipFacts], str | None]
    """Why the flow will never run (``skippedFlows[].message``) when the rule holds for it, else None."""


def _target_did_not_succeed(facts: SkipFacts) -> str | None:
    if facts.probed or facts.awaited is not AwaitedOutcome.SUCCEEDED:
        return None
    lost = {target: outcome for target, outcome in facts.outcomes.items()
            if outcome in (FlowOutcome.FAILED, FlowOutcome.SKIPPED)}
    return f"{describe_ended(lost)}, and this flow runs only if its targets succeed" if lost else None


def _no_target_failed(facts: SkipFacts) -> str | None:
    if facts.probed or facts.awaited is not AwaitedOutcome.FAILED or not facts.outcomes:
        return None
    if None in facts.outcomes.values() or FlowOutcome.FAILED in facts.outcomes.values():
        return None
    return f"no target failed ({describe_ended(facts.outcomes)}), and this flow runs only if one does"


def _probe_target_ended(facts: SkipFacts) -> str | None:
    if not facts.probed or facts.readiness.errors:
        return None
    lost = {target: outcome for target in facts.readiness.waiting_for
            if (outcome := facts.outcome_of(target)) is not None}
    return f"{describe_ended(lost)} before its probe passed, so the probe never will" if lost else None


def _probe_timed_out(facts: SkipFacts) -> str | None:
    readiness = facts.readiness
    if not facts.probed or readiness.ready or readiness.errors or not facts.probe_gave_up:
        return None
    seconds = facts.flow.depends_on.probe.timeout_seconds  # type: ignore[union-attr]
    return f"its probe did not pass within {seconds}s of its last target's vcjob being created ({readiness.message})"


def _condition_false(facts: SkipFacts) -> str | None:
    condition = facts.condition
    return f"its condition {facts.flow.when!r} is false" if condition and condition.holds is False else None


SKIP_RULES: Final = (
    SkipRule("it has no probe, waits for its targets to succeed, and one Failed or was Skipped",
             Reason.DEPENDENCY_NOT_MET, _target_did_not_succeed),
    SkipRule("it has no probe, waits for a target to fail, and every target ended without failing",
             Reason.DEPENDENCY_NOT_MET, _no_target_failed),
    SkipRule("its probe can pass as written, but a target it has not passed against ended or was Skipped",
             Reason.DEPENDENCY_NOT_MET, _probe_target_ended),
    SkipRule("its probe can pass as written, but did not pass within its timeoutSeconds",
             Reason.DEPENDENCY_NOT_MET, _probe_timed_out),
    SkipRule("its dependencies are met and its when condition is false", Reason.CONDITION_FALSE, _condition_false),
)
"""The table of the module docstring, in order ("otherwise": not skipped)."""


def decide_skip(facts: SkipFacts) -> tuple[SkipRule, str] | None:
    """The first rule of :data:`SKIP_RULES` that holds for the flow, and its message (None: not skipped)."""
    for rule in SKIP_RULES:
        message = rule.holds(facts)
        if message is not None:
            return rule, message
    return None


def settle_readiness(facts: SkipFacts) -> Readiness:
    """The flow's :class:`Readiness`: Skipped by the first rule of :data:`SKIP_RULES` that holds; else what its
    dependencies say, held back while its condition cannot be evaluated."""
    skip = decide_skip(facts)
    if skip is not None:
        rule, message = skip
        # A flow held before its skip counts (a JobFlow that failed fast) still names, in waitingFlows, the targets
        # its probe had not passed against.
        waited = facts.readiness.waiting_for if facts.probed else ()
        return Readiness(ready=False, waiting_for=waited, message=f"skipped: {message}", skip=message,
                         skip_reason=rule.reason)
    condition = facts.condition
    if condition is not None and condition.holds is None:
        return Readiness(ready=False, waiting_for=facts.readiness.waiting_for, message=condition.message,
                         condition_error=condition.error)
    return facts.readiness
