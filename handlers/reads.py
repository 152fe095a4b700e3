"""The read step of a reconcile: the JobFlow and its vcjobs, where they come from, and how fresh they are.

Three sources, in the order they are preferred:

* **the event's snapshot** (:mod:`jobflow_core.routing.snapshots`), when the event source signed it: no request at all
  (for a JobFlow that has not started, it also carries the line of the Volcano queues, :attr:`Read.line`);
* **a JobFlow just read by a LIST** (a resync's, a JobTemplate event's), handed in as ``known``; its vcjobs are
  listed after it;
* **the API server**: the vcjobs are listed *before* the JobFlow is read, so that a vcjob missing from the list was
  never created, or its end was recorded before the JobFlow was read (the engine records a vcjob's end before it
  deletes it or lets it go).

Only the last gives a JobFlow read that is newer than its vcjob list (:attr:`Read.fresh`). A plan made from one of
the first two creates a vcjob only after its guarded status write went through, or after :meth:`Reader.current`
showed the JobFlow has not changed since (``handlers/jobflows.py``; docs/architecture.md, "A finished step never
runs twice").

Then the observation gets what only live reads can give: the HTTP/TCP probes it asks for, the results (pods'
termination messages) its conditions need and the status does not hold yet, and the JobTemplates the decisions
need now (one LIST of the namespace's when three or more, else a GET each).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from handlers.kube import KubeApi
from handlers.probing import Prober
from jobflow_core import Observation, observe, templates_needed
from jobflow_core.flows.conditions import result_of_pods
from jobflow_core.flows.memo import Entry, entries_of
from jobflow_core.models import JobFlow, JobTemplate, VcJob
from jobflow_core.queueing.line import InLine, line_of_wire
from jobflow_core.vocabulary.api import MEMO_CACHE
from jobflow_core.vocabulary.naming import jobs_of_jobflow_selector, pods_of_job_selector

LIST_TEMPLATES_FROM = 3
"""A plan that needs this many JobTemplates or more reads them with one LIST of the namespace's, not a GET each."""


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
        if snapshot is not None:
            jobs = [VcJob.model_validate(job) for job in snapshot.get("vcjobs") or ()]
            line = snapshot.get("line")
            return Read(snapshot["jobflow"], {job.name: job for job in jobs}, Source.SNAPSHOT,
                        line=None if line is None else tuple(map(line_of_wire, line)))
        selector = jobs_of_jobflow_selector(namespace=namespace, jobflow=name)
        listed = {job.name: job for job in map(VcJob.model_validate, self.kube.list_vcjobs(namespace, selector))}
        raw = known if known is not None else self.kube.get_jobflow(namespace, name)
        return None if raw is None else Read(raw, listed, Source.KNOWN if known is not None else Source.API)

    def current(self, read: Read) -> dict | None:
        """The JobFlow as it is now (a GET), to check a read that is not :attr:`Read.fresh` before a create."""
        meta = read.raw["metadata"]
        return self.kube.get_jobflow(meta["namespace"], meta["name"])

    def observation(self, read: Read, *, holders: dict[str, VcJob], now: datetime) -> Observation:
        """The observation of ``read`` (with vcjobs found holding a name we tried, ``holders``), the probes run and
        the results read that it asks for."""
        jobflow = JobFlow.model_validate(read.raw)
        observation = observe(jobflow, jobs=list((holders | read.jobs).values()), now=now)
        checks = observation.network_checks()
        if checks:
            observation = observation.with_probe_results(self.prober.run(checks))
        needed = observation.results_needed()
        if needed:
            observation = observation.with_results({job: result_of_pods(self.kube.list_pods(
                jobflow.namespace, pods_of_job_selector(job=job))) for job in needed})
        return observation

    def templates(self, observation: Observation) -> dict[str, dict]:
        """The JobTemplates the plan needs, as read (their status is changed from these first)."""
        namespace = observation.jobflow.namespace
        needed = templates_needed(observation)
        if len(needed) >= LIST_TEMPLATES_FROM:  # typically a JobFlow's first plan, which reads every estimate
            listed = {raw["metadata"]["name"]: raw for raw in self.kube.list_jobtemplates(namespace)}
            return {name: listed[name] for name in needed if name in listed}
        return {name: found for name in needed if (found := self.kube.get_jobtemplate(namespace, name))}

    def memo(self, observation: Observation) -> dict[str, Entry] | None:
        """The namespace's memoized runs (jobflow_core.flows.memo), read only when a memoized flow may start now."""
        if not any(view.flow.memoize is not None for view in observation.candidates):
            return None
        found = self.kube.get_configmap(observation.jobflow.namespace, MEMO_CACHE)
        return entries_of((found or {}).get("data"))

    @staticmethod
    def models(templates: dict[str, dict]) -> dict[str, JobTemplate]:
        return {name: JobTemplate.model_validate(raw) for name, raw in templates.items()}
