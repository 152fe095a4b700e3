"""The imperative shell around the pure planner: read, plan, act. It decides nothing of its own.

One reconcile of a JobFlow, one attempt after another (at most :data:`MAX_ATTEMPTS`):

1. read: the JobFlow's vcjobs (one LIST by the createdByJobFlow label), then the JobFlow (GET, or taken from a
   LIST just made, confirmed by a GET before anything is created), the HTTP/TCP probes the observation asks for, the results (pods' termination messages) its ``when``
   conditions need and the status does not hold yet, and only the JobTemplates the decisions need now;
2. plan: ``jobflow_core.plan_observation`` (pure, no I/O);
3. act: carry out the plan's actions in order: create vcjobs (recording each creation event), abort vcjobs past a
   deadline (a Volcano Command), write the status with the resourceVersion read in step 1 (never moving an ended
   JobFlow's phase back: :func:`jobflow_core.phase.regresses`), delete vcjobs and release finalizers (only now
   that their end is recorded), refresh JobTemplates.

Two answers of the API server start a new attempt, with what they taught kept in :class:`_Learned`: a create
answered 409 AlreadyExists (another handler was faster, or a foreign vcjob holds the name: that vcjob is read so
the planner can tell which) or a status write answered 409 Conflict (someone wrote in between); a create refused
as invalid (Volcano's webhook) is handed to the planner, whose status then says why the flow does not start.

Which JobFlows an event concerns is decided by :mod:`jobflow_core.routing`; names and label selectors come from
:mod:`jobflow_core.naming`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Iterable
from itertools import takewhile
from dataclasses import dataclass, field
from datetime import datetime

from kubernetes.client.rest import ApiException
from pydantic import ValidationError

from jobflow_core import (
    Abort,
    Create,
    Delete,
    Event,
    Observation,
    Plan,
    RecordRuns,
    RefreshTemplate,
    Release,
    WriteStatus,
)
from handlers import metrics
from handlers.notify import Notifier
from jobflow_core import notifications
from jobflow_core.run_stats import Run, record_runs
from jobflow_core import observe, plan_observation, templates_needed
from jobflow_core.api import RECORD_FINALIZER
from jobflow_core.models import JobFlow, JobFlowPhase, JobTemplate, VcJob
from jobflow_core.phase import regresses
from jobflow_core.conditions import result_of_pods
from jobflow_core.naming import (
    FLOW_JOBS_SELECTOR,
    jobs_of_jobflow_selector,
    jobs_of_template_selector,
    pods_of_job_selector,
)
from jobflow_core.routing import (can_change, controller_name, flows_of_job, jobflows_of_job, orphan_to_release,
                                  waits_for_template)
from jobflow_core.templates import template_status, template_status_changed, template_status_with

from handlers.kube import Conflict, KubeApi, Rejected, Unavailable
from handlers.probing import Prober

log = logging.getLogger("handlers.reconciler")

MAX_ATTEMPTS = 5
LIST_TEMPLATES_FROM = 3
"""A plan that needs this many JobTemplates or more reads them with one LIST of the namespace's, not a GET each."""


@dataclass
class Outcome:
    """What one reconcile did, for logs, tests and the benchmark."""

    jobflow: str
    found: bool = True
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    status_written: bool = False
    phase: str | None = None
    attempts: int = 0


@dataclass
class _Learned:
    """What earlier attempts of one reconcile found out, for the next attempt's plan."""

    holders: dict[str, VcJob] = field(default_factory=dict)
    """vcjobs found holding a name we tried to create (the label LIST misses one that is not ours)."""
    rejections: dict[str, str] = field(default_factory=dict)
    """flow -> why the API server refused its vcjob."""


class _Again(Exception):
    """The attempt must start over from a fresh read (what it learned is already recorded)."""


def _gone(error: ApiException) -> bool:
    """Whether the API server refused because the object or its namespace is gone or going: 404, or 403 with the
    cause ``NamespaceTerminating`` (no new content, not even an Event, in a namespace being deleted)."""
    if error.status == 404:
        return True
    try:
        causes = (json.loads(error.body or "{}").get("details") or {}).get("causes") or []
    except (ValueError, AttributeError):
        return False
    return error.status == 403 and any(isinstance(c, dict) and c.get("reason") == "NamespaceTerminating"
                                       for c in causes)


class PartlyFailed(RuntimeError):
    """Some of the JobFlows an event concerned could not be reconciled; the others were. ``failures`` maps each
    failed JobFlow (``namespace/name``) to why; ``retry`` says whether any failure was transient, so that
    delivering the event again can help."""

    def __init__(self, failures: dict[str, str], *, retry: bool) -> None:
        super().__init__("; ".join(f"JobFlow {name}: {why}" for name, why in failures.items()))
        self.failures, self.retry = failures, retry


class Reconciler:
    def __init__(self, kube: KubeApi, *, clock: Callable[[], datetime], recheck_seconds: int = 10,
                 probe_timeout: float = 1.0, notifier: Notifier | None = None,
                 namespaces: tuple[str, ...] = ()) -> None:
        self.kube, self.clock, self.recheck_seconds = kube, clock, recheck_seconds
        self.namespaces = namespaces  # served; empty: every namespace (the resync's lists are cluster-wide)
        self.prober = Prober(kube, timeout=probe_timeout)
        self.notifier = notifier

    def jobflow(self, namespace: str, name: str, *, known: dict | None = None) -> Outcome:
        """Reconcile one JobFlow; ``known`` is a copy of it just read from the API server, if there is one.

        Each attempt lists the JobFlow's vcjobs *before* it reads the JobFlow, so that a vcjob missing from the
        list is either one never created or one whose end the JobFlow read already records (the engine writes
        that record before it deletes a vcjob or lets it go: :mod:`jobflow_core.planner`). ``known`` was read
        before the list: a plan made from it that creates a vcjob is confirmed by a fresh read first."""
        outcome = Outcome(jobflow=f"{namespace}/{name}")
        learned = _Learned()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            outcome.attempts = attempt
            try:
                listed = self._list_jobs(namespace, name)
                raw = known if known is not None else self.kube.get_jobflow(namespace, name)
                if raw is None:
                    outcome.found = False
                    return outcome
                now = self.clock()
                plan, templates_read, held = self._plan_read(raw, listed, learned, now=now)
                if plan.creates and known is not None:
                    fresh = self.kube.get_jobflow(namespace, name)
                    if fresh is None:
                        outcome.found = False
                        return outcome
                    if fresh["metadata"].get("resourceVersion") != raw["metadata"].get("resourceVersion"):
                        raw = fresh
                        plan, templates_read, held = self._plan_read(raw, listed, learned, now=now)
                self._act(raw, plan, outcome, learned, now=now, templates_read=templates_read, held=held)
                return outcome
            except (_Again, Conflict) as reason:
                if isinstance(reason, Conflict):
                    metrics.CONFLICTS.labels("JobFlow").inc()
                log.info("%s: %s (attempt %d); re-reading", outcome.jobflow, reason, attempt)
                known = None
        raise Conflict(f"JobFlow {namespace}/{name} kept changing during {MAX_ATTEMPTS} attempts; retry later")

    def _list_jobs(self, namespace: str, name: str) -> dict[str, VcJob]:
        selector = jobs_of_jobflow_selector(namespace=namespace, jobflow=name)
        return {job.name: job for job in map(VcJob.model_validate, self.kube.list_vcjobs(namespace, selector))}

    def _plan_read(self, raw: dict, listed: dict[str, VcJob], learned: _Learned, *,
                   now: datetime) -> tuple[Plan, dict[str, dict], set[str]]:
        """The plan for the JobFlow ``raw`` and its ``listed`` vcjobs; the JobTemplates read for it; the ids of the
        notifications its status held (:meth:`_notify`)."""
        jobflow = JobFlow.model_validate(raw)
        observation = self._read(jobflow, listed, learned, now=now)
        plan, templates_read = self._plan(observation, learned)
        held = {n.id for n in notifications.pending(jobflow.status)} if self.notifier else set()
        return plan, templates_read, held

    def _read(self, jobflow: JobFlow, listed: dict[str, VcJob], learned: _Learned, *,
              now: datetime) -> Observation:
        """The observation: the JobFlow's vcjobs (and any name holder found earlier), with the probes run."""
        observation = observe(jobflow, jobs=list((learned.holders | listed).values()), now=now)
        checks = observation.network_checks()
        if checks:
            observation = observation.with_probe_results(self.prober.run(checks))
        needed = observation.results_needed()
        if needed:
            observation = observation.with_results({job: result_of_pods(self.kube.list_pods(
                jobflow.namespace, pods_of_job_selector(job=job))) for job in needed})
        return observation

    def _plan(self, observation: Observation, learned: _Learned) -> tuple[Plan, dict[str, dict]]:
        """The plan, and the JobTemplates read for it (as read: their status is updated from these first)."""
        namespace = observation.jobflow.namespace
        needed = templates_needed(observation)
        if len(needed) >= LIST_TEMPLATES_FROM:  # typically a JobFlow's first plan, which reads every estimate
            listed = {raw["metadata"]["name"]: raw for raw in self.kube.list_jobtemplates(namespace)}
            read = {name: listed[name] for name in needed if name in listed}
        else:
            read = {name: found for name in needed if (found := self.kube.get_jobtemplate(namespace, name))}
        templates = {name: JobTemplate.model_validate(found) for name, found in read.items()}
        return plan_observation(observation, templates=templates, recheck_seconds=self.recheck_seconds,
                                rejections=learned.rejections, notify=self.notifier is not None), read

    def _act(self, raw: dict, plan: Plan, outcome: Outcome, learned: _Learned, *, now: datetime,
             templates_read: dict[str, dict], held: set[str]) -> None:
        """Carry out ``plan`` on the JobFlow ``raw`` as read; ``held`` are the ids of the notifications its status
        held when read (:meth:`_notify`)."""
        namespace = raw["metadata"]["namespace"]
        outcome.phase = plan.status.state.phase if plan.status.state else None
        for action in plan.actions:
            match action:
                case Create():
                    self._create(raw, action, learned, now=now)
                    outcome.created.append(action.job_name)
                case Abort(command=command, event=event):
                    self.kube.create_command(command)
                    self._record(raw, event, now=now)
                case Delete(job_name=job_name):
                    self.kube.delete_vcjob(namespace, job_name)
                    outcome.deleted.append(job_name)
                case WriteStatus(status=status, events=events, rerun_accepted=rerun_accepted):
                    before = ((raw.get("status") or {}).get("state") or {}).get("phase")
                    after = status.state.phase if status.state else None
                    if regresses(before and JobFlowPhase(before), after, rerun_accepted=rerun_accepted):
                        log.error("%s: bug: a plan asked to write phase %s over %s without a rerun; refused (nothing "
                                  "else of this plan done)", outcome.jobflow, after, before)
                        return
                    raw = self.kube.replace_jobflow_status({**raw, "status": status.to_wire()})
                    metrics.STATUS_WRITES.inc()
                    outcome.status_written = True
                    for event in events:
                        self._record(raw, event, now=now)
                case Release(job=job):
                    self.kube.remove_finalizer(job.to_wire(), RECORD_FINALIZER)
                    outcome.released.append(job.name)
                case RecordRuns(template=template, runs=runs):
                    self._record_runs(namespace, template, runs)
                case RefreshTemplate(name=name, added=added, removed=removed):
                    self._update_template_list(namespace, name, added=added, removed=removed,
                                               read=templates_read.get(name))
        self._notify(raw, held=held, now=now)

    def _notify(self, raw: dict, *, held: set[str], now: datetime) -> None:
        """Send what the status as it now stands holds for the sink (only written transitions are there), then
        remove what the sink took (re-reading after a lost race; should that keep failing, a later reconcile sends
        them again, with the same ids).

        Notifications that another reconcile wrote (``held``: in the status read) less than
        :data:`~jobflow_core.notifications.SENDER_GRACE_SECONDS` ago are left to it for now, in order: the one that
        wrote them is sending them at this moment, and a second sender would only duplicate them."""
        if self.notifier is None:
            return
        status = JobFlow.model_validate(raw).status
        queued = list(takewhile(lambda n: notifications.due(n, now=now, ours=n.id not in held),
                                notifications.pending(status)))
        if not queued:
            return
        namespace, name = raw["metadata"]["namespace"], raw["metadata"]["name"]
        sent = self.notifier.send(namespace, name, queued)
        for _ in range(MAX_ATTEMPTS if sent else 0):  # remove what was sent, re-reading after a lost race
            status = JobFlow.model_validate(raw).status
            drained = notifications.delivered(status, sent)
            if drained == status:
                return
            try:
                self.kube.replace_jobflow_status({**raw, "status": drained.to_wire()})
                metrics.STATUS_WRITES.inc()
                return
            except Conflict:
                metrics.CONFLICTS.labels("JobFlow").inc()
                raw = self.kube.get_jobflow(namespace, name)
                if raw is None:
                    return
        if sent:
            log.info("%s/%s: notifications sent, but their removal kept losing races; they go out again later",
                     namespace, name)

    def _create(self, raw: dict, action: Create, learned: _Learned, *, now: datetime) -> None:
        namespace = raw["metadata"]["namespace"]
        try:
            created = self.kube.create_vcjob(action.manifest)
        except Rejected as rejected:
            learned.rejections[action.flow] = str(rejected)
            raise _Again(f"vcjob {action.job_name} refused: {rejected}") from rejected
        if not created:
            metrics.CONFLICTS.labels("vcjob").inc()
            holder = self.kube.get_vcjob(namespace, action.job_name)
            if holder is not None:
                learned.holders[action.job_name] = VcJob.model_validate(holder)
            raise _Again(f"vcjob {action.job_name} already exists")
        metrics.VCJOBS_CREATED.inc()
        if action.ready_since is not None:
            metrics.DEPENDENCY_LATENCY.observe(max(0.0, (now - action.ready_since).total_seconds()))
        self._record(raw, action.event, now=now)

    def _record(self, raw: dict, event: Event, *, now: datetime) -> None:
        self.kube.record_event(raw, type_=event.type, reason=event.reason, message=event.message, now=now)

    def _record_runs(self, namespace: str, name: str, runs: tuple[Run, ...]) -> None:
        """Count ended vcjobs in their JobTemplate's statistics; a run already counted is not counted again."""
        for _ in range(MAX_ATTEMPTS):
            raw = self.kube.get_jobtemplate(namespace, name)
            if raw is None:
                return
            template = JobTemplate.model_validate(raw)
            status = record_runs(template.status, runs)
            if status == template.status:
                return
            try:
                self.kube.replace_jobtemplate_status({**raw, "status": status.to_wire()})
                return
            except Conflict:
                continue
        raise Conflict(f"JobTemplate {namespace}/{name} kept changing; retry later")

    def _update_template_list(self, namespace: str, name: str, *, added: tuple[str, ...], removed: tuple[str, ...],
                              read: dict | None) -> None:
        """Apply vcjobs created and deleted to a JobTemplate's ``jobDependsOnList``, starting from ``read`` (the
        template as just read for the plan, if it was), re-reading after a lost race."""
        raw = read
        for _ in range(MAX_ATTEMPTS):
            raw = raw if raw is not None else self.kube.get_jobtemplate(namespace, name)
            if raw is None:
                return
            template = JobTemplate.model_validate(raw)
            status = template_status_with(template, added=added, removed=removed)
            if not template_status_changed(template, status):
                return
            try:
                self.kube.replace_jobtemplate_status({**raw, "status": status.to_wire()})
                return
            except Conflict:
                raw = None
        raise Conflict(f"JobTemplate {namespace}/{name} kept changing; retry later")

    def jobtemplate(self, namespace: str, name: str) -> bool:
        """Refresh ``status.jobDependsOnList`` of a JobTemplate; True when it was written."""
        for _ in range(MAX_ATTEMPTS):
            raw = self.kube.get_jobtemplate(namespace, name)
            if raw is None:
                return False
            template = JobTemplate.model_validate(raw)
            selector = jobs_of_template_selector(namespace=namespace, template=name)
            status = template_status(template, jobs=map(VcJob.model_validate, self.kube.list_vcjobs(namespace,
                                                                                                    selector)))
            if not template_status_changed(template, status):
                return False
            try:
                self.kube.replace_jobtemplate_status({**raw, "status": status.to_wire()})
                return True
            except Conflict:
                continue
        raise Conflict(f"JobTemplate {namespace}/{name} kept changing; retry later")

    def each(self, listed: Iterable[dict]) -> list[Outcome]:
        """Reconcile each of ``listed`` (JobFlows just read) on its own: one that fails does not keep the others
        from being reconciled; the failures are raised together at the end (:class:`PartlyFailed`)."""
        outcomes, failures, retry = [], {}, False
        for raw in listed:
            namespace, name = raw["metadata"]["namespace"], raw["metadata"]["name"]
            try:
                outcomes.append(self.jobflow(namespace, name, known=raw))
                continue
            except (Conflict, Unavailable) as error:
                failures[f"{namespace}/{name}"], retry = str(error), True
                continue
            except ApiException as error:
                if _gone(error):  # the JobFlow, or its whole namespace, went while we worked: nothing to do
                    log.info("JobFlow %s/%s went during its reconcile: %s", namespace, name, error.reason)
                    continue
                why = f"the API server answered {error.status} {error.reason}: {error.body or ''}"[:512]
            except ValidationError as error:
                why = f"an object does not match the JobFlow API: {error.errors()[:3]}"
            failures[f"{namespace}/{name}"] = why
            self._tell(raw, f"cannot reconcile: {why}; fix the object or the cluster, the engine tries again on the "
                            "next change or resync")
        if failures:
            log.warning("reconciled %d JobFlow(s); %d failed: %s", len(outcomes), len(failures), failures)
            raise PartlyFailed(failures, retry=retry)
        return outcomes

    def _tell(self, raw: dict, message: str) -> None:
        """A Warning Event on a JobFlow that could not be reconciled (its status may be what cannot be written)."""
        try:
            self.kube.record_event(raw, type_="Warning", reason="ReconcileFailed", message=message, now=self.clock())
        except (ApiException, Conflict, Unavailable) as error:
            log.warning("could not record the failure on JobFlow %s: %s", raw["metadata"].get("name"), error)

    def jobflows_using(self, namespace: str, template: str) -> list[Outcome]:
        """A JobTemplate appeared or changed: reconcile the JobFlows still waiting for it."""
        return self.each(raw for raw in self.kube.list_jobflows(namespace) if waits_for_template(raw, template))

    def jobflows_of_vcjob(self, namespace: str, name: str, *, controller: str | None,
                          deleted: bool) -> list[Outcome]:
        """A vcjob changed: reconcile the JobFlow(s) it concerns, and when it went, take it off the lists of the
        JobTemplates that name it, whatever became of its JobFlow (when it came, the reconcile that created it
        added it). A vcjob no JobFlow claims is let go if it waits for our finalizer.

        Finding the JobFlow costs one GET when the event names it (``controller``: our event source's extension, or
        a Resource-mode payload's ownerReference) and the vcjob still exists, else a GET of the vcjob to read its
        controller; only a vcjob that is gone, or whose hint is wrong, costs a LIST of the namespace's JobFlows."""
        candidates = self._claimants(namespace, name, controller=controller)
        if not candidates:
            self._release_orphan(self.kube.get_vcjob(namespace, name), jobflow_uids=())
        outcomes = self.each(candidates)
        if deleted and self.kube.get_vcjob(namespace, name) is None:
            for raw in self.kube.list_jobtemplates(namespace):
                if name in ((raw.get("status") or {}).get("jobDependsOnList") or ()):
                    self._update_template_list(namespace, raw["metadata"]["name"], added=(), removed=(name,),
                                               read=raw)
        return outcomes

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

    def resync(self) -> list[Outcome]:
        """Reconcile every JobFlow that can still change, and let go of vcjobs whose JobFlow is gone (the safety
        net for lost events)."""
        scopes: tuple[str | None, ...] = self.namespaces or (None,)
        listed = [raw for scope in scopes for raw in self.kube.list_jobflows(scope)]
        alive = {raw["metadata"].get("uid") for raw in listed}
        for job in (job for scope in scopes for job in self.kube.list_vcjobs(scope, FLOW_JOBS_SELECTOR)):
            self._release_orphan(job, jobflow_uids=alive)
        return self.each(raw for raw in listed if can_change(raw))

    def _release_orphan(self, raw: dict | None, *, jobflow_uids: Collection[str]) -> None:
        if raw is not None and orphan_to_release(VcJob.model_validate(raw), jobflow_uids=jobflow_uids):
            self.kube.remove_finalizer(raw, RECORD_FINALIZER)
