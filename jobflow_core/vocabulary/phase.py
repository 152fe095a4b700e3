"""The phase of a JobFlow, decided in one place from two tables you can read top to bottom.

Upstream decides the phase in three state files that drifted apart, and every drift was a user-visible bug
(issues #4134, #4442, #5672: a Failed or Terminated vcjob that left the JobFlow Running or Pending forever).
Here the phase is a pure function of what is observed now, so it cannot drift and it cannot get stuck.

**Step 1: each flow's effective job phase, and its category.** A flow's effective job phase is the phase of its
live vcjob; if the vcjob is gone, the phase recorded in the previous status (a Completed vcjob that a user or
``ttlSecondsAfterFinished`` deleted still counts as Completed); if there never was one, ``None``.
:data:`JOB_PHASE_CATEGORY` sorts every vcjob phase into a category:

======================================================  ==========
effective job phase                                     category
======================================================  ==========
``None`` (no vcjob yet)                                 waiting
``""`` (not seen by Volcano yet), Pending               pending
Running, Restarting, Completing, Aborting, Terminating  active
Completed                                               done
Failed, Terminated, Aborted                             failed
======================================================  ==========

Only Completed satisfies a default dependency. Done and failed phases are *final*: Volcano has finished with the
vcjob, so a final vcjob that disappears is not created again. (A user can still resume an Aborted vcjob; its
phase is then read again like any other.)

A flow that has no vcjob and never will, because what it waits for can no longer happen, is *skipped*
(:mod:`jobflow_core.dag.outcomes`). A flow's **outcome** is Succeeded (done), Failed (failed) or Skipped; every other
flow is undecided. A failure is *handled* when some flow waits for that flow to fail or to finish
(``dependsOn.outcome: Failed`` or ``Finished``); upstream's JobFlows have no such flows, so every failure in them
is unhandled.

**Step 2: the JobFlow phase.** :data:`FLOW_PHASE_RULES`, the first rule that holds wins:

====================================================================  ===========
when                                                                  phase
====================================================================  ===========
the JobFlow is being deleted                                          Terminating
the status already says Succeed (and no rerun was just accepted)      Succeed
the status already says Failed (and no rerun was just accepted)       Failed
the spec is invalid                                                   Failed
``activeDeadlineSeconds`` passed before every flow ended              Failed
stopped or terminated (``spec.shutdown``) before every flow ended     Failed
a failure nothing handles, and the JobFlow fails fast (the default)   Failed
a failure nothing handles, and every flow has ended                   Failed
the JobFlow is suspended (``spec.suspend``) and not every flow ended  Suspended
every flow has ended: done, skipped, or failed and handled            Succeed
any flow is active or has ended                                       Running
otherwise                                                             Pending
====================================================================  ===========

"Every flow" includes ``finally`` flows, so with ``failurePolicy: KeepGoing`` the JobFlow ends only once they have
run; with fail fast it is Failed at once, as upstream, and its ``finally`` flows still run. Pending goes straight to
Succeed when every job completed between two observations, and an empty ``flows`` list succeeds at once.

**A phase never goes back.** The only memory the table has is the phase the status already records, and only an
ended one: a JobFlow that is Succeed or Failed stays so (its flows may still be recorded as they end, its ``finally``
flows still run) until a rerun (``kubectl jobflow retry``, :mod:`jobflow_core.dag.reruns`) is accepted, which is the
one explicit way back. So an observation that disagrees with the record (a vcjob list read before a status write
that another reconcile made, a spec edited after the end) can never turn an ended JobFlow back into a running one;
:func:`regresses` lets the status writer refuse such a write all the same, as a bug.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from jobflow_core.models import JobFlowPhase, VcJobPhase


class JobCategory(StrEnum):
    WAITING = "waiting"
    PENDING = "pending"
    ACTIVE = "active"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    """Not a vcjob phase: a flow without a vcjob that will never get one (see the module docstring)."""


ENDED: Final = frozenset({JobCategory.DONE, JobCategory.FAILED, JobCategory.SKIPPED})
"""The categories of a flow that has nothing more to do."""


class FlowOutcome(StrEnum):
    """How a flow ended, as its dependents see it; a flow that has not ended has none (None)."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SKIPPED = "Skipped"


JOB_PHASE_CATEGORY: Final = MappingProxyType(
    {
        None: JobCategory.WAITING,
        VcJobPhase.NEW: JobCategory.PENDING,
        VcJobPhase.PENDING: JobCategory.PENDING,
        VcJobPhase.RUNNING: JobCategory.ACTIVE,
        VcJobPhase.RESTARTING: JobCategory.ACTIVE,
        VcJobPhase.COMPLETING: JobCategory.ACTIVE,
        VcJobPhase.ABORTING: JobCategory.ACTIVE,
        VcJobPhase.TERMINATING: JobCategory.ACTIVE,
        VcJobPhase.COMPLETED: JobCategory.DONE,
        VcJobPhase.FAILED: JobCategory.FAILED,
        VcJobPhase.TERMINATED: JobCategory.FAILED,
        VcJobPhase.ABORTED: JobCategory.FAILED,
    }
)
"""Step 1 of the module docstring: the category of every effective job phase."""


def category_of(phase: VcJobPhase | None) -> JobCategory:
    return JOB_PHASE_CATEGORY[phase]


TERMINAL_JOB_PHASES: Final = frozenset({VcJobPhase.COMPLETED, VcJobPhase.FAILED, VcJobPhase.TERMINATED})
"""vcjob phases Volcano never leaves (an Aborted vcjob, final too, can still be resumed by a user)."""


