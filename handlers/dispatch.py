"""Which JobFlows an event concerns, and who reconciles them: this request, or the event source, one by one.

An event about a JobFlow, or about one of its vcjobs, concerns one JobFlow: it is reconciled here and now (with
the event's snapshot when it carries one for that JobFlow). An event about a JobTemplate, and a resync, may concern
any number of JobFlows; reconciling them all inside one request made its work unbounded (the last of a template's
200 JobFlows was reached after more than 10 s, and the event source's retries raced the JobFlows' own reconciles).
So:

* when the event came from our event source (it says so with the ``jobflowreply`` extension and reads the answer),
  **such an event reconciles no JobFlow itself**: the answer names them (:attr:`Result.handed`), the event source
  queues one event per JobFlow, coalesced with what it already queues for each, and sends each with its snapshot;
* from any other sender, with a sink (``K_SINK``: on Knative the Broker), it reconciles at most
  :data:`INLINE_LIMIT` JobFlows and hands the rest out, one small event each to the sink
  (:meth:`handlers.notify.Notifier.hand_out`), which brings each back as a JobFlow's own event;
* with neither (a curl, a test), every one is reconciled inline as before: nothing else would take the work.

The bound: besides the LISTs that find the JobFlows (one of the namespace's; a resync one per served namespace,
plus the vcjob LIST that finds orphans), no reconcile at all, or at most :data:`INLINE_LIMIT`, and one POST per
JobFlow handed out.

What only JobFlowTemplates need (their runs, schedules and triggers: :mod:`handlers.jobflowtemplates`,
:mod:`jobflow_core.schedules.triggers`, the JobFlowTemplate model) is imported when an event first needs it, not at
start: a handler woken from zero for a JobFlow's event does not pay for it (``tests/unit/test_cold_start_imports.py``).

A vcjob's event finds its JobFlow with one GET when the event names it (``controller``: our event source's
extension, or a Resource-mode payload's ownerReference), else a GET of the vcjob to read its controller; only a
vcjob that is gone, or whose hint is wrong, costs a LIST of the namespace's JobFlows. Which JobFlows a JobTemplate
change concerns, and what a resync looks at, is decided by :mod:`jobflow_core.routing.concerns`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import ValidationError

from apiclient.rest import ApiError, Conflict, Gone, Rejected, Unavailable
from handlers.jobflows import Outcome, Reconciler
from handlers.writes import Writes
from jobflow_core import UpdateTemplate
from jobflow_core.dag.awaits import waiters_selectors
from jobflow_core.models import JobFlowPhase, VcJob
from jobflow_core.planning.template_status import template_status
from jobflow_core.queueing.line import in_line
from jobflow_core.queueing.wake import to_wake
from jobflow_core.routing.concerns import (can_change, controller_name, flows_of_job, jobflows_of_job,
                                           orphan_to_release, waits_for_template)
from jobflow_core.vocabulary.api import RECORD_FINALIZER, RUN_OF
from jobflow_core.vocabulary.kube_events import Event, EventType, Reason
from jobflow_core.vocabulary.naming import FLOW_JOBS_SELECTOR, jobs_of_template_selector

if TYPE_CHECKING:
    from handlers.jobflowtemplates import Runs, RunsOutcome
    from jobflow_core.schedules.triggers import Incoming

log = logging.getLogger("handlers.dispatch")

INLINE_LIMIT = 20
"""JobFlows an event from a sender that reads no answer reconciles itself when the rest can be handed out."""
WAKE_ROUNDS = 5
"""Rounds of JobFlows woken because one they wait for ended (a chain A <- B <- C that ends at once, as when A failed
and B fails with it, wakes C in the second round)."""


class PartlyFailed(RuntimeError):
    """Some of the JobFlows an event concerned could not be reconciled; the others were. ``failures`` maps each
    failed JobFlow (``namespace/name``) to why; ``retry`` says whether any failure was transient, so that
    delivering the event again can help."""

    def __init__(self, failures: dict[str, str], *, retry: bool) -> None:
        super().__init__("; ".join(f"JobFlow {name}: {why}" for name, why in failures.items()))
        self.failures, self.retry = failures, retry


@dataclass
class Result:
    """What handling one event did: the JobFlows reconciled here, and those handed back to the event source."""

    outcomes: list[Outcome] = field(default_factory=list)
    handed: list[tuple[str, str]] = field(default_factory=list)
    templates: list[RunsOutcome] = field(default_factory=list)
    """The JobFlowTemplates looked at (:mod:`handlers.jobflowtemplates`)."""
    parents: set[str] = field(default_factory=set)
    """The parents (``namespace/name``) reconciled after a child of theirs (:meth:`Dispatcher._parents`)."""


class Dispatcher:
    def __init__(self, reconciler: Reconciler, *, hand_back: bool = False) -> None:
        self.reconciler, self.kube, self.hand_back = reconciler, reconciler.kube, hand_back
        self.sink = reconciler.notifier  # where the rest is handed out, if anywhere

    @property
    def writes(self) -> Writes:
        return self.reconciler.writes

    @property
    def runs(self) -> Runs:
        from handlers.jobflowtemplates import Runs

        return Runs(self.kube, clock=self.reconciler.clock)

    def jobflow(self, namespace: str, name: str, *, snapshot: dict | None = None,
                controller: str | None = None) -> Result:
        """Reconcile the JobFlow; when it is a JobFlowTemplate's run that has just ended, look at its template too
        (its active runs, history, and a run ``Forbid`` held). A child JobFlow's parent (:mod:`jobflow_core.flows.
        children`: its controller, as read, else as the event said) is reconciled next: what the child did is what
        the parent plans from. A child being deleted whose parent is gone is let go of its finalizer (nobody is left
        to record it)."""
        outcome = self.reconciler.jobflow(namespace, name, snapshot=snapshot)
        result = Result([outcome])
        parent = outcome.parent or controller
        if parent is not None:
            self._parent(namespace, name, parent, result)
        return self._wake(self._runs_ended(self._waiters(self._parents(result, raising=True))))

    def follow_up(self, outcome: Outcome) -> Result:
        """What follows a reconcile made outside an event of its own (an approval's CloudEvent,
        :mod:`handlers.approvals`): its parent, the JobFlows waiting for it, its template, the JobFlows waiting for
        the room it left, as after a JobFlow's event."""
        return self._wake(self._runs_ended(self._waiters(self._parents(Result([outcome])))))

    def _parents(self, result: Result, *, raising: bool = False) -> Result:
        """Reconcile the parent of each child JobFlow whose status a reconcile of ``result`` wrote (and theirs, up
        the tree), once each: the event source does not send an event for the handler's own writes, so the child's
        new phase or outputs reach its parent here (:mod:`jobflow_core.flows.children`). A parent that cannot be
        reconciled does not keep the rest from being reconciled: the failures are raised together
        (:class:`PartlyFailed`), or with ``raising``, the first as it is (a single event's, which is retried)."""
        pending = [outcome for outcome in result.outcomes if outcome.parent and outcome.status_written]
        failures, retry = {}, False
        while pending:
            child = pending.pop(0)
            namespace, _, name = child.jobflow.partition("/")
            if child.parent is None or f"{namespace}/{child.parent}" in result.parents:
                continue
            try:
                above = self._parent(namespace, name, child.parent, result)
            except (Conflict, Unavailable, Gone, ApiError, ValidationError) as error:
                if raising:
                    raise
                failures[f"{namespace}/{child.parent}"] = str(error)[:512]
                retry = retry or isinstance(error, (Conflict, Unavailable))
                continue
            if above.parent and above.status_written:
                pending.append(above)
        if failures:
            raise PartlyFailed(failures, retry=retry)
        return result

    def _parent(self, namespace: str, child: str, parent: str, result: Result) -> Outcome:
        """Reconcile ``parent`` after its ``child``, and again when that let the child go of our finalizer (a child
        being deleted then goes at once, and no event of it names its parent: the parent plans without it now).
        When the parent is gone, let the child go (nobody is left to record it: the garbage collector deletes it)."""
        result.parents.add(f"{namespace}/{parent}")
        above = self.reconciler.jobflow(namespace, parent)
        result.outcomes.append(above)
        if child in above.released and self.kube.get_jobflow(namespace, child) is None:
            above = self.reconciler.jobflow(namespace, parent)
            result.outcomes.append(above)
        raw = self.kube.get_jobflow(namespace, child) if not above.found else None
        if raw is not None and controller_name(raw) == parent:
            self._release_orphan(raw, jobflow_uids=())
        return above

    def _wake(self, result: Result) -> Result:
        """When a reconcile's status write left room in a Volcano queue, the JobFlows waiting there are reconciled
        now (:mod:`jobflow_core.queueing.wake`) instead of at their next periodic look. Not for our event source,
        which wakes them from its own watch (``hand_back``); a failure here is the periodic look's to make up for,
        not this event's to retry."""
        rooms = [room for outcome in result.outcomes for room in outcome.freed if room.behind is None]
        if self.hand_back or not rooms:
            return result
        try:
            listed = self._jobflows(self.reconciler.namespaces or (None,))
        except (ApiError, Unavailable) as error:
            log.warning("could not list the JobFlows waiting for the room just freed (%s): the periodic look "
                        "finds them", error)
            return result
        by_key = {(raw["metadata"]["namespace"], raw["metadata"]["name"]): raw for raw in listed}
        lines = [in_line(raw) for raw in listed]
        keys = dict.fromkeys(key for room in rooms for key in to_wake(room, lines))  # in line order, each once
        try:
            woken = self._each(by_key[key] for key in keys)
        except PartlyFailed as failed:
            log.warning("waking the JobFlows waiting in queue(s) %s: %s", ", ".join(r.queue or "(all)" for r in rooms),
                        failed)
            return result
        result.outcomes += woken.outcomes
        return result

    def _waiters(self, result: Result) -> Result:
        """Reconcile the JobFlows that wait for one this result's reconciles saw end (their status write recorded
        ``Succeed`` or ``Failed`` over a phase that was neither: once per end, not per later write) or go
        (:mod:`jobflow_core.dag.awaits`): found by the labels the engine wrote on them, one label-selected LIST each
        (two for a JobFlowTemplate's run), not by a LIST of every JobFlow. Our event source sends no event for the
        handler's own status writes, and Knative's ApiServerSource sends the write's event to a reconcile that writes
        nothing: so they are woken here, under both. Those that end in turn wake theirs (at most :data:`WAKE_ROUNDS`
        rounds). A failure is the resync's to make up for, not the event's to retry (delivering it again would find
        nothing left to write)."""
        done: set[str] = set()  # those woken here (one reconciled earlier in this request may have waited since)
        pending = list(result.outcomes)
        for _ in range(WAKE_ROUNDS):
            ended = [outcome for outcome in pending if not outcome.found or outcome.ended]
            if not ended:
                break
            try:
                listed = {(raw["metadata"]["namespace"], raw["metadata"]["name"]): raw for outcome in ended
                          for raw in self._waiting_for(outcome)}
                woken = self._each(raw for key, raw in listed.items() if "/".join(key) not in done)
            except (ApiError, Unavailable, Conflict, Gone, PartlyFailed) as error:
                log.warning("waking the JobFlows waiting for %s: %s (the resync finds them)",
                            ", ".join(outcome.jobflow for outcome in ended), error)
                break
            result.handed += woken.handed
            result.outcomes += woken.outcomes
            done |= {outcome.jobflow for outcome in woken.outcomes}
            pending = woken.outcomes
        return result

    def _waiting_for(self, outcome: Outcome) -> list[dict]:
        """The JobFlows labelled as waiting for ``outcome``'s JobFlow (:func:`jobflow_core.dag.awaits.
        waiters_selectors`; one that went is known by its name only)."""
        namespace, _, name = outcome.jobflow.partition("/")
        raw = outcome.written or {"metadata": {"namespace": namespace, "name": name}}
        return [found for selector in waiters_selectors(raw) for found in self.kube.list_runs(namespace, selector)
                if found["metadata"]["name"] != name]

    def _runs_ended(self, result: Result) -> Result:
        """Look at the JobFlowTemplate of each run this result's reconciles just saw end (their status write
        recorded ``Succeed`` or ``Failed``): its ``active`` list, ``lastSuccessfulTime``, history limits, and a run
        ``Forbid`` held follow at once instead of at the next tick."""
        for outcome in result.outcomes:
            meta = (outcome.written or {}).get("metadata") or {}
            template = (meta.get("labels") or {}).get(RUN_OF)
            if template and outcome.status_written and outcome.phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
                result.templates.append(self.runs.template(meta["namespace"], template))
        return result

    def cloudevent(self, event: Incoming) -> Result:
        """Any other CloudEvent (``POST /trigger``): each JobFlowTemplate of the served namespaces whose triggers
        match it starts a run (:mod:`jobflow_core.schedules.triggers`); the run's name makes a repeated event start
        one."""
        from handlers.jobflowtemplates import RunsOutcome
        from jobflow_core.models import JobFlowTemplate
        from jobflow_core.schedules.triggers import matches

        result, runs = Result(), self.runs
        for scope in self.reconciler.namespaces or (None,):
            for raw in self.kube.list_jobflowtemplates(scope):
                template = JobFlowTemplate.model_validate(raw)
                for match in matches(template, event):
                    outcome = RunsOutcome(f"{template.namespace}/{template.name}", verdict="event")
                    if match.start is not None:
                        try:
                            name, created = runs.start(template.namespace, template.name, match.start)
                        except Rejected as refused:  # told on the template; retrying the event cannot help
                            runs.tell(raw, Event(EventType.WARNING, Reason.RUN_REJECTED, str(refused)))
                            continue
                        except Gone:  # the template went meanwhile
                            continue
                        outcome.created += [name] if created else []
                    elif match.error is not None:
                        runs.tell(raw, Event(EventType.WARNING, Reason.RUN_REJECTED, match.error))
                    result.templates.append(outcome)
        return result

    def jobflowtemplate(self, namespace: str, name: str) -> Result:
        """A JobFlowTemplate came or changed: its schedule's status follows at once (and what is due starts)."""
        return Result(templates=[self.runs.template(namespace, name)])

    def jobtemplate(self, namespace: str, name: str) -> Result:
        """A JobTemplate appeared or changed: refresh its ``jobDependsOnList``, and the JobFlows still waiting for
        it take it up."""
        read = self.kube.get_jobtemplate(namespace, name)  # before the LIST: what it lists then may be taken off
        if read is not None:
            known = tuple((read.get("status") or {}).get("jobDependsOnList") or ())
            selector = jobs_of_template_selector(namespace=namespace, template=name)
            jobs = [VcJob.model_validate(job) for job in self.kube.list_vcjobs(namespace, selector)]
            self.writes.template(self.kube, namespace, name,
                                 lambda template: template_status(template, jobs=jobs, known=known), read=read)
        return self._runs_ended(self._waiters(self._each(raw for raw in self.kube.list_jobflows(namespace)
                                                         if waits_for_template(raw, name))))

    def vcjob(self, namespace: str, name: str, *, controller: str | None, deleted: bool,
              snapshot: dict | None = None) -> Result:
        """A vcjob changed: reconcile the JobFlow(s) it concerns, and when it went, take it off the lists of the
        JobTemplates that name it, whatever became of its JobFlow (when it came, the reconcile that created it
        added it). A vcjob no JobFlow claims is let go if it waits for our finalizer."""
        owner = (snapshot or {}).get("jobflow") or {}
        if controller is not None and (owner.get("metadata") or {}).get("name") == controller \
                and flows_of_job(owner, name):
            result = self._parents(Result([self.reconciler.jobflow(namespace, controller, snapshot=snapshot)]),
                                   raising=True)
        else:
            candidates = self._claimants(namespace, name, controller=controller)
            if not candidates:
                self._release_orphan(self.kube.get_vcjob(namespace, name), jobflow_uids=())
            result = self._each(candidates, inline=True)  # its parents included
        result = self._wake(self._runs_ended(self._waiters(result)))
        if deleted and self.kube.get_vcjob(namespace, name) is None:
            for raw in self.kube.list_jobtemplates(namespace):
                if name in ((raw.get("status") or {}).get("jobDependsOnList") or ()):
                    template = raw["metadata"]["name"]
                    self.writes.template(self.kube, namespace, template,
                                         UpdateTemplate(template, removed=(name,)).apply, read=raw)
        return result

    def resync(self) -> Result:
        """Reconcile every JobFlow that can still change, and let go of vcjobs whose JobFlow is gone (the safety
        net for lost events); start the scheduled runs that are due (:mod:`handlers.jobflowtemplates`)."""
        scopes: tuple[str | None, ...] = self.reconciler.namespaces or (None,)
        listed = self._jobflows(scopes)
        alive = {raw["metadata"].get("uid") for raw in listed}
        for job in (job for scope in scopes for job in self.kube.list_vcjobs(scope, FLOW_JOBS_SELECTOR)):
            self._release_orphan(job, jobflow_uids=alive)
        for child in listed:  # a child JobFlow whose parent went before it recorded it
            self._release_orphan(child, jobflow_uids=alive)
        try:
            result = self._waiters(self._each(raw for raw in listed if can_change(raw)))
        except PartlyFailed:
            self.runs.every_template(scopes)  # a JobFlow that cannot be reconciled holds no schedule up
            raise
        result.templates = self.runs.every_template(scopes)  # the tick is the schedules' clock
        return result

    def _jobflows(self, scopes: Iterable[str | None]) -> list[dict]:
        """The JobFlows of ``scopes`` (None: every namespace), one LIST each."""
        return [raw for scope in scopes for raw in self.kube.list_jobflows(scope)]

    def _claimants(self, namespace: str, job: str, *, controller: str | None) -> list[dict]:
        """The JobFlows that claim vcjob ``job``: the one its controller names when that one does, else every one of
        the namespace that has a flow the name belongs to."""
        if controller is None:
            found = self.kube.get_vcjob(namespace, job)
            controller = controller_name(found) if found is not None else None
        if controller is not None:
            raw = self.kube.get_jobflow(namespace, controller)
            if raw is not None and flows_of_job(raw, job):
                return [raw]
        return jobflows_of_job(self.kube.list_jobflows(namespace), job=job, controller=None)

    def _each(self, listed: Iterable[dict], *, inline: bool = False) -> Result:
        """Hand ``listed`` (JobFlows just read) back to the event source, or reconcile each on its own: one that
        fails does not keep the others from being reconciled; the failures are raised together at the end
        (:class:`PartlyFailed`)."""
        if self.hand_back and not inline:
            return Result(handed=[(raw["metadata"]["namespace"], raw["metadata"]["name"]) for raw in listed])
        if self.sink is not None and not inline:
            listed = list(listed)
            self.sink.hand_out([(raw["metadata"]["namespace"], raw["metadata"]["name"])
                                for raw in listed[INLINE_LIMIT:]])
            listed = listed[:INLINE_LIMIT]
        result, failures, retry = Result(), {}, False
        for raw in listed:
            namespace, name = raw["metadata"]["namespace"], raw["metadata"]["name"]
            try:
                result.outcomes.append(self.reconciler.jobflow(namespace, name, known=raw))
                continue
            except (Conflict, Unavailable) as error:
                failures[f"{namespace}/{name}"], retry = str(error), True
                continue
            except Gone as error:  # the JobFlow, or its whole namespace, went while we worked: nothing to do
                log.info("JobFlow %s/%s went during its reconcile: %s", namespace, name, error)
                continue
            except ApiError as error:
                why = f"the API server answered {error.status} {error.reason}: {error.body or ''}"[:512]
            except ValidationError as error:
                why = f"an object does not match the JobFlow API: {error.errors()[:3]}"
            failures[f"{namespace}/{name}"] = why
            self._tell(raw, f"cannot reconcile: {why}; fix the object or the cluster, the engine tries again on the "
                            "next change or resync")
        if failures:
            log.warning("reconciled %d JobFlow(s); %d failed: %s", len(result.outcomes), len(failures), failures)
            raise PartlyFailed(failures, retry=retry)
        return self._parents(result)

    def _tell(self, raw: dict, message: str) -> None:
        """A Warning Event on a JobFlow that could not be reconciled (its status may be what cannot be written)."""
        try:
            self.kube.record_event(raw, type_="Warning", reason="ReconcileFailed", message=message,
                                   now=self.reconciler.clock())
        except (ApiError, Conflict, Gone, Unavailable) as error:
            log.warning("could not record the failure on JobFlow %s: %s", raw["metadata"].get("name"), error)

    def _release_orphan(self, raw: dict | None, *, jobflow_uids: Collection[str]) -> None:
        """Let go of a vcjob, or a child JobFlow (:mod:`jobflow_core.flows.children`), being deleted and held by our
        finalizer, whose controller is none of ``jobflow_uids``. Only its metadata is read (an object whose spec does
        not parse is still let go), and only when it holds our finalizer."""
        meta = (raw or {}).get("metadata") or {}
        if raw is not None and RECORD_FINALIZER in (meta.get("finalizers") or ()) and \
                orphan_to_release(VcJob.model_validate({"metadata": meta}), jobflow_uids=jobflow_uids):
            self.kube.remove_finalizer(raw, RECORD_FINALIZER)
