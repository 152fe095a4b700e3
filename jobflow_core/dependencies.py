"""When a flow's dependencies let it start, and when they never will.

A flow with no ``dependsOn``, or with no targets, is ready at once. Otherwise its ``dependsOn.outcome`` says what
it waits for, over the outcomes of its targets (:class:`~jobflow_core.phase.FlowOutcome`: Succeeded, Failed,
Skipped, or none yet):

=====================  ==========================================  ==========================================
``outcome``            ready when                                  skipped when
=====================  ==========================================  ==========================================
Succeeded (default)    every target Succeeded (its vcjob           a target Failed or was Skipped
                       Completed, as upstream)
Failed                 a target Failed (Failed, Terminated,        every target ended and none Failed
                       Aborted): an error handler
Finished               every target ended, whatever the outcome    never
=====================  ==========================================  ==========================================

A flow with ``dependsOn.probe`` is ready when its probe passes against every target instead
(:mod:`jobflow_core.probes`); its targets need not be Completed. It is skipped when a target ends (or was skipped)
before its probe passed: a server that finished before it ever answered will not answer any more.

The answer is a :class:`Readiness` value rather than a bare bool, so that the status can say what a flow waits
for, whether it is a probe that should be looked at again, what can never pass as written, and why a flow will
never run.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jobflow_core.models import AwaitedOutcome, Flow, VcJob
from jobflow_core.phase import FlowOutcome
from jobflow_core.probes import CheckResult, NetworkCheck, evaluate


@dataclass(frozen=True)
class Readiness:
    ready: bool
    waiting_for: tuple[str, ...]
    """Target flows that are not Completed yet (or whose probe has not passed), in ``dependsOn.targets`` order."""
    message: str
    probing: bool = False
    """The flow waits for a probe, which should be looked at again later."""
    errors: tuple[str, ...] = ()
    """Why the flow's probe can never pass as written (e.g. a task name its target does not have)."""
    skip: str | None = None
    """Why the flow will never run (its dependencies can no longer be met); None while it still may."""
    skip_by_condition: bool = False
    """The skip is its ``when`` condition's doing, not its dependencies'."""
    condition_error: str | None = None
    """Its dependencies are met but its ``when`` condition cannot be evaluated: what is wrong."""


OutcomeOf = Callable[[str], FlowOutcome | None]


def _quoted(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _ended(target: str, outcome: FlowOutcome) -> str:
    return f'"{target}" was Skipped' if outcome is FlowOutcome.SKIPPED else f'"{target}" {outcome}'


def check_dependencies(flow: Flow, *, outcome_of: OutcomeOf) -> Readiness:
    """Whether ``flow``'s targets let it start, by its ``dependsOn.outcome`` (the table of the module docstring)."""
    targets = tuple(dict.fromkeys(flow.depends_on.targets or ())) if flow.depends_on else ()
    if not targets:
        return Readiness(ready=True, waiting_for=(), message="no dependencies")
    outcomes = {target: outcome_of(target) for target in targets}
    undecided = tuple(target for target, outcome in outcomes.items() if outcome is None)
    awaited = flow.depends_on.outcome or AwaitedOutcome.SUCCEEDED
    if awaited is AwaitedOutcome.FAILED:
        if FlowOutcome.FAILED in outcomes.values():
            failed = [target for target, outcome in outcomes.items() if outcome is FlowOutcome.FAILED]
            return Readiness(ready=True, waiting_for=(), message=f"{_quoted(failed)} Failed")
        if undecided:
            return Readiness(ready=False, waiting_for=undecided,
                             message=f"waiting for {_quoted(undecided)} to end (this flow runs if one of them fails)")
        ended = "; ".join(_ended(target, outcome) for target, outcome in outcomes.items())
        return Readiness(ready=False, waiting_for=(), message=f"skipped: no target failed ({ended})",
                         skip=f"no target failed ({ended}), and this flow runs only if one does")
    if awaited is AwaitedOutcome.FINISHED:
        if undecided:
            return Readiness(ready=False, waiting_for=undecided, message=f"waiting for {_quoted(undecided)} to end")
        return Readiness(ready=True, waiting_for=(), message="every target has ended")
    lost = [(target, outcome) for target, outcome in outcomes.items()
            if outcome in (FlowOutcome.FAILED, FlowOutcome.SKIPPED)]
    if lost:
        ended = "; ".join(_ended(target, outcome) for target, outcome in lost)
        return Readiness(ready=False, waiting_for=(), message=f"skipped: {ended}",
                         skip=f"{ended}, and this flow runs only if its targets succeed")
    if undecided:
        return Readiness(ready=False, waiting_for=undecided, message=f"waiting for {_quoted(undecided)} to be Completed")
    return Readiness(ready=True, waiting_for=(), message="all targets are Completed")


def check_probe(flow: Flow, *, live_job: Callable[[str], VcJob | None], outcome_of: OutcomeOf,
                results: Mapping[NetworkCheck, CheckResult]) -> Readiness:
    """Whether ``flow``'s probe passes against each of its targets; ``live_job`` gives a flow's live vcjob."""
    targets = tuple(dict.fromkeys(flow.depends_on.targets or ())) if flow.depends_on else ()
    verdicts = {target: evaluate(flow, targets={target: live_job(target)}, results=results) for target in targets}
    waiting_for = tuple(target for target, verdict in verdicts.items() if not verdict.passed)
    errors = tuple(error for verdict in verdicts.values() for error in verdict.errors)
    if not waiting_for:
        return Readiness(ready=True, waiting_for=(), message="every probe passed")
    lost = [(target, outcome) for target in waiting_for if (outcome := outcome_of(target)) is not None]
    if lost and not errors:
        ended = "; ".join(_ended(target, outcome) for target, outcome in lost)
        return Readiness(ready=False, waiting_for=waiting_for, message=f"skipped: {ended} before its probe passed",
                         skip=f"{ended} before its probe passed, so the probe never will")
    details = "; ".join(wait for verdict in verdicts.values() for wait in verdict.waiting)
    return Readiness(ready=False, waiting_for=waiting_for, message=f"waiting for probes: {details}" if details
                     else "a probe cannot pass as written", probing=not errors, errors=errors)
