"""What the dashboard knows of the cluster: one watch per type for the whole server, kept in memory, and a version
that every open page waits on.

The watches are the client layer's, as the event source's are (:class:`apiclient.watch.ListWatch`: list, watch,
resume, re-list on 410 Gone, back off on errors), noting every change here instead of forwarding it. So a server with 50
open pages still sends the API server four watch requests, not 50 polls; pages ask this store, and each change bumps
:attr:`Store.version` and wakes the pages' streams (:meth:`Store.wait`), which send a new view only if theirs changed.

A child JobFlow (:mod:`jobflow_core.flows.children`) is a JobFlow like any, in the same watch; the store keeps them
findable by their parent's name (the ``flow.volcano.sh/parent`` label), so a parent's page finds its children
without going through every JobFlow on every change (:meth:`Store.children`).

Kubernetes Events are not watched (there are many, of every kind): a JobFlow page reads the events of its JobFlow
when the JobFlow changes, shared by every page showing it (:mod:`dashboard.views`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from apiclient.watch import WATCHED, Change, ListWatch
from apiclient.watch_cache import WatchCache
from jobflow_core.routing.snapshots import trim_jobflow
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, PARENT, ApiType

if TYPE_CHECKING:
    from apiclient.connection import Connection

RESYNC_SECONDS = 600.0
"""How often the watches re-list everything (a safety net; a watch loses nothing between)."""


class Store(WatchCache):
    """The watch cache of the event source (JobFlows and their vcjobs), plus JobTemplates and JobFlowTemplates,
    plus a change counter pages wait on."""

    def __init__(self) -> None:
        super().__init__()
        self._others: dict[ApiType, dict[tuple[str, str], dict[str, Any]]] = {JOBTEMPLATE: {}, JOBFLOWTEMPLATE: {}}
        self._changed = threading.Condition()
        self.version = 0
        self._kin: dict[tuple[str, str], set[str]] = {}
        """(namespace, parent's name) -> the names of the JobFlows labelled as its children."""
        self._parent_of: dict[tuple[str, str], str] = {}
        """(namespace, child's name) -> the parent's name it was filed under in :attr:`_kin`."""
        self.synced: set[ApiType] = set()
        """The types whose first list has arrived (until then a page says it is loading, not that nothing exists)."""

    def note(self, api_type: ApiType, obj: dict[str, Any], *, deleted: bool) -> None:
        if api_type in self._others:
            meta = obj.get("metadata") or {}
            key = (meta.get("namespace", ""), meta.get("name", ""))
            with self._lock:
                if deleted:
                    self._others[api_type].pop(key, None)
                else:
                    self._others[api_type][key] = trim_jobflow(obj)
        else:
            super().note(api_type, obj, deleted=deleted)
            if api_type is JOBFLOW:
                self._file_child(obj, deleted=deleted)
        self.bump()

    def _file_child(self, obj: dict[str, Any], *, deleted: bool) -> None:
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace", ""), meta.get("name", "")
        parent = (meta.get("labels") or {}).get(PARENT)
        with self._lock:
            filed = self._parent_of.pop((namespace, name), None)
            if filed is not None:  # gone, or its label changed: filed afresh below
                self._kin[(namespace, filed)].discard(name)
                if not self._kin[(namespace, filed)]:
                    del self._kin[(namespace, filed)]
            if parent and not deleted:
                self._kin.setdefault((namespace, parent), set()).add(name)
                self._parent_of[(namespace, name)] = parent

    def children(self, namespace: str, parent: str) -> list[dict[str, Any]]:
        """The JobFlows labelled as children of JobFlow ``parent`` (whether it controls them is the caller's to
        check: :func:`display.family.children_of`)."""
        with self._lock:
            names = sorted(self._kin.get((namespace, parent), ()))
            return [self._jobflows[(namespace, name)] for name in names if (namespace, name) in self._jobflows]

    def bump(self) -> None:
        with self._changed:
            self.version += 1
            self._changed.notify_all()

    def wait(self, after: int, timeout: float) -> int:
        """Block until :attr:`version` is past ``after`` or ``timeout`` seconds passed; the version then."""
        with self._changed:
            self._changed.wait_for(lambda: self.version > after, timeout=timeout)
            return self.version

    def jobflows(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._jobflows.values())

    def get(self, api_type: ApiType, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            if api_type is JOBFLOW:
                return self._jobflows.get((namespace, name))
            return self._others[api_type].get((namespace, name))

    def all(self, api_type: ApiType) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._others[api_type].values())

    def fill(self, api_type: ApiType, objects: Iterable[dict[str, Any]]) -> None:
        """Note every object as a list would (for the in-memory tier of the tests and the benchmarks)."""
        for obj in objects:
            self.note(api_type, obj, deleted=False)
        self.synced.add(api_type)
        self.bump()


class _Watch(ListWatch):
    """One watch, noting every change in the store (and, after each list, marking its type listed)."""

    def __init__(self, api: Connection, api_type: ApiType, namespace: str | None, store: Store, *,
                 stop: threading.Event, label_selector: str | None) -> None:
        super().__init__(api, api_type, namespace, resync_seconds=RESYNC_SECONDS, stop=stop,
                         label_selector=label_selector)
        self.store = store

    def seen(self, change: Change, obj: dict[str, Any], *, key: str, listed: bool) -> None:
        self.store.note(self.api_type, obj, deleted=change is Change.DELETE)

    def relist(self) -> str:
        version = super().relist()
        self.store.synced.add(self.api_type)
        self.store.bump()
        return version


def watch(api: Connection, store: Store, *, namespace: str | None, stop: threading.Event) -> list[threading.Thread]:
    """Start one watch per type the event source watches (vcjobs: only the JobFlows' own), in ``namespace`` (None:
    all); their threads (greenlets under the dashboard's server) run until ``stop`` is set."""
    threads = []
    for api_type, selector in WATCHED.items():
        watcher = _Watch(api, api_type, namespace, store, stop=stop, label_selector=selector)
        thread = threading.Thread(target=watcher.run, name=f"dashboard-watch-{api_type.plural}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads
