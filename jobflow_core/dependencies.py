"""When a flow may start: its dependencies, and whether the JobFlow still starts anything at all.

A flow with no ``dependsOn``, or with no targets, is ready at once. Otherwise it is ready when the effective
job phase (see :mod:`jobflow_core.phase`) of every target is Completed; Completing, Failed, Terminated or
Aborted do not count, as upstream. Nothing new starts once the JobFlow is Failed or Terminating.

The answer is a :class:`Readiness` value rather than a bare bool, so that the status can say what a flow waits
for. ``dependsOn.probe`` is not evaluated yet; a flow with a probe is treated like one without. A probe
evaluator will add its own unmet conditions to the same value.
"""

from collections.abc import Callable
from dataclasses import dataclass

from jobflow_core.models import Flow, JobFlowPhase, VcJobPhase


@dataclass(frozen=True)
class Readiness:
    ready: bool
    waiting_for: tuple[str, ...]
    """Target flows that are not Completed yet, in the order ``dependsOn.targets`` lists them."""
    message: str


def check_dependencies(flow: Flow, *, phase_of: Callable[[str], VcJobPhase | None]) -> Readiness:
    """Whether ``flow``'s targets are all Completed; ``phase_of`` gives a flow's effective job phase."""
    targets = flow.depends_on.targets if flow.depends_on else None
    if not targets:
        return Readiness(ready=True, waiting_for=(), message="no dependencies")
    waiting_for = tuple(
        dict.fromkeys(target for target in targets if phase_of(target) != VcJobPhase.COMPLETED)
    )
    if not waiting_for:
        return Readiness(ready=True, waiting_for=(), message="all targets are Completed")
    quoted = ", ".join(f'"{target}"' for target in waiting_for)
    return Readiness(ready=False, waiting_for=waiting_for, message=f"waiting for {quoted} to be Completed")


def starts_allowed(phase: JobFlowPhase) -> bool:
    """Whether a JobFlow in ``phase`` may still create vcjobs: not once it is Failed or being deleted."""
    return phase not in (JobFlowPhase.FAILED, JobFlowPhase.TERMINATING)
