"""The imperative shell around :mod:`jobflow_core.schedules.firing`: start, stop and prune a JobFlowTemplate's runs.

A template is looked at on every resync tick (the PingSource, our event source's resync: the engine's only clock),
on each change of the template itself (so ``status.nextScheduleTime`` follows a new schedule at once), and when one
of its runs ends (so ``active``, ``lastSuccessfulTime``, the history limits and a run held by ``Forbid`` follow
without waiting for the next tick), and right after an event started a run (so ``lastRun`` and its ``RunStarted``
Event come at once; a run by hand, made by ``kubectl jobflow run`` itself, waits for the next look). Each look,
per attempt of the handler's one write loop (:func:`handlers.writes.rewrite`, at most
:data:`handlers.writes.MAX_ATTEMPTS`):

1. **read**: LIST the template's runs (label :data:`jobflow_core.vocabulary.api.RUN_OF`), *then* GET the template. In
   this order a run missing from the list was never created, or was deleted after a status write that recorded its time
   (runs are pruned or replaced only after that write), which the template read afterwards shows: so a run deleted by
   the history limits is never started again.
2. **plan**: :func:`jobflow_core.schedules.firing.plan_schedule` with the handler's clock (tests hand in one they move).
3. **act**: delete the runs ``Replace`` stops; create the due run (409 AlreadyExists is done: a duplicated tick,
   or another handler, made it); write the status if it changed, guarded by the resourceVersion read (a lost race
   starts the next attempt, which finds the run made); delete the runs beyond the history limits (but one that a
   JobFlow waits for and has not seen end, :mod:`jobflow_core.dag.awaits`: its waiter would take it for a run
   deleted before it ended; one label-selected LIST per run to prune, pruned at a later look); record the plan's
   Events on the template.

A run refused by the API server (the JobFlow CRD's rules, a quota) is told in the status and a Warning Event, and
the scheduled time counts as considered: the next tick does not hammer the API server with it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError

from apiclient.rest import ApiError, Conflict, Exists, Gone, Rejected, Unavailable
from handlers.kube import KubeApi
from handlers.writes import rewrite
from jobflow_core.dag.awaits import WAITS_FOR_JOBFLOW, WAITS_FOR_TEMPLATE, label_name, may_bind
from jobflow_core.models import JobFlow, JobFlowTemplate
from jobflow_core.schedules.firing import ScheduleDecision, plan_schedule, refused, with_active
from jobflow_core.schedules.runs import Run, Start, run_from, run_manifest, run_of_template_selector
from jobflow_core.vocabulary.kube_events import Event, EventType, Reason

log = logging.getLogger("handlers.jobflowtemplates")


@dataclass
class RunsOutcome:
    """What one look at a template did."""

    template: str
    verdict: str = ""
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    status_written: bool = False


@dataclass(frozen=True)
class _Look:
    """One read of a template: its runs, listed first, then the template itself."""

    raw: dict
    template: JobFlowTemplate
    runs: list[Run]


@dataclass(frozen=True)
class _Planned:
    """What the schedule decided on one read."""

    look: _Look
    decision: ScheduleDecision


class Runs:
    def __init__(self, kube: KubeApi, *, clock: Callable[[], datetime]) -> None:
        self.kube, self.clock = kube, clock

    def template(self, namespace: str, name: str) -> RunsOutcome:
        """Look at one template now: start what is due, write its status, prune its history. The attempts are
        those of the handler's one write loop (:func:`handlers.writes.rewrite`): a status write that loses a race
        reads and plans again."""
        outcome = RunsOutcome(f"{namespace}/{name}")
        rewrite(kind="JobFlowTemplate", name=outcome.template, get=lambda: self._look(namespace, name),
                change=lambda look: _Planned(look, plan_schedule(look.template, runs=look.runs, now=self.clock())),
                write=lambda planned: self._act(planned, outcome))
        return outcome

    def _look(self, namespace: str, name: str) -> _Look | None:
        """Step 1 of the module docstring: the template's runs, *then* the template (None: it is gone)."""
        runs = [run_from(raw) for raw in self.kube.list_runs(namespace, run_of_template_selector(name))]
        raw = self.kube.get_jobflowtemplate(namespace, name)
        return None if raw is None else _Look(raw, JobFlowTemplate.model_validate(raw), runs)

    def _act(self, planned: _Planned, outcome: RunsOutcome) -> None:
        """Step 3 of the module docstring; a status write that loses a race raises Conflict, before any pruning."""
        raw, template, decision = planned.look.raw, planned.look.template, planned.decision
        namespace = raw["metadata"]["namespace"]
        outcome.verdict = decision.verdict.value
        for gone in decision.replace:
            self.kube.delete_jobflow(namespace, gone)
            outcome.deleted.append(gone)
        status, events = decision.status, list(decision.events)
        if decision.start is not None:
            refusal = self._create(template, decision.start, outcome)
            if refusal is not None:
                status = with_active(status, [a for a in status.active or () if a != decision.start.name])
                last_run = template.status.last_run if template.status else None  # the refused run never was
                status = status.model_copy(update={"message": refusal, "last_run": last_run})
                events = [Event(EventType.WARNING, Reason.RUN_REJECTED, refusal)]
        if status != template.status:
            try:
                self.kube.replace_jobflowtemplate_status({**raw, "status": status.to_wire()})
                outcome.status_written = True
            except Gone:
                return
        kept = self._awaited(namespace, template.name, planned.look.runs, decision.prune)
        for gone in decision.prune:
            if gone in kept:
                continue  # a JobFlow waits for it, or may bind it, and has not seen it end: pruned at a later look
            self.kube.delete_jobflow(namespace, gone)
            outcome.deleted.append(gone)
        self._record(raw, events)

    def _awaited(self, namespace: str, template: str, runs: list[Run], prune: Iterable[str]) -> set[str]:
        """The runs of ``prune`` that a JobFlow waits for without having seen them end (:mod:`jobflow_core.dag.
        awaits`): bound to one (its ``jobflow.waits`` label: one LIST per run), or, not bound yet, could bind one
        (one LIST of the template's unbound waiters). Their waiters would take a pruned run for one deleted before it
        ended."""
        prune = list(prune)
        if not prune:
            return set()
        created = {run.name: run.created for run in runs}
        unbound = []
        for raw in self.kube.list_runs(namespace, WAITS_FOR_TEMPLATE + label_name(template)):
            try:
                unbound.append(JobFlow.model_validate(raw))
            except ValidationError:
                continue
        return {gone for gone in prune if self.kube.list_runs(namespace, WAITS_FOR_JOBFLOW + label_name(gone))
                or any(may_bind(waiter, template=template, name=gone, created=created.get(gone)) for waiter in unbound)}

    def every_template(self, scopes: tuple[str | None, ...]) -> list[RunsOutcome]:
        """A resync tick: look at every template of the served namespaces (all when ``scopes`` is ``(None,)``). One
        that cannot be looked at (an object the models cannot read, a refusal, a lost race five times) is logged
        and holds the others up no more than a JobFlow does; the next tick tries it again."""
        outcomes = []
        for raw in (raw for scope in scopes for raw in self.kube.list_jobflowtemplates(scope)):
            meta = raw["metadata"]
            try:
                outcomes.append(self.template(meta["namespace"], meta["name"]))
            except (ApiError, Conflict, Gone, ValidationError) as error:
                log.warning("could not look at JobFlowTemplate %s/%s: %s", meta["namespace"], meta["name"], error)
        return outcomes

    def start(self, namespace: str, name: str, start: Start) -> tuple[str, bool]:
        """Start one run by hand or by an event, whatever the schedule says (concurrencyPolicy and suspend are the
        schedule's, as for a CronJob's jobs made by ``kubectl create job --from``); the run's name is the
        idempotency key. (its name, whether this call created it). A run created is followed by a look at the
        template (:meth:`template`), which writes ``lastRun`` and ``active`` and tells every run not told yet by a
        ``RunStarted`` Event (this one, and runs by hand before it: :func:`jobflow_core.schedules.firing.unseen`); a
        look that fails is left to the next one, which does the same."""
        raw = self.kube.get_jobflowtemplate(namespace, name)
        if raw is None:
            raise Gone(f"JobFlowTemplate {namespace}/{name} does not exist")
        template = JobFlowTemplate.model_validate(raw)
        outcome = RunsOutcome(f"{namespace}/{name}")
        refusal = self._create(template, start, outcome)
        if refusal is not None:
            raise Rejected(refusal)
        if outcome.created:
            try:
                self.template(namespace, name)
            except (Conflict, Gone) as error:
                log.info("JobFlowTemplate %s/%s not looked at after starting %s: %s", namespace, name, start.name,
                         error)
        return start.name, bool(outcome.created)

    def _create(self, template: JobFlowTemplate, start: Start, outcome: RunsOutcome) -> str | None:
        """Create the run; None when it exists now, else why the API server refused it."""
        try:
            self.kube.create_jobflow(run_manifest(template, start, now=self.clock()))
            outcome.created.append(start.name)
        except Exists:
            log.info("run %s of %s exists already: a repeated start", start.name, outcome.template)
        except Rejected as error:
            return refused(start.name, str(error))
        return None

    def tell(self, raw: Mapping, event: Event) -> None:
        """Record one Event on the template (a trigger that could not be evaluated over an event)."""
        self._record(raw, [event])

    def _record(self, raw: Mapping, events: list[Event]) -> None:
        for event in events:
            try:
                self.kube.record_event(dict(raw), type_=event.type.value, reason=event.reason.value,
                                       message=event.message, now=self.clock())
            except (ApiError, Conflict, Gone, Unavailable) as error:  # a courtesy: never fail a look for one
                log.warning("could not record %s on %s: %s", event.reason, raw["metadata"]["name"], error)
