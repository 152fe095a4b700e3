"""The imperative shell around the pure planner: read the truth, plan, act, write the status once.

One reconcile of a JobFlow:

1. read: the JobFlow (GET, or taken from a LIST just made), its vcjobs (one LIST by the createdByJobFlow label)
   and only the JobTemplates the plan needs now (usually none);
2. plan (``jobflow_core.plan``: pure, no I/O);
3. act: create vcjobs (a 409 AlreadyExists means another handler was faster, or a foreign vcjob holds the
   name: that vcjob is read and the plan redone, so the planner can tell which), delete vcjobs, then write the
   status with the resourceVersion read in step 1, and only if it changed;
4. a 409 on the status write means someone else wrote in between: start again from step 1 (bounded).

Events are recorded only after the status write succeeded, so a retried reconcile never repeats them, and the
JobTemplates whose vcjobs came or went get their ``jobDependsOnList`` refreshed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from jobflow_core import network_checks_needed, plan, templates_needed
from jobflow_core.models import JobFlow, JobFlowPhase, JobTemplate, RetainPolicy, VcJob
from jobflow_core.naming import (
    CREATED_BY_JOBFLOW,
    CREATED_BY_JOBTEMPLATE,
    RECORD_FINALIZER,
    has_record_finalizer,
    is_owned_by,
    jobflow_label_value,
)
from jobflow_core.templates import template_status, template_status_changed

from handlers.kube import Conflict, KubeApi, Rejected
from handlers.probing import Prober

log = logging.getLogger("handlers.reconciler")

MAX_ATTEMPTS = 5


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


class Reconciler:
    def __init__(self, kube: KubeApi, *, clock: Callable[[], datetime], recheck_seconds: int = 10,
                 probe_timeout: float = 1.0) -> None:
        self.kube, self.clock, self.recheck_seconds = kube, clock, recheck_seconds
        self.prober = Prober(kube, timeout=probe_timeout)

    def jobflow(self, namespace: str, name: str, *, known: dict | None = None) -> Outcome:
        """Reconcile one JobFlow; ``known`` is a copy of it just read from the API server, if there is one."""
        outcome = Outcome(jobflow=f"{namespace}/{name}")
        raw = known
        holders: dict[str, VcJob] = {}  # vcjobs found holding a name we tried to create
        rejections: dict[str, str] = {}  # flow -> why the API server refused its vcjob
        for attempt in range(1, MAX_ATTEMPTS + 1):
            outcome.attempts = attempt
            if raw is None:
                raw = self.kube.get_jobflow(namespace, name)
            if raw is None:
                outcome.found = False
                return outcome
            try:
                self._once(raw, outcome, holders, rejections)
                return outcome
            except _Refused as refused:
                # Plan again with the refusal, so the status says why the flow does not start.
                rejections[refused.flow] = refused.message
                raw = None
            except Conflict as conflict:
                log.info("%s: %s (attempt %d); re-reading", outcome.jobflow, conflict, attempt)
                raw = None
        raise Conflict(f"JobFlow {namespace}/{name} kept changing during {MAX_ATTEMPTS} attempts; retry later")

    def _once(self, raw: dict, outcome: Outcome, holders: dict[str, VcJob], rejections: dict[str, str]) -> None:
        flow = JobFlow.model_validate(raw)
        label = f"{CREATED_BY_JOBFLOW}={jobflow_label_value(namespace=flow.namespace, jobflow=flow.name)}"
        listed = {j.name: j for j in map(VcJob.model_validate, self.kube.list_vcjobs(flow.namespace, label))}
        jobs = list((holders | listed).values())
        probe_results = self.prober.run(network_checks_needed(flow, jobs=jobs))
        templates: dict[str, JobTemplate] = {}
        for name in templates_needed(flow, jobs=jobs, probe_results=probe_results):
            found = self.kube.get_jobtemplate(flow.namespace, name)
            if found is not None:
                templates[name] = JobTemplate.model_validate(found)

        now = self.clock()
        result = plan(flow, templates=templates, jobs=jobs, now=now, probe_results=probe_results,
                      recheck_seconds=self.recheck_seconds, rejections=rejections)
        touched_templates: set[str] = set()
        for manifest, created_event in zip(result.creates, result.create_events, strict=True):
            job_name = manifest["metadata"]["name"]
            try:
                created = self.kube.create_vcjob(manifest)
            except Rejected as rejected:
                raise _Refused(_template_of(manifest["metadata"]["labels"], flow.namespace), str(rejected)) from rejected
            if not created:
                # Someone holds the name: a concurrent handler (then the next LIST has it) or a vcjob that is not
                # ours (the LIST by our label misses it): read it, so the re-plan can tell which.
                holder = self.kube.get_vcjob(flow.namespace, job_name)
                if holder is not None:
                    holders[job_name] = VcJob.model_validate(holder)
                raise Conflict(f"vcjob {job_name} already exists")
            outcome.created.append(job_name)
            touched_templates.add(_template_of(manifest["metadata"]["labels"], flow.namespace))
            self.kube.record_event(raw, type_=created_event.type, reason=created_event.reason,
                                   message=created_event.message, now=now)
        for job_name in result.deletes:
            self.kube.delete_vcjob(flow.namespace, job_name)
            outcome.deleted.append(job_name)
        touched_templates.update(_template_of(job.metadata.labels, flow.namespace)
                                 for job in jobs if job.name in result.deletes)

        outcome.phase = result.status.state.phase if result.status.state else None
        if result.status_changed:
            self.kube.replace_jobflow_status({**raw, "status": result.status.to_wire()})
            outcome.status_written = True
            for event in result.events:
                self.kube.record_event(raw, type_=event.type, reason=event.reason, message=event.message, now=now)
        # Only now is every deleted vcjob's record safe in the status: let them go. Deleting vcjobs of an earlier
        # JobFlow of the same name (the garbage collector removes them) are let go too: their owner is gone.
        by_name = {job.name: job for job in jobs}
        orphans = [job.name for job in jobs if job.metadata.deletion_timestamp is not None
                   and has_record_finalizer(job) and not is_owned_by(job, flow)]
        for job_name in [*result.releases, *orphans]:
            self.kube.remove_finalizer(by_name[job_name].to_wire(), RECORD_FINALIZER)
            outcome.released.append(job_name)
        for template in sorted(t for t in touched_templates if t):
            self.jobtemplate(flow.namespace, template)

    def jobtemplate(self, namespace: str, name: str) -> bool:
        """Refresh ``status.jobDependsOnList`` of a JobTemplate; True when it was written."""
        for _ in range(MAX_ATTEMPTS):
            raw = self.kube.get_jobtemplate(namespace, name)
            if raw is None:
                return False
            template = JobTemplate.model_validate(raw)
            label = f"{CREATED_BY_JOBTEMPLATE}={namespace}.{name}"
            jobs = [VcJob.model_validate(j) for j in self.kube.list_vcjobs(namespace, label)]
            status = template_status(template, jobs=jobs)
            if not template_status_changed(template, status):
                return False
            try:
                self.kube.replace_jobtemplate_status({**raw, "status": status.to_wire()})
                return True
            except Conflict:
                continue
        raise Conflict(f"JobTemplate {namespace}/{name} kept changing; retry later")

    def jobflows_using(self, namespace: str, template: str) -> list[Outcome]:
        """A JobTemplate appeared or changed: reconcile the JobFlows of its namespace whose flow of that name has
        no vcjob yet. (A flow that already has one is not affected by its template any more; this also keeps our
        own writes of the template's status from setting off a reconcile of every JobFlow that uses it.)"""
        return [self.jobflow(namespace, raw["metadata"]["name"], known=raw)
                for raw in self.kube.list_jobflows(namespace) if _waits_for_template(raw, template)]

    def jobflows_of_vcjob(self, namespace: str, name: str, payload: dict | None, *,
                          membership_changed: bool) -> list[Outcome]:
        """A vcjob changed: reconcile the JobFlow that controls it.

        The event's payload (Resource mode) may name the owner; it is only a hint for *which* JobFlow to
        re-read. Without one (Reference mode, or a delete), the namespace's JobFlows are listed and those
        whose flows would have a vcjob of that name are reconciled: one LIST that also serves as their read.
        When a vcjob appeared or went (``membership_changed``), its JobTemplate's list is refreshed too.
        """
        owner = _owner_name(payload)
        listed = self.kube.list_jobflows(namespace)
        candidates = [raw for raw in listed if (raw["metadata"]["name"] == owner) or (
            owner is None and any(f"{raw['metadata']['name']}-{f.get('name')}" == name
                                  for f in (raw.get("spec") or {}).get("flows") or []))]
        if not candidates:
            self._release_orphan(self.kube.get_vcjob(namespace, name))
        outcomes = [self.jobflow(namespace, raw["metadata"]["name"], known=raw) for raw in candidates]
        for raw in candidates if membership_changed else []:
            for f in (raw.get("spec") or {}).get("flows") or []:
                if f"{raw['metadata']['name']}-{f.get('name')}" == name:
                    self.jobtemplate(namespace, f["name"])
        return outcomes

    def resync(self) -> list[Outcome]:
        """Reconcile every JobFlow that can still change, and let go of vcjobs whose JobFlow is gone (the safety
        net for lost events)."""
        listed = self.kube.list_jobflows()
        outcomes = [self.jobflow(raw["metadata"]["namespace"], raw["metadata"]["name"], known=raw)
                    for raw in listed if not _settled(raw)]
        alive = {raw["metadata"]["uid"] for raw in listed}
        for job in self.kube.list_all_vcjobs(CREATED_BY_JOBFLOW):
            owners = {ref.get("uid") for ref in job["metadata"].get("ownerReferences") or [] if ref.get("controller")}
            if not owners & alive:
                self._release_orphan(job)
        return outcomes

    def _release_orphan(self, raw: dict | None) -> None:
        """A vcjob held by our finalizer and being deleted, with no JobFlow left to record it: let it go."""
        if raw is None:
            return
        job = VcJob.model_validate(raw)
        if job.metadata.deletion_timestamp is not None and has_record_finalizer(job):
            self.kube.remove_finalizer(raw, RECORD_FINALIZER)


class _Refused(Exception):
    def __init__(self, flow: str, message: str) -> None:
        super().__init__(message)
        self.flow, self.message = flow, message


def _waits_for_template(raw: dict, template: str) -> bool:
    """Whether a JobFlow has a flow named ``template`` that has not got its vcjob yet (as far as its status says;
    a JobFlow without a status has not been planned at all)."""
    if not any(f.get("name") == template for f in (raw.get("spec") or {}).get("flows") or []):
        return False
    status = raw.get("status")
    if not status:
        return True
    return any(w.get("name") == template for w in status.get("waitingFlows") or [])


def _owner_name(payload: dict | None) -> str | None:
    if not payload:
        return None
    for ref in (payload.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") == "JobFlow" and ref.get("controller"):
            return ref.get("name")
    return None


def _template_of(labels: dict[str, str] | None, namespace: str) -> str:
    """The flow (and JobTemplate) name a vcjob was made for, from its createdByJobTemplate label ("" if none)."""
    value = (labels or {}).get(CREATED_BY_JOBTEMPLATE, "")
    prefix = f"{namespace}."
    return value[len(prefix):] if value.startswith(prefix) else ""


def _settled(raw: dict) -> bool:
    """A Succeed JobFlow that keeps its jobs cannot change any more; everything else is worth a look."""
    flow = JobFlow.model_validate(raw)
    phase = flow.status.state.phase if flow.status and flow.status.state else None
    return phase is JobFlowPhase.SUCCEED and flow.spec.job_retain_policy is not RetainPolicy.DELETE
