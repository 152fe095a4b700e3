"""Each flow's outcome (Succeeded, Failed, Skipped, or not yet), which failures are handled, and when to stop.

Outcomes are decided flow by flow in dependency order (:func:`jobflow_core.dag.graph.flow_graph`), because a skip
propagates: a flow whose targets can no longer do what it waits for is Skipped (:mod:`jobflow_core.dag.skips`), and so
may be the flows that wait for it.

* A flow with a vcjob (live, or recorded in the previous status) has the outcome of its effective job phase:
  Completed succeeded; Failed, Terminated and Aborted failed; any other phase has not ended. A flow whose last
  attempt failed but will be retried (:mod:`jobflow_core.flows.retries`) has not ended either: dependents see only the
  last attempt's outcome.
* A flow that needs a vcjob is Skipped when a rule of :data:`jobflow_core.dag.skips.SKIP_RULES` holds for it (what it
  waits for can no longer happen, or its ``when`` condition is false); otherwise it has not ended.
* A failure is **handled** when some flow waits for that flow to fail or to finish (``dependsOn.outcome: Failed``
  or ``Finished``). An unhandled failure of a flow that is not ``finally`` **stops** a JobFlow that fails fast (the
  default): nothing new starts but its ``finally`` flows.
* ``finally`` flows come last: each also waits until every other flow has ended, or will never start because the
  JobFlow stopped, and then follows its own ``dependsOn`` (on other ``finally`` flows only).
* A flow whose dependencies are met and that has a ``when`` condition (:mod:`jobflow_core.flows.conditions`) waits,
  blocked, while it cannot be evaluated (this module evaluates it, in the context of the flow's targets).

For each flow that needs a vcjob the pass also keeps its :class:`~jobflow_core.dag.dependencies.Readiness`, which the
start table (:mod:`jobflow_core.planning.starts`) reads.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from jobflow_core.dag.awaits import is_key, with_awaited
from jobflow_core.dag.dependencies import Readiness
from jobflow_core.dag.graph import flow_graph
from jobflow_core.dag.probes import CheckResult, NetworkCheck
from jobflow_core.dag.skips import ConditionCheck, SkipFacts, settle_readiness
from jobflow_core.flows.conditions import evaluate, parse_result, reads_results
from jobflow_core.flows.parameters import values
from jobflow_core.models import AwaitedOutcome, FailurePolicy, Flow, JobFlow, VcJob, VcJobPhase
from jobflow_core.vocabulary.phase import FlowOutcome, outcome_of_phase


@dataclass(frozen=True)
class FlowFate:
    """What one flow's dependencies and vcjob say about it, for :func:`decide_outcomes`."""

    flow: Flow
    phase: VcJobPhase | None
    """The effective job phase (None: no vcjob, live or recorded)."""
    job: VcJob | None
    """The live vcjob, if any (probes look at it)."""
    needs_job: bool
    """No vcjob that ended or runs: not created yet, vanished before it ended, or a retry is due."""
    running: bool
    """A live vcjob that has not ended."""
    attempts: int = 0
    """How many attempts it has had (0: never a vcjob)."""
    status: Mapping[str, Any] | None = None
    """Its live vcjob's ``status``, as JSON, for conditions."""
    result: str | None = ""
    """Its current attempt's result (pods' termination message); None while not read yet."""
    empty: bool = False
    """A ``forEach`` flow without items: it succeeds once its dependencies are met."""
    items: Sequence[tuple[Any, str | None]] | None = None
    """A ``forEach`` flow's units (:class:`~jobflow_core.flows.units.FlowView`) and their results, for conditions."""


@dataclass(frozen=True)
class Outcomes:
    of: Mapping[str, FlowOutcome | None]
    readiness: Mapping[str, Readiness]
    """For each flow that needs a vcjob."""
    handled: frozenset[str]
    """Flows whose failure some flow handles."""
    unhandled_failure: bool
    """Some flow failed, and no flow handles it."""
    stopped: bool
    """The JobFlow fails fast and a flow that is not ``finally`` failed unhandled, or it was stopped
    (``spec.shutdown``): only ``finally`` flows start (none once it is terminated)."""
    fates: Mapping[str, FlowFate] = field(default_factory=dict)
    """What each flow's outcome was decided from, for what reads its targets (:func:`target_variables`)."""

    def jobflow_outcome(self) -> dict[str, Any]:
        """What a ``finally`` flow reads of the JobFlow (:func:`jobflow_outcome`)."""
        return jobflow_outcome(self.fates, self.of, handled=self.handled)

    def variables(self, name: str) -> dict[str, Any]:
        """Flow ``name`` as a target, the way a condition and a patch read it (:func:`target_variables`)."""
        fate = self.fates.get(name)
        return target_variables(fate, self.of.get(name)) if fate is not None else {}


_OVER_WAIT = "waiting for every other flow to end (this flow is finally)"


def handled_failures(flows: Sequence[Flow]) -> frozenset[str]:
    """The flows some flow waits for to fail or to finish."""
    return frozenset(
        target for flow in flows if flow.depends_on is not None
        and flow.depends_on.outcome in (AwaitedOutcome.FAILED, AwaitedOutcome.FINISHED)
        for target in flow.depends_on.targets or ()
    )


def jobflow_outcome(fates: Mapping[str, FlowFate], outcomes: Mapping[str, FlowOutcome | None], *,
                    handled: frozenset[str]) -> dict[str, Any]:
    """What a ``finally`` flow reads of the JobFlow it ends, once every other flow has ended: ``outcome``
    (``Succeeded``, or ``Failed`` when a flow, or another JobFlow it waits for, failed and nothing handles it),
    ``failedFlows`` (those flows, in spec order), ``failedJobFlows`` (those JobFlows' keys) and ``errors`` (each
    one's first error: how its vcjob ended, with Volcano's reason and message)."""
    failed = [name for name, fate in fates.items() if not fate.flow.final
              and outcomes.get(name) is FlowOutcome.FAILED and name not in handled]
    awaited = [name for name, outcome in outcomes.items() if is_key(name) and outcome is FlowOutcome.FAILED
               and name not in handled]  # another JobFlow it waits for (jobflow_core.dag.awaits)
    return {"outcome": FlowOutcome.FAILED.value if failed or awaited else FlowOutcome.SUCCEEDED.value,
            "failedFlows": failed, "failedJobFlows": awaited,
            "errors": {name: first_error(fates[name]) for name in failed}
            | {name: f"{name} did not succeed (status.awaitedJobFlows says why)" for name in awaited}}


def first_error(fate: FlowFate) -> str:
    """How a failed flow's vcjob (a fan-out's first failed item) ended: ``<phase>``, then Volcano's reason and
    message when its status has them."""
    if fate.items is not None:
        failed = [unit for unit, _ in fate.items if unit.phase is not None
                  and outcome_of_phase(unit.phase) is FlowOutcome.FAILED]
        if failed:
            unit = failed[0]
            state = ((unit.job.status.to_wire() if unit.job is not None and unit.job.status else {}) or {}).get(
                "state") or {}
            return _error_text(unit.job_name, unit.phase.value, state)
        return f"{fate.phase.value if fate.phase else 'Failed'}"
    state = (fate.status or {}).get("state") or {}
    name = fate.job.name if fate.job is not None else fate.flow.name
    return _error_text(name, fate.phase.value if fate.phase else "Failed", state)


def _error_text(job: str, phase: str, state: Mapping[str, Any]) -> str:
    detail = ": ".join(str(part) for part in (state.get("reason"), state.get("message")) if part)
    return f"vcjob {job} ended {phase}" + (f" ({detail})" if detail else "")


def _condition(jobflow: JobFlow, flow: Flow, *, fates: Mapping[str, FlowFate],
               outcomes: Mapping[str, FlowOutcome | None], handled: frozenset[str] = frozenset()) -> ConditionCheck:
    """The ``when`` of a flow whose dependencies are met (:mod:`jobflow_core.flows.conditions`)."""
    targets = list(dict.fromkeys(flow.depends_on.targets or ())) if flow.depends_on else []
    not_read = [target for target in targets if target in fates and unread(fates[target])] \
        if reads_results(flow.when or "") else []
    if not_read:
        names = ", ".join(f'"{target}"' for target in not_read)
        return ConditionCheck(holds=None, message=f"waiting for the result of {names} (its pods' termination "
                                                  "message) to evaluate its condition")
    variables = {
        "targets": {target: target_variables(fates[target], outcomes.get(target)) for target in targets
                    if target in fates},
        "jobflow": {"name": jobflow.name, "namespace": jobflow.namespace,
                    "labels": dict(jobflow.metadata.labels or {}),
                    "annotations": dict(jobflow.metadata.annotations or {}),
                    **(jobflow_outcome(fates, outcomes, handled=handled) if flow.final else {})},
        "params": values(jobflow),
    }
    verdict = evaluate(flow.when or "", variables=variables)
    if verdict.error is not None:
        return ConditionCheck(holds=None, message=f"its condition {verdict.error}",
                              error=f'flow "{flow.name}": its condition {flow.when!r} {verdict.error} '
                                    "(fix flows[].when)")
    return ConditionCheck(holds=verdict.holds)


def unread(fate: FlowFate) -> bool:
    """Whether some result of the flow (an item's, for a fan-out) is not read yet."""
    if fate.items is not None:
        return any(result is None for _, result in fate.items)
    return fate.result is None


