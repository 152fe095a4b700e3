"""When a flow may start: its dependencies, and whether the JobFlow still starts anything at all.

A flow with no ``dependsOn``, or with no targets, is ready at once. Otherwise it is ready when the effective
job phase (see :mod:`jobflow_core.phase`) of every target is Completed; Completing, Failed, Terminated or
Aborted do not count, as upstream. Nothing new starts once the JobFlow is Failed or Terminating.

A flow with ``dependsOn.probe`` is ready when its probe passes against every target instead
(:mod:`jobflow_core.probes`); its targets need not be Completed.

The answer is a :class:`Readiness` value rather than a bare bool, so that the status can say what a flow waits
for, whether it is a probe that should be looked at again, and what can never pass as written.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jobflow_core.models import Flow, JobFlowPhase, VcJob, VcJobPhase
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


def starts_allowed(phase: JobFlowPhase) -> bool:
    """Whether a JobFlow in ``phase`` may still create vcjobs: not once it is Failed or being deleted."""
    return phase not in (JobFlowPhase.FAILED, JobFlowPhase.TERMINATING)
