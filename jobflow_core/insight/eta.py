"""The next plan with times: when each waiting flow is expected to start, when the JobFlow is expected to end, and the
critical path, from how long earlier runs of the same JobTemplates took.

**Estimates.** The first time the handler sees a flow, it reads its JobTemplate's median run time
(``durationP50Seconds``, :mod:`jobflow_core.insight.template_stats`) and records it in ``status.estimates`` (a flow
whose template never ran is recorded without ``seconds``: unknown). An estimate is never read again: it describes the
runs *before* this JobFlow, and the status only changes when the JobFlow does.

**Expected times**, in dependency order, without reading a clock (so a status changes only when something happens):

* a flow that started: its first vcjob's creation time; that ended: its last vcjob's end;
* a flow not started: the latest expected end among its targets (or the JobFlow's creation for a flow without
  any), then plus its own estimate for its end. A ``forEach`` flow takes ``ceil(items / parallelism)`` estimates; a
  ``repeat`` flow, or a flow with an unknown estimate, has an unknown end, and so has everything after it;
* a flow waiting for a target to fail is not expected to run (it is left out, as a Skipped flow is); a ``finally``
  flow follows every other flow.

The JobFlow's expected completion is the latest expected end (unknown if any is unknown); the critical path runs
back from the flow that ends last, each step to the target whose end its start waited for.

**With a clock** (``now``, for a deadline: :mod:`jobflow_core.queueing.deadline`), nothing not begun starts before
``now``, a flow that began counts from when Volcano first ran its vcjob (one it still holds ``Pending`` has not
begun), and nothing that runs ends before ``now``: a flow that overran its estimate is expected to end any moment,
and what follows it after that. The status's own forecast never passes one.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from math import ceil

from jobflow_core.dag.graph import flow_graph
from jobflow_core.flows.units import FlowNode
from jobflow_core.insight.cost import ran_from
from jobflow_core.models import AwaitedOutcome, Estimate, JobFlow, VcJob, VcJobPhase
from jobflow_core.vocabulary.phase import FlowOutcome


@dataclass(frozen=True)
class Forecast:
    starts: Mapping[str, datetime]
    """Expected (or actual) start of each flow whose start can be worked out."""
    ends: Mapping[str, datetime]
    completion: datetime | None
    critical_path: tuple[str, ...]


def forecast(jobflow: JobFlow, nodes: Mapping[str, FlowNode], outcomes: Mapping[str, FlowOutcome | None],
             estimates: Mapping[str, int | None], *, now: datetime | None = None) -> Forecast:
    """Expected starts and ends of the flows of ``jobflow`` (see the module docstring); ``now``: none earlier."""
    graph = flow_graph(jobflow)
    created = jobflow.metadata.creation_timestamp
    starts: dict[str, datetime] = {}
    ends: dict[str, datetime] = {}
    unknown: set[str] = set()
    waited_on: dict[str, str] = {}
    order = [name for name in graph.order if name in nodes]
    finals = [name for name in order if nodes[name].flow.final]
    for name in [name for name in order if name not in finals] + finals:
        node = nodes[name]
        outcome = outcomes.get(name)
        if outcome is FlowOutcome.SKIPPED or _not_expected(node, outcomes):
            continue
        begun = [unit.current.job.metadata.creation_timestamp for unit in node.units
                 if unit.job is not None and unit.job.metadata.creation_timestamp is not None]
        targets = graph.targets(name) if not node.flow.final else [n for n in order if n not in finals]
        if begun:
            starts[name] = min(begun)
            if now is not None:  # when it began to run; created but not run yet: not before now
                ran = [t for t in (_ran(unit.job) for unit in node.units if unit.job is not None) if t]
                starts[name] = min(ran) if ran else max(starts[name], now)
        else:
            before = [t for t in targets if t in ends or t in unknown]
            if any(t in unknown for t in before):
                unknown.add(name)
                continue
            start = max([ends[t] for t in before], default=created)
            if start is None:
                unknown.add(name)
                continue
            if now is not None:
                start = max(start, now)
            starts[name] = start
            if before:
                waited_on[name] = max(before, key=lambda t: ends[t])
        if outcome in (FlowOutcome.SUCCEEDED, FlowOutcome.FAILED) and node.ended_at is not None:
            ends[name] = node.ended_at
            continue
        seconds = _seconds(node, estimates.get(name))
        if seconds is None:
            unknown.add(name)
            continue
        ends[name] = starts[name] + timedelta(seconds=seconds)
        if now is not None:
            ends[name] = max(ends[name], now)
    completion = None if unknown or not ends else max(ends.values())
    path: list[str] = []
    if completion is not None:
        current: str | None = max(ends, key=lambda n: (ends[n], order.index(n)))
        while current is not None:
            path.append(current)
            current = waited_on.get(current)
    return Forecast(starts=starts, ends=ends, completion=completion, critical_path=tuple(reversed(path)))


def began(node: FlowNode) -> bool:
    """Whether Volcano ran a vcjob of the flow (created and still ``Pending`` is not begun)."""
    return any(_ran(unit.job) for unit in node.units if unit.job is not None)


def _ran(job: VcJob) -> datetime | None:
    """When the vcjob began to run: Volcano's first Running (its creation when it is past Pending and says no more);
    None while it waits to be scheduled."""
    return ran_from(job) or (None if job.phase in (VcJobPhase.NEW, VcJobPhase.PENDING)
                             else job.metadata.creation_timestamp)


def _not_expected(node: FlowNode, outcomes: Mapping[str, FlowOutcome | None]) -> bool:
    """A flow that waits for a target to fail, while none has: not expected to run."""
    depends = node.flow.depends_on
    if depends is None or depends.outcome is not AwaitedOutcome.FAILED or node.units[0].phase is not None:
        return False
    return not any(outcomes.get(target) is FlowOutcome.FAILED for target in depends.targets or ())


def _seconds(node: FlowNode, estimate: int | None) -> int | None:
    if estimate is None or node.repeats:
        return None
    if node.flow.for_each is None:
        return estimate
    count = len(node.items) if node.items is not None else None
    if count is None:
        return None
    waves = ceil(count / (node.flow.for_each.parallelism or max(count, 1))) if count else 0
    return estimate * waves


def estimates_of(entries: list[Estimate] | None) -> dict[str, int | None]:
    """``status.estimates`` as a mapping (a flow recorded without seconds: unknown)."""
    return {entry.flow: entry.seconds for entry in entries or ()}
