"""The read step of a reconcile: the JobFlow and its vcjobs, where they come from, and how fresh they are.

Three sources, in the order they are preferred:

* **the event's snapshot** (:mod:`jobflow_core.routing.snapshots`), when the event source signed it: no request at all
  (for a JobFlow that has not started, it also carries the line of the Volcano queues, :attr:`Read.line`);
* **a JobFlow just read by a LIST** (a resync's, a JobTemplate event's), handed in as ``known``; its vcjobs are
  listed after it;
* **the API server**: the vcjobs are listed *before* the JobFlow is read, so that a vcjob missing from the list was
  never created, or its end was recorded before the JobFlow was read (the engine records a vcjob's end before it
  deletes it or lets it go).

A JobFlow with child flows (:mod:`jobflow_core.flows.children`) also has its children listed (the JobFlows labelled
with its name), each seen as a stand-in vcjob; a snapshot carries no children, so such a JobFlow is read from the API
server, and read again after its children were listed (one GET more: only parents pay it).

Only the last gives a JobFlow read that is newer than its vcjob list (:attr:`Read.fresh`). A plan made from one of
the first two creates a vcjob only after its guarded status write went through, or after :meth:`Reader.current`
showed the JobFlow has not changed since (``handlers/jobflows.py``; docs/architecture.md, "A finished step never
runs twice").

Then the shell reads exactly what :func:`jobflow_core.needs` says, stage by stage: what only live reads can give
(the HTTP/TCP probes, the results, pods' termination messages, the status does not hold yet), then the JobTemplates
the decisions need now (one LIST of the namespace's when three or more, else a GET each) and the memoized runs, then
the queues (``handlers/queues.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from handlers.kube import KubeApi
from handlers.probing import Prober
from jobflow_core import Needs, Observation, needs, observe
from jobflow_core.dag.awaits import Run, Seen, to_read
from jobflow_core.flows.children import as_job, makes_children
from jobflow_core.flows.conditions import result_of_pods
from jobflow_core.flows.memo import Entry, entries_of
from jobflow_core.models import JobFlow, JobTemplate, VcJob
from jobflow_core.queueing.line import InLine, line_of_wire
from jobflow_core.vocabulary.api import MEMO_CACHE
from jobflow_core.vocabulary.api import PARENT, RUN_OF
from jobflow_core.vocabulary.naming import jobs_of_jobflow_selector, pods_of_job_selector

if TYPE_CHECKING:
    from jobflow_core.models import JobFlowTemplate

LIST_TEMPLATES_FROM = 3
"""A plan that needs this many JobTemplates or more reads them with one LIST of the namespace's, not a GET each."""
LIVE_ROUNDS = 3
"""Live answers asked again at most this often: a probe's or a result's answer can make another flow a candidate
(a ``when`` skipping one branch), whose probes and results are then asked too."""


class Source(StrEnum):
    SNAPSHOT = "snapshot"
    KNOWN = "known"
    API = "api"


@dataclass(frozen=True)
class Read:
    raw: dict
    """The JobFlow as read (its resourceVersion guards the status write)."""
    jobs: dict[str, VcJob]
    """Its vcjobs, by name."""
    source: Source
    line: tuple[InLine, ...] | None = None
    """The JobFlows the queue's admission counts, as the snapshot carried them; None: not carried (the queue reader
    lists the JobFlows when it needs them, :mod:`handlers.queues`)."""

    @property
    def fresh(self) -> bool:
        """The JobFlow was read after its vcjobs were listed."""
        return self.source is Source.API


