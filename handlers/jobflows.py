"""The imperative shell around the pure planner for one JobFlow: read, plan, act. It decides nothing of its own.

One reconcile, one attempt after another (at most :data:`MAX_ATTEMPTS`):

1. **read** (:mod:`handlers.reads`): the JobFlow and its vcjobs, from the event's signed snapshot or the API
   server; the probes, results and JobTemplates the observation asks for; the Volcano queues the vcjobs about to
   be created join (:mod:`handlers.queues`);
2. **plan**: ``jobflow_core.plan_observation`` (pure, no I/O);
3. **act**: carry out the plan's actions in order. Status writes go through :mod:`handlers.writes` (one conflict
   loop); the rest are single requests: create vcjobs (recording each creation event), abort vcjobs past a
   deadline (a Volcano Command), delete vcjobs and release finalizers (only after the status that records their
   end is written), and, once all is done, hand the status's notifications to the sink.

What sends a reconcile back to step 1, with what it learned kept in :class:`_Learned`: its status write lost a race
(:class:`~handlers.writes.Replan`; a snapshot older than the handler's own last write ends here too), a vcjob's
finalizers changed since they were listed, a create
answered AlreadyExists (the holder is read, so the planner can tell whose it is), a create refused (Volcano's
webhook, an admission policy: the planner then says why the flow does not start), or a plan made from a JobFlow
read before its vcjobs that would create a vcjob while the JobFlow changed since (see :mod:`handlers.reads`).
Which JobFlows an event concerns is decided in :mod:`handlers.dispatch`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import takewhile

from apiclient.rest import Conflict, Exists, Rejected
from handlers import metrics
from handlers.kube import KubeApi
from handlers.notify import Notifier
from handlers.queues import QueueReader
from handlers.reads import Read, Reader, Source
from handlers.writes import Replan, Writes
from jobflow_core import Abort, Create, Delete, Event, PatchChild, Plan, Relabel, Release, UpdateTemplate, WriteStatus
from jobflow_core import Memoize, plan_observation
from jobflow_core.flows.children import as_job
from jobflow_core.flows.gates import Answer
from jobflow_core.models import JobFlow, JobFlowPhase, VcJob
from jobflow_core.planning import notifications
from jobflow_core.queueing.line import in_line
from jobflow_core.queueing.wake import Freed, freed
from jobflow_core.routing.concerns import controller_name
from jobflow_core.vocabulary.api import JOBFLOW, RECORD_FINALIZER
from jobflow_core.vocabulary.phase import ENDED_PHASES, regresses

log = logging.getLogger("handlers.jobflows")

MAX_ATTEMPTS = 5


@dataclass
class Outcome:
    """What one reconcile did, for logs, tests, the benchmark and the reply to our event source."""

    jobflow: str
    found: bool = True
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    status_written: bool = False
    phase: str | None = None
    attempts: int = 0
    source: str = ""
    """Where the JobFlow that the last attempt planned from came from (:class:`handlers.reads.Source`)."""
    written: dict | None = None
    """The JobFlow as last written (for our event source's cache: its next snapshot must not predate it)."""
    freed: list[Freed] = field(default_factory=list)
    """The room its status writes left in Volcano queues (:func:`jobflow_core.queueing.wake.freed`): the JobFlows
    waiting there may start now."""
    ended: bool = False
    """Its status write recorded the end (``Succeed`` or ``Failed`` over a phase that was neither): the JobFlows
    waiting for it are woken (:meth:`handlers.dispatch.Dispatcher._waiters`)."""
    parent: str | None = None
    """The JobFlow that controls this one, for a child JobFlow (:mod:`jobflow_core.flows.children`): what the child
    did is its parent's to plan from next."""


@dataclass
class _Learned:
    """What earlier attempts of one reconcile found out, for the next attempt's plan."""

    holders: dict[str, VcJob] = field(default_factory=dict)
    """vcjobs found holding a name we tried to create (the label LIST misses one that is not ours)."""
    rejections: dict[str, str] = field(default_factory=dict)
    """flow -> why the API server refused its vcjob."""


class Reconciler:
    def __init__(self, kube: KubeApi, *, clock: Callable[[], datetime], recheck_seconds: int = 10,
                 probe_timeout: float = 1.0, notifier: Notifier | None = None, namespaces: tuple[str, ...] = (),
                 writes: Writes | None = None) -> None:
        self.kube, self.clock, self.recheck_seconds = kube, clock, recheck_seconds
        self.namespaces = namespaces  # served; empty: every namespace (the resync's lists are cluster-wide)
        self.reader = Reader(kube, probe_timeout=probe_timeout)
        self.queues = QueueReader(kube, namespaces=namespaces)
        self.notifier, self.writes = notifier, writes or Writes()

    def jobflow(self, namespace: str, name: str, *, known: dict | None = None,
                snapshot: dict | None = None, answers: Mapping[str, Answer] | None = None) -> Outcome:
        """Reconcile one JobFlow; ``known`` is a copy of it just read by a LIST, ``snapshot`` a signed snapshot the
        event carried (:mod:`handlers.reads`). Only the first attempt uses them. ``answers``: an approval gate's
        answer from a CloudEvent the shell accepted (:mod:`handlers.approvals`), offered to every attempt."""
        outcome = Outcome(jobflow=f"{namespace}/{name}")
        learned = _Learned()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            outcome.attempts = attempt
            read = self.reader.jobflow(namespace, name, snapshot=snapshot, known=known)
            snapshot = known = None
            if read is None:
                outcome.found = False
                return outcome
            outcome.source = read.source
            outcome.parent = controller_name(read.raw)
            try:
                self._attempt(read, outcome, learned, answers=answers or {})
                if read.source is Source.SNAPSHOT:
                    metrics.SNAPSHOTS.labels("used").inc()
                return outcome
            except Replan as why:
                if read.source is Source.SNAPSHOT:
                    metrics.SNAPSHOTS.labels("stale").inc()
                log.info("%s: %s (attempt %d); re-reading", outcome.jobflow, why, attempt)
        raise Conflict(f"JobFlow {namespace}/{name} kept changing during {MAX_ATTEMPTS} attempts; retry later")

    def _attempt(self, read: Read, outcome: Outcome, learned: _Learned, *, answers: Mapping[str, Answer]) -> None:
        now = self.clock()
        observation, need = self.reader.observation(read, holders=learned.holders, now=now)
        namespace = observation.jobflow.namespace
        templates = self.reader.templates(namespace, need)
        models = self.reader.models(templates)
        flow_templates = self.reader.flow_templates(namespace, need) if need.flow_templates else None
        plan = plan_observation(observation, templates=models, recheck_seconds=self.recheck_seconds,
                                rejections=learned.rejections, notify=self.notifier is not None,
                                memo=self.reader.memo(namespace, need),
                                queues=self.queues.views(observation, need.queues(models), line=read.line),
                                answers=answers, flow_templates=flow_templates)
        held = {n.id for n in notifications.pending(observation.jobflow.status)} if self.notifier else set()
        self._act(read, plan, outcome, learned, now=now, templates=templates, held=held)

    def _act(self, read: Read, plan: Plan, outcome: Outcome, learned: _Learned, *, now: datetime,
             templates: dict[str, dict], held: set[str]) -> None:
        """Carry out ``plan``; ``templates`` as read for it, ``held`` the ids of the notifications its status held
        when read (:meth:`_notify`)."""
        raw, namespace = read.raw, read.raw["metadata"]["namespace"]
        outcome.phase = plan.status.state.phase if plan.status.state else None
        guarded = read.fresh  # may a vcjob be created on this read? (see handlers.reads)
        for action in plan.actions:
            match action:
                case Relabel(labels=labels):
                    try:
                        raw = self.kube.label_jobflow(namespace, raw["metadata"]["name"], labels,
                                                      resource_version=raw["metadata"]["resourceVersion"])
                    except Conflict as lost:
                        raise Replan(f"the JobFlow changed before its labels were written: {lost}") from lost
                    outcome.written = raw
                    if any(value is not None for value in labels.values()):
                        # What it waits for was read before the label existed: an end in between found nobody to
                        # wake. Planned again, it is read after (jobflow_core.dag.awaits, "Waking").
                        raise Replan("wait labels written; reading what it waits for again")
                    read = Read(raw, read.jobs, read.source, line=read.line)
                case UpdateTemplate(name=name):
                    self.writes.template(self.kube, namespace, name, action.apply, read=templates.pop(name, None))
                case Memoize(key=key, entry=entry):
                    self.writes.memo(self.kube, namespace, key, entry)
                case WriteStatus(status=status, events=events, rerun_accepted=rerun_accepted):
                    before = ((raw.get("status") or {}).get("state") or {}).get("phase")
                    after = status.state.phase if status.state else None
                    if regresses(before and JobFlowPhase(before), after, rerun_accepted=rerun_accepted):
                        log.error("%s: bug: a plan asked to write phase %s over %s without a rerun; refused (nothing "
                                  "else of this plan done)", outcome.jobflow, after, before)
                        return
                    read_raw, raw = raw, self.writes.planned(self.kube, raw, status)
                    outcome.written = raw
                    outcome.freed += freed(in_line(read_raw), in_line(raw))
                    outcome.status_written = guarded = True
                    outcome.ended = outcome.ended or (after in ENDED_PHASES and before not in ENDED_PHASES)
                    for event in events:
                        self._record(raw, event, now=now)
                    if status.deadline and status.deadline.state != \
                            ((read_raw.get("status") or {}).get("deadline") or {}).get("state"):
                        metrics.DEADLINE_CHANGES.labels(status.deadline.state).inc()
                case Create():
                    if not guarded:
                        current = self.reader.current(read)
                        if current is None or current["metadata"].get("resourceVersion") != \
                                raw["metadata"].get("resourceVersion"):
                            raise Replan("the JobFlow changed since it was read, and the plan creates a vcjob")
                        guarded = True
                    self._create(raw, action, learned, now=now)
                    outcome.created.append(action.job_name)
                case Abort(command=command, event=event):
                    self.kube.create_command(command)
                    self._record(raw, event, now=now)
                case PatchChild(name=child, patch=patch, event=event):
                    self.kube.patch_jobflow(namespace, child, patch)
                    if event is not None:
                        self._record(raw, event, now=now)
                case Delete(job_name=job_name, child=child):
                    (self.kube.delete_jobflow if child else self.kube.delete_vcjob)(namespace, job_name)
                    outcome.deleted.append(job_name)
                case Release(job=job):
                    try:
                        self.kube.remove_finalizer(job.to_wire(), RECORD_FINALIZER)
                    except Conflict as lost:  # its finalizers changed since the list (e.g. the GC's foreground one)
                        raise Replan(f"vcjob {job.name}: {lost}") from lost
                    outcome.released.append(job.name)
        self._notify(raw, outcome, held=held, now=now)

    def _create(self, raw: dict, action: Create, learned: _Learned, *, now: datetime) -> None:
        namespace = raw["metadata"]["namespace"]
        child = action.manifest.get("kind") == JOBFLOW.kind  # a child JobFlow (jobflow_core.flows.children)
        what = "child JobFlow" if child else "vcjob"
        try:
            (self.kube.create_jobflow if child else self.kube.create_vcjob)(action.manifest)
        except Rejected as rejected:
            learned.rejections[action.flow] = str(rejected)
            raise Replan(f"{what} {action.job_name} refused: {rejected}") from rejected
        except Exists as exists:
            metrics.CONFLICTS.labels("jobflow" if child else "vcjob").inc()
            if child:
                holder = self.kube.get_jobflow(namespace, action.job_name)
                if holder is not None:
                    learned.holders[action.job_name] = as_job(JobFlow.model_validate(holder))
            elif (holder := self.kube.get_vcjob(namespace, action.job_name)) is not None:
                learned.holders[action.job_name] = VcJob.model_validate(holder)
            raise Replan(f"{what} {action.job_name} already exists") from exists
        if not child:
            metrics.VCJOBS_CREATED.inc()
        if action.ready_since is not None:
            metrics.DEPENDENCY_LATENCY.observe(max(0.0, (now - action.ready_since).total_seconds()))
        self._record(raw, action.event, now=now)

    def _record(self, raw: dict, event: Event, *, now: datetime) -> None:
        self.kube.record_event(raw, type_=event.type, reason=event.reason, message=event.message, now=now)

    def _notify(self, raw: dict, outcome: Outcome, *, held: set[str], now: datetime) -> None:
        """Send what the status as it now stands holds for the sink (only written transitions are there), then
        remove what the sink took (a change re-applied after a lost race; should that keep failing, a later
        reconcile sends them again, with the same ids).

        Notifications that another reconcile wrote (``held``: in the status read) less than
        :data:`~jobflow_core.planning.notifications.SENDER_GRACE_SECONDS` ago are left to it for now, in order: the one
        that wrote them is sending them at this moment, and a second sender would only duplicate them."""
        if self.notifier is None:
            return
        queued = list(takewhile(lambda n: notifications.due(n, now=now, ours=n.id not in held),
                                notifications.pending(JobFlow.model_validate(raw).status)))
        if not queued:
            return
        namespace, name = raw["metadata"]["namespace"], raw["metadata"]["name"]
        sent = self.notifier.send(namespace, name, queued)
        if not sent:
            return
        try:
            written = self.writes.flow_change(self.kube, namespace, name,
                                              lambda flow: notifications.delivered(flow.status, sent), read=raw)
        except Conflict:
            log.info("%s/%s: notifications sent, but their removal kept losing races; they go out again later",
                     namespace, name)
            return
        outcome.written = written if written is not None else outcome.written