def target_variables(fate: FlowFate, outcome: FlowOutcome | None) -> dict[str, Any]:
    """A target as a condition (and a patch, :mod:`jobflow_core.flows.outputs`) reads it."""
    if fate.items is not None:
        return _fan_out_variables(fate, outcome)
    return {
        "outcome": outcome.value if outcome else "",
        "phase": fate.phase.value if fate.phase else "",
        "result": parse_result(fate.result),
        "resultText": fate.result or "",
        "status": dict(fate.status or {}),
        "attempts": fate.attempts,
    }


def _fan_out_variables(fate: FlowFate, outcome: FlowOutcome | None) -> dict[str, Any]:
    """A ``forEach`` or ``repeat`` target as a condition sees it: its items (iterations), counts over them, and the
    last one's result (:mod:`jobflow_core.flows.items`, :mod:`jobflow_core.flows.loops`)."""
    items = [{"index": unit.item.index, "item": unit.item.value,
              "outcome": (item_outcome.value if (item_outcome := _final_outcome(unit)) else ""),
              "phase": unit.phase.value if unit.phase else "", "result": parse_result(result),
              "resultText": result or "", "attempts": unit.current.number if unit.phase is not None else 0}
             for unit, result in fate.items]
    last = items[-1] if items else {"result": "", "resultText": ""}
    return {
        "outcome": outcome.value if outcome else "",
        "phase": fate.phase.value if fate.phase else "",
        "iterations": sum(item["phase"] != "" for item in items),
        "result": last["result"],
        "resultText": last["resultText"],
        "items": items,
        "results": [item["result"] for item in items],
        "total": len(items),
        "succeeded": sum(item["outcome"] == FlowOutcome.SUCCEEDED.value for item in items),
        "failed": sum(item["outcome"] == FlowOutcome.FAILED.value for item in items),
        "attempts": fate.attempts,
    }


def _final_outcome(unit: Any) -> FlowOutcome | None:
    """An item's outcome: its last attempt's, once no retry follows."""
    return None if unit.retrying else outcome_of_phase(unit.phase)


def decide_outcomes(jobflow: JobFlow, fates: Mapping[str, FlowFate], *,
                    probe_results: Mapping[NetworkCheck, CheckResult], now: datetime | None = None,
                    awaited: Mapping[str, FlowOutcome | None] | None = None) -> Outcomes:
    """The outcomes of the flows of ``jobflow`` (one :class:`FlowFate` per distinct flow name). ``awaited``: the
    outcomes of the other JobFlows it waits for, by key (:mod:`jobflow_core.dag.awaits`): the flows that wait for
    them read them as targets, and a failure of one that no flow handles is a failure of the JobFlow."""
    if awaited:
        fates = {name: replace(fate, flow=with_awaited(jobflow, fate.flow)) for name, fate in fates.items()}
    order = [name for name in flow_graph(jobflow).order if name in fates]
    handled = handled_failures([fate.flow for fate in fates.values()])
    outcomes: dict[str, FlowOutcome | None] = dict(awaited or {})
    readiness: dict[str, Readiness] = {}
    live = {name: fate.job for name, fate in fates.items()}

    def settle(name: str) -> None:
        fate = fates[name]
        if not fate.needs_job:
            outcomes[name] = outcome_of_phase(fate.phase)
            return
        flow = fate.flow
        ready = settle_readiness(SkipFacts(
            flow, outcome_of=outcomes.get, live_job=live.get, probe_results=probe_results, now=now,
            condition=lambda: _condition(jobflow, flow, fates=fates, outcomes=outcomes, handled=handled)))
        readiness[name] = ready
        if ready.skip is not None:
            outcomes[name] = FlowOutcome.SKIPPED
        else:
            outcomes[name] = FlowOutcome.SUCCEEDED if ready.ready and fate.empty else None

    for name in order:
        if not fates[name].flow.final:
            settle(name)
    fail_fast = jobflow.spec.failure_policy is not FailurePolicy.KEEP_GOING
    stopped = jobflow.spec.shutdown is not None or fail_fast and any(
        outcome is FlowOutcome.FAILED and name not in handled for name, outcome in outcomes.items())
    over = all(outcomes[name] is not None or (stopped and not fates[name].running) for name in outcomes
               if name in fates)
    for name in order:
        if fates[name].flow.final:
            settle(name)
            if not over and name in readiness and readiness[name].skip is None:
                readiness[name] = Readiness(ready=False, waiting_for=(), message=_OVER_WAIT)
    return Outcomes(
        of=outcomes,
        readiness=readiness,
        handled=handled,
        unhandled_failure=any(outcome is FlowOutcome.FAILED and name not in handled
                              for name, outcome in outcomes.items()),
        stopped=stopped,
        fates=dict(fates),
    )
