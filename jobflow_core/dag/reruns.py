"""Rerun from failure: run a Failed JobFlow's failed flows again, and what follows them, keeping what completed.

A user asks through the API server, so the request works serverless and from plain ``kubectl``: the annotation
``flow.volcano.sh/rerun: <any new id>`` (``kubectl jobflow retry NAME`` writes a fresh one), optionally with
``flow.volcano.sh/rerun-flows: c,d`` to name the flows to run again instead of every failed one. The handler
accepts a request whose id differs from ``status.rerun.id``:

* only a ``Failed`` JobFlow is rerun; any other records the id with a message saying why nothing happened;
* the flows to run again are the named ones (else those that failed) and every flow downstream of them
  (``dependsOn``, transitively), ``finally`` flows included;
* a failed ``forEach`` or ``repeat`` flow runs again only its failed items (iterations), keyed
  ``<flow>-<index>``; what succeeded stays;
* for each of them with a vcjob, the next attempt becomes the first that counts (``status.rerun.fromAttempt``):
  earlier attempts stay in ``jobStatusList`` as history, the flow has not ended, and its retries start afresh.
  Flows that never ran (held or skipped) just run once what they wait for allows.

``status.rerun`` is the record that makes this idempotent: the same id is accepted once, whatever the number of
events, handlers and retried writes; the next attempts' vcjob names (``<jobflow>-<flow>-r<n>``) are fixed, so a
create repeated after a lost write finds the vcjob it made.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from jobflow_core.dag.graph import flow_graph
from jobflow_core.models import JobFlow, Rerun
from jobflow_core.vocabulary.api import RERUN, RERUN_FLOWS
from jobflow_core.vocabulary.phase import FlowOutcome


@dataclass(frozen=True)
class RerunRequest:
    id: str
    flows: tuple[str, ...]
    """The flows the user named (empty: every failed flow)."""


def new_request(jobflow: JobFlow) -> RerunRequest | None:
    """The rerun the JobFlow's annotations ask for, if its status has not recorded that id yet."""
    annotations = jobflow.metadata.annotations or {}
    request = (annotations.get(RERUN) or "").strip()
    done = jobflow.status.rerun.id if jobflow.status and jobflow.status.rerun else None
    if not request or request == done:
        return None
    flows = tuple(name.strip() for name in (annotations.get(RERUN_FLOWS) or "").split(",") if name.strip())
    return RerunRequest(id=request, flows=flows)


def rerun_from(jobflow: JobFlow, request: RerunRequest, *, outcomes: Mapping[str, FlowOutcome | None],
               units: Mapping[str, Sequence[tuple[str, int, bool]]]) -> dict[str, int]:
    """For each unit to run again that has had a vcjob: the attempt to start from (its last one's number + 1).

    ``units`` gives, per flow, each unit's key (the flow's name; ``<flow>-<index>`` for an item or an iteration),
    its last attempt number (0: it never had a vcjob) and whether that attempt failed. A failed ``forEach`` or
    ``repeat`` flow runs again only its failed items (iterations): what succeeded stays; a flow named by the user,
    or downstream of one that runs again, runs again whole."""
    failed = [name for name, outcome in outcomes.items() if outcome is FlowOutcome.FAILED]
    graph = flow_graph(jobflow)
    roots = [name for name in (request.flows or failed) if name in units]
    chosen: dict[str, None] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name not in chosen:
            chosen[name] = None
            pending.extend(graph.dependents(name))
    only_failed = set() if request.flows else set(roots)
    return {key: attempts + 1 for name in chosen for key, attempts, unit_failed in units[name]
            if attempts and (unit_failed or name not in only_failed)}


def record(request: RerunRequest, *, accepted: dict[str, int] | None, previous: Rerun | None,
           why_not: str | None = None, now: datetime | None = None, children: Sequence[str] = ()) -> Rerun:
    """The ``status.rerun`` after handling ``request``: the attempts to count from, or why nothing happened; an
    accepted one, when (``now``: an approval gate run again opens then, :mod:`jobflow_core.flows.gates`), and the
    failed child JobFlows asked to rerun their own failed flows (``children``, given the request's id)."""
    before = dict(previous.from_attempt or {}) if previous else {}
    asked = dict(previous.child_reruns or {}) if previous else {}
    if accepted is None:  # refused: the last accepted one's time stays (a gate it opened again counts from it)
        return Rerun(id=request.id, from_attempt=before or None, message=why_not,
                     acceptedAt=previous.accepted_at if previous else None, childReruns=asked or None)
    flows = ", ".join([*sorted(accepted), *(f"{name} (its failed flows)" for name in children)]) or "none"
    return Rerun(id=request.id, from_attempt={**before, **accepted} or None, message=f"run again: {flows}",
                 acceptedAt=now, childReruns={**asked, **dict.fromkeys(children, request.id)} or None)
