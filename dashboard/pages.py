"""Each page's view, computed once per change and shared by every browser showing it.

A page's view depends on a few objects (a JobFlow, its vcjobs, its child JobFlows, its Kubernetes events; a
JobTemplate and the JobFlows using it; a JobFlowTemplate and its runs); :class:`Pages` keys each computed view by
their versions, so 50 streams of the same JobFlow wake on a change, and the first to ask computes the view and its
JSON while the other 49 reuse them. The events of a JobFlow are read from the API server (they are not watched: see
:mod:`dashboard.store`) when the JobFlow changed, at most every :data:`EVENTS_SECONDS` otherwise, whoever asks.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dashboard import views
from dashboard.store import Store
from display.family import children_of
from jobflow_core.models import JobFlow
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, RUN_OF
from jobflow_core.vocabulary.naming import template_name

EVENTS_SECONDS = 5.0
NO_EVENTS: list[dict[str, Any]] = []
"""The one empty list (a view's fingerprint includes its events list's identity)."""
KEPT = 64
"""Views kept (one per page recently shown: a JobFlow, a JobTemplate, a JobFlowTemplate)."""

EventsReader = Callable[[str, str, str], list[dict[str, Any]]]
"""(namespace, name, uid) -> the Kubernetes events about that JobFlow."""


class Pages:
    def __init__(self, store: Store, events: EventsReader | None, *, clock: Callable[[], datetime] | None = None):
        self.store = store
        self.read_events = events
        self.clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._views: OrderedDict[tuple, tuple[Any, dict[str, Any], str]] = OrderedDict()
        self._events: dict[tuple[str, str], tuple[str | None, float, list[dict[str, Any]]]] = {}
        self._reading: dict[tuple[str, str], threading.Lock] = {}

    def list_json(self, namespace: str | None = None, labels: str = "") -> str:
        """The list page's view, narrowed to ``namespace`` (None: all) and the label selector ``labels``: one per
        filter (the pages showing the same filter share it)."""
        return self._cached(("list", namespace, labels), self.store.version, lambda: views.list_view(
            self.store.jobflows(), self.store.all(JOBFLOWTEMPLATE), now=self.clock(),
            loading=JOBFLOW not in self.store.synced, namespace=namespace, labels=labels))[1]

    def jobflow(self, namespace: str, name: str) -> tuple[dict[str, Any], str] | None:
        """The JobFlow page's view and its JSON; None when the store does not know the JobFlow."""
        found = self.store.snapshot(namespace, name)
        if found is None:
            return None
        flow, jobs = found["jobflow"], found["vcjobs"]
        children = children_of(flow, self.store.children(namespace, name))
        events = self._events_of(namespace, name, flow["metadata"].get("uid", ""),
                                 flow["metadata"].get("resourceVersion"))
        fingerprint = (flow["metadata"].get("resourceVersion"),
                       tuple(job["metadata"].get("resourceVersion") for job in jobs), id(events),
                       tuple((child["metadata"].get("name"), child["metadata"].get("resourceVersion"))
                             for child in children))
        return self._cached(("jf", namespace, name), fingerprint,
                            lambda: views.jobflow_view(flow, jobs, events, now=self.clock(), children=children))

    def items(self, namespace: str, name: str, flow: str) -> dict[str, Any] | None:
        found = self.store.snapshot(namespace, name)
        if found is None:
            return None
        return views.items_view(found["jobflow"], found["vcjobs"], flow, now=self.clock(),
                                children=children_of(found["jobflow"], self.store.children(namespace, name)))

    def template(self, namespace: str, name: str) -> tuple[dict[str, Any], str] | None:
        """The JobTemplate page's view and its JSON; None when the store does not know the JobTemplate.

        Its statistics change with the JobTemplate (the engine keeps them in its status); the JobFlows that use it
        change only with their specs, so a JobFlow's status moving on does not recompute the view."""
        template = self.store.get(JOBTEMPLATE, namespace, name)
        if template is None:
            return None
        flows = [flow for flow in self.store.jobflows() if flow["metadata"].get("namespace") == namespace]
        fingerprint = (template["metadata"].get("resourceVersion"),
                       tuple((flow["metadata"].get("name"), _spec_version(flow)) for flow in flows))
        return self._cached(("jt", namespace, name), fingerprint, lambda: views.template_view(template, [
            flow for flow in flows if name in map(template_name, JobFlow.model_validate(flow).spec.flows or ())]))

    def schedule(self, namespace: str, name: str) -> tuple[dict[str, Any], str] | None:
        """The JobFlowTemplate page's view and its JSON; None when the store does not know the JobFlowTemplate.
        A new run (a JobFlow labelled as its run) or a run moving on changes it."""
        template = self.store.get(JOBFLOWTEMPLATE, namespace, name)
        if template is None:
            return None
        runs = [flow for flow in self.store.jobflows() if flow["metadata"].get("namespace") == namespace
                and (flow["metadata"].get("labels") or {}).get(RUN_OF) == name]
        fingerprint = (template["metadata"].get("resourceVersion"),
                       tuple((run["metadata"].get("name"), run["metadata"].get("resourceVersion")) for run in runs))
        return self._cached(("jft", namespace, name), fingerprint,
                            lambda: views.schedule_view(template, runs, now=self.clock()))

    def _cached(self, key: tuple, fingerprint: Any, compute: Callable[[], dict[str, Any]]):
        with self._lock:
            hit = self._views.get(key)
            if hit is not None and hit[0] == fingerprint:
                self._views.move_to_end(key)
                return hit[1], hit[2]
        view = compute()
        body = json.dumps(view, separators=(",", ":"))
        with self._lock:
            self._views[key] = (fingerprint, view, body)
            self._views.move_to_end(key)
            while len(self._views) > KEPT:
                self._views.popitem(last=False)
        return view, body

    def _events_of(self, namespace: str, name: str, uid: str, version: str | None) -> list[dict[str, Any]]:
        if self.read_events is None:
            return NO_EVENTS
        with self._lock:
            reading = self._reading.setdefault((namespace, name), threading.Lock())
        with reading:  # the streams of one JobFlow wake together: one of them reads, the others take its answer
            known = self._events.get((namespace, name))
            if known is not None and known[0] == version and time.monotonic() - known[1] < EVENTS_SECONDS:
                return known[2]
            try:
                events = self.read_events(namespace, name, uid)
            except Exception:  # noqa: BLE001 - a page without events beats no page; the next change retries
                events = known[2] if known else []
            if known is not None and known[2] == events:
                events = known[2]  # the same list object: the view's fingerprint does not change
            self._events[(namespace, name)] = (version, time.monotonic(), events)
            return events


def _spec_version(obj: dict[str, Any]) -> Any:
    """What changes when the object's spec does: its generation (the API server bumps it on spec changes only), or
    its resourceVersion where there is no generation (objects made by hand in the tests)."""
    meta = obj["metadata"]
    return meta.get("generation") or meta.get("resourceVersion")
