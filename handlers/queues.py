"""The read step's part for queues: the Volcano queues a plan's vcjobs would join, and the JobFlows in line.

Only a plan that would create vcjobs asks (:meth:`jobflow_core.Needs.queues`). For each queue it joins:

* **capacity**: the Queue's ``spec.capability`` (then the nodes are not read); without one, every ready,
  schedulable node's allocatable added up; without either (no such Queue, or the engine may not read Queues or
  Nodes, as the namespaced install may not), unknown, and then nothing is held back (:mod:`jobflow_core.queueing.line`);
* **the line**: the other JobFlows, for a JobFlow that has not started yet and would start now (only it can be held
  back), and only when a queue it joins has a known capacity (otherwise nothing is held back: the line could change
  no answer). Taken from the event's snapshot when it carries one (our event source keeps every JobFlow's place in
  line from its watch, :mod:`apiclient.watch_cache`); else listed: the JobFlows the engine serves (every namespace, or
  those it is limited to);
* **the PriorityClass** ``volcano-jobflow-started``: whether it is installed (a vcjob naming a PriorityClass that
  does not exist would get no pods at all: Kubernetes refuses them).

What changes slowly (the Queue, the nodes, the PriorityClass) is kept :data:`CACHE_SECONDS` per process (per API
client: the routes make a reader per request); the line is never kept: it decides, so it is the event's (as new as
the event source's watch) or listed afresh.

So a JobFlow's first reconcile from a snapshot costs no request for the line, and, within :data:`CACHE_SECONDS` of
another reconcile in the same process, none for the queue either (``tests/unit/test_queue_reads.py`` pins the
count); without a snapshot (Knative's ApiServerSource) it costs one LIST of JobFlows when a capacity is known.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence


from apiclient.rest import ApiError
from handlers.kube import KubeApi
from jobflow_core.planning.observation import Observation
from jobflow_core.queueing.line import (AT_RISK_PRIORITY_CLASS, PRIORITY_CLASS, InLine, QueueView, capability_of,
                                        in_line, nodes_capacity)
from jobflow_core.vocabulary import resources

log = logging.getLogger("handlers.queues")

CACHE_SECONDS = 5.0
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""API client -> {what: (when read, value)}: gone with its client."""
_CACHE_LOCK = threading.Lock()


class QueueReader:
    def __init__(self, kube: KubeApi, *, namespaces: tuple[str, ...] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.kube, self.namespaces, self.clock = kube, namespaces, clock
        self._client = getattr(kube, "api", kube)

    def views(self, observation: Observation, names: Sequence[str], *,
              line: tuple[InLine, ...] | None = None) -> dict[str, QueueView]:
        """The queues ``names`` (those the plan's vcjobs join: :meth:`jobflow_core.Needs.queues`); ``line``: the
        JobFlows in line as the event carried them (None: list them if the line can matter)."""
        if not names:
            return {}
        capacities = {name: self._cached(f"queue/{name}", lambda: self._capacity(name)) for name in names}
        if observation.starts_nothing or all(capacity is None for capacity, _ in capacities.values()):
            line = ()  # none of these JobFlows can be held back
        elif observation.started:
            line = line or ()  # the at-risk JobFlows the event carries (never listed for it: a LIST per stage)
        elif line is None:
            line = tuple(in_line(raw) for raw in self._jobflows())
        priority = PRIORITY_CLASS if self._cached("priorityclass", lambda: self._installed(PRIORITY_CLASS)) else None
        # Read only for a JobFlow with a deadline: the only one that may be at risk.
        at_risk = AT_RISK_PRIORITY_CLASS if observation.jobflow.spec.deadline is not None and self._cached(
            "priorityclass/at-risk", lambda: self._installed(AT_RISK_PRIORITY_CLASS)) else None
        return {name: QueueView(name=name, capacity=capacity, capacity_source=source, jobflows=line,
                                priority_class=priority, at_risk_priority_class=at_risk)
                for name, (capacity, source) in capacities.items()}

    def _jobflows(self) -> list[dict]:
        if not self.namespaces:
            return self.kube.list_jobflows(None)
        return [raw for namespace in self.namespaces for raw in self.kube.list_jobflows(namespace)]

    def capacities(self, names: list[str]) -> dict[str, QueueView]:
        """The queues ``names`` with their capacity only (no line): for the validating webhook's warnings."""
        views = {}
        for name in names:
            capacity, source = self._cached(f"queue/{name}", lambda: self._capacity(name))
            views[name] = QueueView(name=name, capacity=capacity, capacity_source=source)
        return views

    def _cached(self, key: str, read: Callable[[], object]):
        with _CACHE_LOCK:
            hit = _CACHE.get(self._client, {}).get(key)
            if hit is not None and self.clock() - hit[0] < CACHE_SECONDS:
                return hit[1]
        value = read()
        with _CACHE_LOCK:
            _CACHE.setdefault(self._client, {})[key] = (self.clock(), value)
        return value

    def _installed(self, name: str) -> bool:
        try:
            return self.kube.get_priority_class(name) is not None
        except ApiError as error:  # 403: this install may not read PriorityClasses
            log.info("PriorityClass %s cannot be read (%s): vcjobs get none", name, error.status)
            return False

    def _capacity(self, name: str) -> tuple[resources.Resources | None, str]:
        try:
            queue = self.kube.get_queue(name)
        except ApiError as error:
            log.info("Volcano queue %s cannot be read (%s)", name, error.status)
            queue = None
        capability = capability_of(queue)
        if capability:
            return capability, "capability"
        try:
            nodes = self.kube.list_nodes()
        except ApiError as error:
            log.info("nodes cannot be read (%s): the capacity of queue %s is not known", error.status, name)
            return None, "unknown"
        capacity = nodes_capacity(nodes)
        return (capacity, "nodes' allocatable") if capacity else (None, "unknown")
