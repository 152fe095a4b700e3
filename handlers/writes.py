"""Every guarded write the handler makes, through one conflict loop (:func:`rewrite`).

Two kinds of write, told apart by what a lost race (409) means for them:

* **A JobFlow's planned status** (:meth:`Writes.planned`): written with the resourceVersion the plan was made
  from. Losing means the plan rests on an old read: :class:`Replan` makes the reconcile read again and plan anew.
* **A change**: a function of the object as it is when written: a JobTemplate's statistics and
  ``jobDependsOnList`` (:class:`jobflow_core.UpdateTemplate`, :meth:`Writes.template`), a JobFlow's notifications
  once the sink took them (:meth:`Writes.flow_change`), a run stored in the memoization cache (:meth:`Writes.memo`),
  a JobFlowTemplate's schedule (:meth:`handlers.jobflowtemplates.Runs.template`). Losing means someone else wrote in
  between: :func:`rewrite` reads again and applies the change anew, at most :data:`MAX_ATTEMPTS` times, then raises
  ``Conflict`` (answered 503: the event is delivered again). A change that changes nothing writes nothing.

**Changes to one JobTemplate are written together** (group commit, :meth:`Writes.template`). Two hundred JobFlows
sharing five JobTemplates make their reconciles, running at once on the handler's threads, all record runs and
vcjobs in the same five statuses: one write each would mostly lose races to the others (21-29 % did, issue 25).
Instead the first reconcile to need a template writes for every reconcile of this process that needs it while it
reads and writes: they wait (their requests are not answered before their change is stored, so nothing is lost if
the process dies), and one GET and one PUT serve them all. The state of it lives in this process only while those
requests are under way; races left are with other handler processes, and are re-applied as above.

**What this process last wrote to a JobTemplate is the read of its next write there** (up to
:data:`REMEMBERED_TEMPLATES` of them), unless the reconcile read a newer one: a guess, never trusted, since the PUT
carries its resourceVersion and a write of anyone else in between makes it lose (then it reads again). Most writes
to a template are ours, one after another, so this saves the GET before each, and the 409 of a reconcile whose own
read of the template is older than the last commit (issue 25: 2,300 GETs and 300-400 lost races at 200 JobFlows).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from apiclient.rest import Conflict, Exists, Gone
from handlers import metrics
from handlers.kube import KubeApi
from jobflow_core.flows.memo import Entry, with_entry
from jobflow_core.models import JobFlow, JobFlowStatus, JobTemplate, JobTemplateStatus
from jobflow_core.routing.snapshots import newer
from jobflow_core.vocabulary.api import MEMO_CACHE

log = logging.getLogger("handlers.writes")

MAX_ATTEMPTS = 5
REMEMBERED_TEMPLATES = 1024

TemplateChange = Callable[[JobTemplate], JobTemplateStatus]
FlowChange = Callable[[JobFlow], JobFlowStatus]

Read = TypeVar("Read")
Wanted = TypeVar("Wanted")
Written = TypeVar("Written")


def rewrite(*, kind: str, name: str, get: Callable[[], Read | None], change: Callable[[Read], Wanted | None],
            write: Callable[[Wanted], Written], read: Read | None = None,
            attempts: int = MAX_ATTEMPTS) -> Read | Written | None:
    """The handler's one conflict loop: ``get`` the object (or start from ``read``, an earlier read of it), let the
    pure ``change`` say what to write (None: nothing changes, so nothing is written), ``write`` it guarded by the
    resourceVersion read; when the write loses a race (``Conflict``, or ``Exists`` to the create of an object that
    was missing) read again and apply ``change`` anew, at most ``attempts`` times.

    Returns what ``write`` returned, the object as read when nothing changed, or None when ``get`` finds nothing
    (``kind`` and ``name`` say what it is, for the conflicts metric and the error). Raises ``Conflict`` when every
    attempt lost: the caller answers it as a transient fault (503, the event comes again) or knows better."""
    for _ in range(attempts):
        current = read if read is not None else get()
        read = None
        if current is None:
            return None
        wanted = change(current)
        if wanted is None:
            return current
        try:
            return write(wanted)
        except (Conflict, Exists):
            metrics.CONFLICTS.labels(kind).inc()
    raise Conflict(f"{kind} {name} kept changing during {attempts} attempts; retry later")


class Replan(Exception):
    """The attempt must start over from a fresh read (what it learned is already recorded)."""


@dataclass
class _Ticket:
    change: TemplateChange
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False
    error: BaseException | None = None


@dataclass
class _Batch:
    waiting: list[_Ticket] = field(default_factory=list)


class Writes:
    """The handler process's writer (one per app, hence per process: the group commit needs to see every thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batches: dict[tuple[str, str], _Batch] = {}
        self._written: OrderedDict[tuple[str, str], dict] = OrderedDict()

    def planned(self, kube: KubeApi, raw: dict, status: JobFlowStatus) -> dict:
        """Write a JobFlow's planned status with the resourceVersion of ``raw``; the JobFlow as written."""
        try:
            written = kube.replace_jobflow_status({**raw, "status": status.to_wire()})
        except Conflict as lost:
            metrics.CONFLICTS.labels("JobFlow").inc()
            raise Replan(f"status write lost a race: {lost}") from lost
        metrics.STATUS_WRITES.inc()
        return written

    @staticmethod
    def memo(kube: KubeApi, namespace: str, key: str, entry: Entry) -> None:
        """Store a memoized run in the namespace's cache ConfigMap (jobflow_core.flows.memo), creating it when missing;
        a concurrent writer's change is read again and kept (a few attempts, then Replan: the event is retried)."""
        def stored(cache: dict) -> dict | None:
            data = with_entry(cache.get("data"), key, entry)
            return None if data == cache.get("data") else {**cache, "data": data}

        def write(cache: dict) -> None:
            if cache["metadata"].get("resourceVersion") is None:  # not stored yet (_new_cache)
                kube.create_configmap(cache)
            else:
                kube.replace_configmap(cache)

        try:
            rewrite(kind="ConfigMap", name=f"{namespace}/{MEMO_CACHE}", change=stored, write=write,
                    get=lambda: kube.get_configmap(namespace, MEMO_CACHE) or _new_cache(namespace))
        except Conflict as lost:
            raise Replan(f"the memoization cache {namespace}/{MEMO_CACHE} kept changing") from lost

    @staticmethod
    def flow_change(kube: KubeApi, namespace: str, name: str, change: FlowChange, *,
                    read: dict | None = None) -> dict | None:
        """Apply ``change`` to JobFlow ``namespace/name`` (starting from ``read``, if given); as written (as read
        when it changes nothing, None when the JobFlow is gone)."""
        def changed(raw: dict) -> dict | None:
            flow = JobFlow.model_validate(raw)
            status = change(flow)
            return None if status == flow.status else {**raw, "status": status.to_wire()}

        def write(raw: dict) -> dict:
            written = kube.replace_jobflow_status(raw)
            metrics.STATUS_WRITES.inc()
            return written

        return rewrite(kind="JobFlow", name=f"{namespace}/{name}", get=lambda: kube.get_jobflow(namespace, name),
                       change=changed, write=write, read=read)

    def template(self, kube: KubeApi, namespace: str, name: str, change: TemplateChange, *,
                 read: dict | None = None) -> None:
        """Apply ``change`` to JobTemplate ``namespace/name``, together with the changes other threads of this
        process want to make to it meanwhile (see the module docstring). Returns once it is stored (or the
        template is gone); raises what storing it raised."""
        ticket = _Ticket(change)
        with self._lock:
            batch = self._batches.get((namespace, name))
            if batch is None:
                batch = self._batches[(namespace, name)] = _Batch()
                ticket.lead = True
            batch.waiting.append(ticket)
        if not ticket.lead:
            ticket.done.wait()
            if not ticket.lead:  # written by the reconcile that led
                if ticket.error is not None:
                    raise ticket.error
                return
            read = None  # led now: what this reconcile read is older than the last write
        self._commit(kube, namespace, name, batch, read=read)
        if ticket.error is not None:
            raise ticket.error

    def _commit(self, kube: KubeApi, namespace: str, name: str, batch: _Batch, *, read: dict | None) -> None:
        """Write what ``batch`` holds now; then hand the lead to the first change that came meanwhile."""
        with self._lock:
            tickets, batch.waiting = batch.waiting, []
        changes = [ticket.change for ticket in tickets]
        error: BaseException | None = None
        try:
            self._template_changes(kube, namespace, name, changes, read=read)
        except BaseException as failed:  # handed to every waiting reconcile, whose request then fails as it would
            error = failed
        for ticket in tickets:
            ticket.error = error
            if not ticket.lead:
                ticket.done.set()
        with self._lock:
            if batch.waiting:
                successor = batch.waiting[0]
                successor.lead = True
                successor.done.set()
            else:
                del self._batches[(namespace, name)]

    def _template_changes(self, kube: KubeApi, namespace: str, name: str, changes: list[TemplateChange], *,
                          read: dict | None) -> None:
        """Apply ``changes`` in order to the template's status in one write; what is written is remembered, and
        what may be out of date (a lost race, the template gone) is forgotten."""
        key = (namespace, name)

        def get() -> dict | None:
            raw = kube.get_jobtemplate(namespace, name)
            if raw is None:
                self._remember(key, None)
            return raw

        def changed(raw: dict) -> dict | None:
            template = JobTemplate.model_validate(raw)
            status = template.status
            for change in changes:
                status = change(template.model_copy(update={"status": status}))
            return None if _same(status, template.status) else {**raw, "status": status.to_wire()}

        def write(raw: dict) -> None:
            try:
                self._remember(key, kube.replace_jobtemplate_status(raw))
            except Conflict:
                self._remember(key, None)
                raise
            except Gone:  # deleted since it was read (or since this process wrote it): nothing to record
                self._remember(key, None)

        rewrite(kind="JobTemplate", name=f"{namespace}/{name}", get=get, change=changed, write=write,
                read=self._newest(key, read))

    def _newest(self, key: tuple[str, str], read: dict | None) -> dict | None:
        """The newer of ``read`` and what this process last wrote to the template (None: read it)."""
        with self._lock:
            mine = self._written.get(key)
        if mine is None:
            return read
        return mine if read is None or newer(mine, read) else read

    def _remember(self, key: tuple[str, str], written: dict | None) -> None:
        """Keep ``written`` as the guess for the template's next write (None: forget it; the oldest go first)."""
        with self._lock:
            if written is None:
                self._written.pop(key, None)
                return
            self._written[key] = written
            self._written.move_to_end(key)
            while len(self._written) > REMEMBERED_TEMPLATES:
                self._written.popitem(last=False)


def _new_cache(namespace: str) -> dict:
    """The memoization cache of a namespace that has none yet (no resourceVersion: :meth:`Writes.memo` creates it)."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": MEMO_CACHE, "namespace": namespace, "labels": {"app.kubernetes.io/managed-by": "jobflow-engine"}}}


def _same(new: JobTemplateStatus | None, old: JobTemplateStatus | None) -> bool:
    """Whether writing ``new`` over ``old`` changes nothing (an empty list is as good as none)."""
    def normal(status: JobTemplateStatus | None) -> JobTemplateStatus:
        status = status or JobTemplateStatus()
        return status.model_copy(update={"job_depends_on_list": status.job_depends_on_list or None})
    return normal(new) == normal(old)

