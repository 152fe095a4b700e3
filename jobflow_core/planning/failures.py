"""Why a JobFlow failed, decided once: the reason word and the message ``status.state`` carries, with what to do.

The phase table (:mod:`jobflow_core.vocabulary.phase`) says *that* a JobFlow is Failed; this table says *why*, in
``state.reason`` and ``state.message`` (and the Warning event that repeats them). :data:`FAILURE_RULES`, the first
row that holds wins:

=====================================================  ================  ==============================================
when                                                   reason            the message says
=====================================================  ================  ==============================================
the JobFlow is being deleted                           (none)            nothing: it is going away
its spec is invalid                                    InvalidSpec       each error and its fix, then: rerun it
``activeDeadlineSeconds`` passed before every flow     DeadlineExceeded  raise the deadline or find out what took so
ended                                                                    long, then: rerun it
stopped or terminated (``spec.shutdown``)              Stopped,          that what ran was aborted (and whether the
                                                       Terminated        ``finally`` flows ran), then: rerun what did
                                                                         not finish
a flow failed and no flow handles its failure          JobFailed         which vcjobs failed; fix the cause, then:
                                                                         rerun it
another JobFlow it waits for failed (or timed out,     DependencyFailed  which, and why; then: rerun it
went, waits for it) and no flow handles it
otherwise                                                                (no failure)
=====================================================  ================  ==============================================

"Rerun it" is :data:`RERUN_ADVICE`: a Failed JobFlow stays Failed (a phase never goes back) until a rerun is asked
for (:mod:`jobflow_core.dag.reruns`), which runs the failed flows again and keeps what completed. So the advice names
the command, ``kubectl jobflow retry <name>``, and the annotation it writes, for users of plain ``kubectl``.
Deleting and re-creating the JobFlow, the only way upstream knows, would run everything again.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from jobflow_core.flows.units import FlowNode
from jobflow_core.models import JobFlowPhase, Shutdown
from jobflow_core.planning.observation import Observation
from jobflow_core.vocabulary.api import RERUN
from jobflow_core.vocabulary.kube_events import SHUTDOWN_REASON, Reason
from jobflow_core.vocabulary.phase import FlowOutcome, JobCategory, category_of


def rerun_advice(*, name: str, namespace: str) -> str:
    """How to run a Failed JobFlow again, keeping what completed."""
    return (f"kubectl jobflow retry -n {namespace} {name}, or with plain kubectl: kubectl annotate jobflow "
            f"-n {namespace} {name} --overwrite {RERUN}=<any new value>")


def _advice(observation: Observation) -> str:
    return rerun_advice(name=observation.jobflow.name, namespace=observation.jobflow.namespace)


@dataclass(frozen=True)
class Failure:
    """Why the JobFlow failed: ``state.reason`` and ``state.message``."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class FailureRule:
    when: str
    reason: Reason | None
    holds: Callable[[Observation], str | None]
    """The message when the rule holds (what went wrong and what to do), else None."""


def _deleting(observation: Observation) -> str | None:
    return "being deleted" if observation.jobflow.metadata.deletion_timestamp is not None else None


def _invalid_spec(observation: Observation) -> str | None:
    if not observation.errors:
        return None
    errors = "; ".join(str(error) for error in observation.errors)
    return f"{errors} (then rerun it: {_advice(observation)})"


def _deadline_passed(observation: Observation) -> str | None:
    if not observation.deadline_exceeded:
        return None
    seconds = observation.jobflow.spec.active_deadline_seconds
    return (f"activeDeadlineSeconds ({seconds}) passed before every flow ended: what still ran was aborted (raise "
            f"activeDeadlineSeconds, or find out what took so long, then rerun it: "
            f"{_advice(observation)})")


