"""When a flow's dependencies let it start, and what it waits for until then.

A flow with no ``dependsOn``, or with no targets, is ready at once. Otherwise its ``dependsOn.outcome`` says what
it waits for, over the outcomes of its targets (:class:`~jobflow_core.vocabulary.phase.FlowOutcome`: Succeeded, Failed,
Skipped, or none yet):

=====================  ==========================================  ==========================================
``outcome``            ready when                                  skipped when (:mod:`jobflow_core.dag.skips`)
=====================  ==========================================  ==========================================
Succeeded (default)    every target Succeeded (its vcjob           a target Failed or was Skipped
                       Completed, as upstream)
Failed                 a target Failed (Failed, Terminated,        every target ended and none Failed
                       Aborted): an error handler
Finished               every target ended, whatever the outcome    never
=====================  ==========================================  ==========================================

A flow with ``dependsOn.probe`` is ready when its probe passes against every target instead
(:mod:`jobflow_core.dag.probes`); its targets need not be Completed. It is skipped when a target ends (or was skipped)
before its probe passed: a server that finished before it ever answered will not answer any more.

This module answers the "ready when" column: whether the flow may start now, and if not, what it waits for. The
"skipped when" column, whether it never will, is one table of its own (:data:`jobflow_core.dag.skips.SKIP_RULES`),
consulted first; for a flow it skips, the answer here is only what the flow was waiting for. The answer is a
:class:`Readiness` value rather than a bare bool, so that the status can say what a flow waits for, whether it is a
probe that should be looked at again, what can never pass as written, and why a flow will never run.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jobflow_core.dag.probes import CheckResult, NetworkCheck, evaluate
from jobflow_core.models import AwaitedOutcome, Flow, VcJob
from jobflow_core.vocabulary.kube_events import Reason
from jobflow_core.vocabulary.phase import FlowOutcome


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
    """Why the flow will never run (:mod:`jobflow_core.dag.skips`); None while it still may."""
    skip_reason: Reason | None = None
    """The reason word of the skip rule that holds: its dependencies' doing, or its ``when`` condition's."""
    condition_error: str | None = None
    """Its dependencies are met but its ``when`` condition cannot be evaluated: what is wrong."""


OutcomeOf = Callable[[str], FlowOutcome | None]


def _quoted(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def describe_ended(outcomes: Mapping[str, FlowOutcome | None]) -> str:
    """Targets that ended, and how, in words: ``"a" Failed; "b" was Skipped``."""
    return "; ".join(f'"{target}" was Skipped' if outcome is FlowOutcome.SKIPPED else f'"{target}" {outcome}'
                     for target, outcome in outcomes.items())


def check_dependencies(flow: Flow, *, outcome_of: OutcomeOf) -> Readiness:
    """Whether ``flow``'s targets let it start now, by its ``dependsOn.outcome`` (the "ready when" column of the
    module docstring), and if not, what it waits for."""
    targets = tuple(dict.fromkeys(flow.depends_on.targets or ())) if flow.depends_on else ()
    if not targets:
        return Readiness(ready=True, waiting_for=(), message="no dependencies")
    outcomes = {target: outcome_of(target) for target in targets}
    undecided = tuple(target for target, outcome in outcomes.items() if outcome is None)
    awaited = flow.depends_on.outcome or AwaitedOutcome.SUCCEEDED
    if awaited is AwaitedOutcome.FAILED:
        failed = [target for target, outcome in outcomes.items() if outcome is FlowOutcome.FAILED]
        if failed:
            return Readiness(ready=True, waiting_for=(), message=f"{_quoted(failed)} Failed")
        return Readiness(ready=False, waiting_for=undecided,
                         message=f"waiting for {_quoted(undecided)} to end (this flow runs if one of them fails)"
                         if undecided else "waiting for a target to fail")
    if awaited is AwaitedOutcome.FINISHED:
        if undecided:
            return Readiness(ready=False, waiting_for=undecided, message=f"waiting for {_quoted(undecided)} to end")
        return Readiness(ready=True, waiting_for=(), message="every target has ended")
    pending = tuple(target for target, outcome in outcomes.items() if outcome is not FlowOutcome.SUCCEEDED)
    if pending:
        return Readiness(ready=False, waiting_for=pending, message=f"waiting for {_quoted(pending)} to be Completed")
    return Readiness(ready=True, waiting_for=(), message="all targets are Completed")


def check_probe(flow: Flow, *, live_job: Callable[[str], VcJob | None],
                results: Mapping[NetworkCheck, CheckResult]) -> Readiness:
    """Whether ``flow``'s probe passes against each of its targets; ``live_job`` gives a flow's live vcjob."""
    targets = tuple(dict.fromkeys(flow.depends_on.targets or ())) if flow.depends_on else ()
    verdicts = {target: evaluate(flow, targets={target: live_job(target)}, results=results) for target in targets}
    waiting_for = tuple(target for target, verdict in verdicts.items() if not verdict.passed)
    errors = tuple(error for verdict in verdicts.values() for error in verdict.errors)
    if not waiting_for:
        return Readiness(ready=True, waiting_for=(), message="every probe passed")
    details = "; ".join(wait for verdict in verdicts.values() for wait in verdict.waiting)
    return Readiness(ready=False, waiting_for=waiting_for, message=f"waiting for probes: {details}" if details
                     else "a probe cannot pass as written", probing=not errors, errors=errors)