class Reader:
    def __init__(self, kube: KubeApi, *, probe_timeout: float) -> None:
        self.kube = kube
        self.prober = Prober(kube, timeout=probe_timeout)

    def jobflow(self, namespace: str, name: str, *, snapshot: dict | None = None,
                known: dict | None = None) -> Read | None:
        """The JobFlow and its vcjobs from the best source given; None when the JobFlow does not exist."""
        if snapshot is not None and not makes_children(snapshot["jobflow"]):
            jobs = [VcJob.model_validate(job) for job in snapshot.get("vcjobs") or ()]
            line = snapshot.get("line")
            return Read(snapshot["jobflow"], {job.name: job for job in jobs}, Source.SNAPSHOT,
                        line=None if line is None else tuple(map(line_of_wire, line)))
        selector = jobs_of_jobflow_selector(namespace=namespace, jobflow=name)
        listed = {job.name: job for job in map(VcJob.model_validate, self.kube.list_vcjobs(namespace, selector))}
        if known is not None and makes_children(known):
            listed |= self._children(namespace, name)
            return Read(known, listed, Source.KNOWN)
        raw = known if known is not None else self.kube.get_jobflow(namespace, name)
        if raw is not None and known is None and makes_children(raw):
            listed |= self._children(namespace, name)
            raw = self.kube.get_jobflow(namespace, name)  # newer than both lists
        return None if raw is None else Read(raw, listed, Source.KNOWN if known is not None else Source.API)

    def _children(self, namespace: str, name: str) -> dict[str, VcJob]:
        """The JobFlows labelled as children of ``name``, as stand-in vcjobs (ownership is checked by UID when
        observed)."""
        listed = self.kube.list_runs(namespace, f"{PARENT}={name}")
        return {child.name: child for child in (as_job(JobFlow.model_validate(raw)) for raw in listed)}

    def current(self, read: Read) -> dict | None:
        """The JobFlow as it is now (a GET), to check a read that is not :attr:`Read.fresh` before a create."""
        meta = read.raw["metadata"]
        return self.kube.get_jobflow(meta["namespace"], meta["name"])

    def observation(self, read: Read, *, holders: dict[str, VcJob], now: datetime) -> tuple[Observation, Needs]:
        """The observation of ``read`` (with vcjobs found holding a name we tried, ``holders``) with the live answers
        it needs (:func:`jobflow_core.needs`: the probes run, the results read), asked again of the observation with
        them until it needs none (at most :data:`LIVE_ROUNDS` times); and what it needs next."""
        jobflow = JobFlow.model_validate(read.raw)
        observation = observe(jobflow, jobs=list((holders | read.jobs).values()), now=now,
                              awaited=self.awaited(jobflow))
        need = needs(observation)
        for _ in range(LIVE_ROUNDS):
            if not need.live:
                break
            namespace = observation.jobflow.namespace
            observation = observation.with_answers(
                probe_results=self.prober.run(list(need.probes)) if need.probes else None,
                results={job: result_of_pods(self.kube.list_pods(namespace, pods_of_job_selector(job=job)))
                         for job in need.results})
            need = needs(observation)
        return observation, need

    def awaited(self, jobflow: JobFlow) -> Seen | None:
        """The other JobFlows ``jobflow`` waits for and has not seen end (:func:`jobflow_core.dag.awaits.to_read`): a
        GET each of those bound or named, a LIST of the runs of each template not bound yet; None when there are
        none (nothing read)."""
        wanted = to_read(jobflow) if jobflow.metadata.deletion_timestamp is None else None
        if not wanted:
            return None
        namespace = jobflow.namespace
        found = {name: self.kube.get_jobflow(namespace, name) for name in wanted.names}
        return Seen(jobflows={name: Run.of(raw) if raw is not None else None for name, raw in found.items()},
                    templates={template: tuple(map(Run.of, self.kube.list_runs(namespace, f"{RUN_OF}={template}")))
                               for template in wanted.templates})

    def flow_templates(self, namespace: str, need: Needs) -> dict[str, "JobFlowTemplate"]:
        """The JobFlowTemplates of the child flows ``need`` names (a GET each)."""
        from jobflow_core.models import JobFlowTemplate  # built on first use: most JobFlows have no child

        found = {name: self.kube.get_jobflowtemplate(namespace, name) for name in need.flow_templates}
        return {name: JobFlowTemplate.model_validate(raw) for name, raw in found.items() if raw is not None}

    def templates(self, namespace: str, need: Needs) -> dict[str, dict]:
        """The JobTemplates ``need`` names, as read (their status is changed from these first)."""
        if len(need.templates) >= LIST_TEMPLATES_FROM:  # typically a JobFlow's first plan, which reads every estimate
            listed = {raw["metadata"]["name"]: raw for raw in self.kube.list_jobtemplates(namespace)}
            return {name: listed[name] for name in need.templates if name in listed}
        return {name: found for name in need.templates if (found := self.kube.get_jobtemplate(namespace, name))}

    def memo(self, namespace: str, need: Needs) -> dict[str, Entry] | None:
        """The namespace's memoized runs (jobflow_core.flows.memo), read only when ``need`` says so."""
        if not need.memo:
            return None
        found = self.kube.get_configmap(namespace, MEMO_CACHE)
        return entries_of((found or {}).get("data"))

    @staticmethod
    def models(templates: dict[str, dict]) -> dict[str, JobTemplate]:
        return {name: JobTemplate.model_validate(raw) for name, raw in templates.items()}