def _shut_down(shutdown: Shutdown) -> Callable[[Observation], str | None]:
    reason = SHUTDOWN_REASON[shutdown]

    def holds(observation: Observation) -> str | None:
        if observation.shutdown is not shutdown or observation.phase is not JobFlowPhase.FAILED:
            return None  # a stop that came after the JobFlow succeeded changed nothing
        before = observation.previous.state
        if before and before.phase is JobFlowPhase.FAILED and before.reason not in (None, *SHUTDOWN_REASON.values()):
            return None  # it had failed before the stop: why it failed stays what it says
        finally_flows = "its finally flows run" if shutdown is Shutdown.STOP else "its finally flows do not run"
        return (f"{reason.value} (spec.shutdown: {shutdown.value}): what ran was aborted, nothing new starts, "
                f"{finally_flows} (to run what did not finish again: kubectl jobflow retry -n "
                f"{observation.jobflow.namespace} {observation.jobflow.name}, which also removes spec.shutdown)")
    return holds


def _unhandled_failure(observation: Observation) -> str | None:
    outcomes = observation.outcomes
    namespace = observation.jobflow.namespace
    failed = [_failed_node(node, namespace=namespace) for node in observation.nodes
              if outcomes.of.get(node.name) is FlowOutcome.FAILED and node.name not in outcomes.handled]
    if not failed:
        return None
    return (f"{'; '.join(failed)} (a JobFlow fails when one of its jobs fails: fix the cause, then run the failed "
            f"flows and what follows them again: {_advice(observation)})")


def _awaited_failed(observation: Observation) -> str | None:
    outcomes = observation.outcomes
    failed = [entry.message or key for key, entry in observation.awaits.items()
              if outcomes.of.get(key) is FlowOutcome.FAILED and key not in outcomes.handled]
    if not failed:
        return None
    return (f"{'; '.join(failed)} (this JobFlow waits for it to succeed: once it has, rerun this one: "
            f"{_advice(observation)})")


def _failed_node(node: FlowNode, *, namespace: str) -> str:
    if not node.fan_out:
        return f'vcjob "{namespace}/{node.only.job_name}" of flow "{node.name}" is {node.phase}'
    if node.repeats:
        last = node.units[-1]
        why = node.items_error or f'its iteration {last.item.index if last.item else 0} failed: vcjob ' \
                                  f'"{namespace}/{last.job_name}" is {last.phase}'
        return f'flow "{node.name}" (repeat) failed: {why}'
    failed = [unit for unit in node.units if category_of(unit.phase) is JobCategory.FAILED]
    shown = ", ".join(str(unit.item.index) for unit in failed[:10] if unit.item) + (", ..." if len(failed) > 10
                                                                                   else "")
    return (f'{len(failed)} of {len(node.units)} items of flow "{node.name}" failed (index {shown}; first: vcjob '
            f'"{namespace}/{failed[0].job_name}" is {failed[0].phase})')


FAILURE_RULES: Final = (
    FailureRule("the JobFlow is being deleted", None, _deleting),
    FailureRule("its spec is invalid", Reason.INVALID_SPEC, _invalid_spec),
    FailureRule("activeDeadlineSeconds passed before every flow ended", Reason.DEADLINE_EXCEEDED, _deadline_passed),
    FailureRule("the JobFlow was stopped", Reason.STOPPED, _shut_down(Shutdown.STOP)),
    FailureRule("the JobFlow was terminated", Reason.TERMINATED, _shut_down(Shutdown.TERMINATE)),
    FailureRule("a flow failed and no flow handles its failure", Reason.JOB_FAILED, _unhandled_failure),
    FailureRule("another JobFlow it waits for failed and no flow handles it", Reason.DEPENDENCY_FAILED,
                _awaited_failed),
)
"""The table of the module docstring, in order ("otherwise": no failure)."""


def why_failed(observation: Observation) -> Failure | None:
    """The JobFlow-level failure the observation shows, by the first rule of :data:`FAILURE_RULES` that holds."""
    for rule in FAILURE_RULES:
        message = rule.holds(observation)
        if message is not None:
            return Failure(rule.reason, message) if rule.reason is not None else None
    return None
