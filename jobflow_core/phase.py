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

Only Completed satisfies a dependency. Done and failed phases are *final*: Volcano has finished with the
vcjob, so a final vcjob that disappears is not created again. (A user can still resume an Aborted vcjob; its
phase is then read again like any other.)

**Step 2: the JobFlow phase.** :data:`FLOW_PHASE_RULES`, the first rule that holds wins:

====================================================  ===========
when                                                  phase
====================================================  ===========
the JobFlow is being deleted                          Terminating
the spec is invalid                                   Failed
any flow is failed                                    Failed
every flow is done (also when there are no flows)     Succeed
any flow is active or done                            Running
otherwise                                             Pending
====================================================  ===========

Because nothing here remembers the previous phase, Pending goes straight to Succeed when every job completed
between two observations, and an empty ``flows`` list succeeds at once.
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


def is_final(phase: VcJobPhase | None) -> bool:
    """Whether Volcano is done with a vcjob in this phase (Completed, Failed, Terminated, Aborted)."""
    return category_of(phase) in (JobCategory.DONE, JobCategory.FAILED)


@dataclass(frozen=True)
class PhaseFacts:
    """What the JobFlow phase depends on, and nothing else."""

    deleting: bool
    spec_valid: bool
    categories: frozenset[JobCategory]
    """The categories present among the flows (a set: only which ones occur matters)."""


@dataclass(frozen=True)
class PhaseRule:
    when: str
    phase: JobFlowPhase
    holds: Callable[[PhaseFacts], bool]


FLOW_PHASE_RULES: Final = (
    PhaseRule("the JobFlow is being deleted", JobFlowPhase.TERMINATING, lambda f: f.deleting),
    PhaseRule("the spec is invalid", JobFlowPhase.FAILED, lambda f: not f.spec_valid),
    PhaseRule("any flow is failed", JobFlowPhase.FAILED, lambda f: JobCategory.FAILED in f.categories),
    PhaseRule(
        "every flow is done (also when there are no flows)",
        JobFlowPhase.SUCCEED,
        lambda f: f.categories <= {JobCategory.DONE},
    ),
    PhaseRule(
        "any flow is active or done",
        JobFlowPhase.RUNNING,
        lambda f: bool(f.categories & {JobCategory.ACTIVE, JobCategory.DONE}),
    ),
    PhaseRule("otherwise", JobFlowPhase.PENDING, lambda f: True),
)
"""Step 2 of the module docstring: the first rule that holds gives the JobFlow phase."""


def decide_flow_phase(
    *, deleting: bool, spec_valid: bool, job_phases: Iterable[VcJobPhase | None]
) -> JobFlowPhase:
    """The JobFlow phase, given the effective job phase of each (distinct) flow."""
    facts = PhaseFacts(
        deleting=deleting,
        spec_valid=spec_valid,
        categories=frozenset(category_of(phase) for phase in job_phases),
    )
    return next(rule.phase for rule in FLOW_PHASE_RULES if rule.holds(facts))