def outdated_by_record(live: VcJobPhase | None, recorded: VcJobPhase | None) -> bool:
    """Whether a listed vcjob's phase is older than the one the status records: the record says it ended for good
    (:data:`TERMINAL_JOB_PHASES`) and the listed copy has not ended. Volcano never moves a vcjob out of a terminal
    phase, so the list was read before the vcjob ended (it predates the status write that recorded the end): the
    record is the newer truth, and the vcjob counts as ended."""
    return recorded in TERMINAL_JOB_PHASES and not is_final(live)


def is_final(phase: VcJobPhase | None) -> bool:
    """Whether Volcano is done with a vcjob in this phase (Completed, Failed, Terminated, Aborted)."""
    return category_of(phase) in (JobCategory.DONE, JobCategory.FAILED)


def outcome_of_phase(phase: VcJobPhase | None) -> FlowOutcome | None:
    """The outcome of a flow whose vcjob is (or was last seen) in ``phase``: Completed succeeded, Failed,
    Terminated and Aborted failed, anything else has not ended."""
    return {JobCategory.DONE: FlowOutcome.SUCCEEDED, JobCategory.FAILED: FlowOutcome.FAILED}.get(category_of(phase))


@dataclass(frozen=True)
class PhaseFacts:
    """What the JobFlow phase depends on, and nothing else."""

    deleting: bool
    spec_valid: bool
    deadline_exceeded: bool
    categories: frozenset[JobCategory]
    """The categories present among the flows (a set: only which ones occur matters)."""
    unhandled_failure: bool
    """Some flow failed and no flow waits for it to fail or finish."""
    fail_fast: bool
    suspended: bool
    shut_down: bool = False
    """``spec.shutdown`` is set: the JobFlow was asked to stop or terminate."""
    ended: JobFlowPhase | None = None
    """The phase the status records if it is an ended one (Succeed or Failed) and no rerun was just accepted."""


@dataclass(frozen=True)
class PhaseRule:
    when: str
    phase: JobFlowPhase
    holds: Callable[[PhaseFacts], bool]


FLOW_PHASE_RULES: Final = (
    PhaseRule("the JobFlow is being deleted", JobFlowPhase.TERMINATING, lambda f: f.deleting),
    PhaseRule("the status already says Succeed, and no rerun was just accepted", JobFlowPhase.SUCCEED,
              lambda f: f.ended is JobFlowPhase.SUCCEED),
    PhaseRule("the status already says Failed, and no rerun was just accepted", JobFlowPhase.FAILED,
              lambda f: f.ended is JobFlowPhase.FAILED),
    PhaseRule("the spec is invalid", JobFlowPhase.FAILED, lambda f: not f.spec_valid),
    PhaseRule("the deadline passed before every flow ended", JobFlowPhase.FAILED, lambda f: f.deadline_exceeded),
    PhaseRule("the JobFlow was stopped or terminated before every flow ended", JobFlowPhase.FAILED,
              lambda f: f.shut_down and not f.categories <= ENDED),
    PhaseRule("a failure nothing handles, and the JobFlow fails fast", JobFlowPhase.FAILED,
              lambda f: f.unhandled_failure and f.fail_fast),
    PhaseRule("a failure nothing handles, and every flow has ended", JobFlowPhase.FAILED,
              lambda f: f.unhandled_failure and f.categories <= ENDED),
    PhaseRule("the JobFlow is suspended and not every flow has ended", JobFlowPhase.SUSPENDED,
              lambda f: f.suspended and not f.categories <= ENDED),
    PhaseRule("every flow has ended (also when there are no flows)", JobFlowPhase.SUCCEED,
              lambda f: f.categories <= ENDED),
    PhaseRule("any flow is active or has ended", JobFlowPhase.RUNNING,
              lambda f: bool(f.categories & {JobCategory.ACTIVE, *ENDED})),
    PhaseRule("otherwise", JobFlowPhase.PENDING, lambda f: True),
)
"""Step 2 of the module docstring: the first rule that holds gives the JobFlow phase."""


def decide_flow_phase(*, deleting: bool, spec_valid: bool, categories: Iterable[JobCategory],
                      unhandled_failure: bool, fail_fast: bool = True, suspended: bool = False,
                      deadline_exceeded: bool = False, shut_down: bool = False,
                      recorded: JobFlowPhase | None = None) -> JobFlowPhase:
    """The JobFlow phase, given the category of each (distinct) flow and the phase the status ``recorded`` (None
    when a rerun was just accepted, or there is no status yet)."""
    facts = PhaseFacts(
        deleting=deleting,
        spec_valid=spec_valid,
        deadline_exceeded=deadline_exceeded,
        categories=frozenset(categories),
        unhandled_failure=unhandled_failure,
        fail_fast=fail_fast,
        suspended=suspended,
        shut_down=shut_down,
        ended=recorded if recorded in ENDED_PHASES else None,
    )
    return next(rule.phase for rule in FLOW_PHASE_RULES if rule.holds(facts))


ENDED_PHASES: Final = frozenset({JobFlowPhase.SUCCEED, JobFlowPhase.FAILED})
"""JobFlow phases only a rerun leaves (or the JobFlow's deletion, for Terminating)."""


def regresses(before: JobFlowPhase | None, after: JobFlowPhase | None, *, rerun_accepted: bool) -> bool:
    """Whether writing phase ``after`` over ``before`` would move an ended JobFlow back: anything but the same
    phase or Terminating after Succeed or Failed, without a rerun just accepted."""
    return (before in ENDED_PHASES and not rerun_accepted
            and after not in (before, JobFlowPhase.TERMINATING))
