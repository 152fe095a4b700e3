"""Flows that finish: when a JobFlow may start on a Volcano queue it shares with other JobFlows.

Volcano schedules vcjob by vcjob. A JobFlow's second stage is created only when its first one ends, so on a busy
queue it joins the back of the line, behind the first stages of every JobFlow created after it: all JobFlows
advance in lock-step and finish late together. Volcano's own priority cannot fix that alone: it cannot order a
vcjob that does not exist yet, and at each stage boundary a waiting first stage takes the freed capacity before the
dependent exists. The engine has the one lever left, *when it creates a JobFlow's first stages*:

* **Started JobFlows keep their room.** A JobFlow that started records in ``status.queue.reserved`` what the gangs
  of its unfinished vcjobs request (:func:`reserved_of`): the status write that records a stage's end also names
  the stages it creates, so between two stages the reservation never drops to nothing.
* **New JobFlows start in the order they were created, when there is room.** A JobFlow that has not started yet
  starts its first stages only if the queue's capacity holds what the started JobFlows reserve, plus what every
  JobFlow ahead of it in line needs to start, plus its own first stages (:func:`admit`), each counted at most as
  the whole queue (first stages whose gangs each fit but not all together start on an otherwise empty queue, and
  Volcano runs them as room frees: they never wait for more than the queue can ever hold). The line is ordered by
  creation time, then by name with numbers compared as numbers (``flow-2`` before ``flow-10``: creation times have
  one-second resolution), then namespace. A JobFlow ahead of it that has not recorded its needs yet (not reconciled
  yet) is counted as needing as much as this one. Head of line: a wide JobFlow first in line is never overtaken by
  narrow ones, so nothing starves.
* **At-risk JobFlows go ahead** (:mod:`jobflow_core.queueing.deadline`): one whose deadline is at risk stands in
  line by ``min(deadline, creation + OVERTAKE_SECONDS)``, every other by ``creation + OVERTAKE_SECONDS``
  (:func:`line_key`): earliest deadline first among the at-risk ones, each ahead of every JobFlow created after it.
  At risk means a deadline still ahead, so a JobFlow is overtaken only in the first :data:`OVERTAKE_SECONDS` after
  its creation; after that it keeps its place.
* **Started JobFlows' vcjobs go first in Volcano.** Their vcjobs get the PriorityClass the engine installs
  (``volcano-jobflow-started``, ``preemptionPolicy: Never``); Volcano's ``priority`` plugin orders the jobs of a
  queue by priority, then creation time. First stages keep the template's priority.
* **What can never run is not started.** A vcjob whose gang asks more than the queue's capacity (its
  ``capability``, or every node's allocatable together) waits forever in Volcano; the flow is blocked instead,
  with the numbers (``Unschedulable``). So is a JobFlow with ``wholeFlowAdmission`` one of whose stages (the flows
  of one DAG level on one queue, :func:`stages`) the queue can never hold at once: waiting for that room, it would
  stand first in line for ever, and every JobFlow behind it with it. Blocked, it takes no place in line.

Without a known capacity (a queue without ``capability`` whose nodes the engine may not read) nothing is held
back: the priority still orders started JobFlows first. The view is built by the shell from a LIST of JobFlows,
the Queue and the nodes (:class:`QueueView`); everything here is pure.
"""

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from jobflow_core.dag.graph import flow_graph
from jobflow_core.flows.vcjobs import build_job
from jobflow_core.models import Flow, JobFlow, JobTemplate
from jobflow_core.vocabulary.api import PARENT_STARTED
from jobflow_core.vocabulary import resources
from jobflow_core.vocabulary.naming import template_name
from jobflow_core.vocabulary.resources import Resources

if TYPE_CHECKING:
    from jobflow_core.planning.observation import Observation

PRIORITY_CLASS: Final = "volcano-jobflow-started"
"""The PriorityClass of the vcjobs of started JobFlows (``manifests/priorityclasses.yaml``)."""
DEFAULT_QUEUE: Final = "default"
RECHECK_SECONDS: Final = 30
"""How often a JobFlow waiting for room in its queue looks again: only the safety net. The change that makes room
wakes it (:mod:`jobflow_core.queueing.wake`); this catches what no watched object tells: a Queue's ``capability``
raised, nodes added, an event lost. Half a minute: a user raising a capability sees the line move about as soon as
``kubectl`` returns, and 20 waiting JobFlows cost under one reconcile a second."""
AT_RISK_PRIORITY_CLASS: Final = "volcano-jobflow-at-risk"
"""The PriorityClass of the vcjobs of started JobFlows whose deadline is at risk: above :data:`PRIORITY_CLASS`."""
OVERTAKE_SECONDS: Final = 3600
"""Every JobFlow stands in line by its creation plus this; an at-risk one by its deadline when that is earlier. So a
JobFlow is overtaken only by at-risk JobFlows whose deadline falls within this long after its creation: once it is
that old, none can (a deadline that passed is Missed, no longer at risk). An hour: a deadline is set for pipelines
due within hours, and a busy queue of deadlines cannot hold an ordinary JobFlow back for more than the hour plus
the runs of those it let ahead (docs/scheduling.md)."""
WAITING: Final = "Waiting"
HELD: Final = "Held"
"""``status.queue.state`` of a started JobFlow whose next stages wait for at-risk JobFlows that overtook it."""
ADMITTED: Final = "Admitted"


@dataclass(frozen=True)
class InLine:
    """Another JobFlow as the queue sees it, from its metadata and ``status.queue``."""

    namespace: str
    name: str
    created: datetime | None
    queue: str | None
    """None: not known yet (never reconciled: no status at all); ``""``: in no queue's line (reconciled, and neither
    waiting for room nor started: blocked for another reason, or written for upstream)."""
    started: bool
    ended: bool
    reserved: Resources = field(default_factory=dict)
    requests: Resources | None = None
    """What its first stages need (recorded while it waits); None: not known yet."""
    at_risk: datetime | None = None
    """Its deadline, while it is at risk (not started, it then stands in line by it); a JobFlow with a deadline that
    was never reconciled counts as at risk (its first plan judges it within moments: were it at risk, a JobFlow
    judged meanwhile would otherwise take its place ahead of it)."""
    seconds: int | None = None
    """While waiting: how long it is expected to run once started; None: not known."""
    expected_end: datetime | None = None
    """Started: when it is expected to end (``status.expectedCompletion``); None: not known."""
    held: bool = False
    """Started, and its next stages wait while at-risk JobFlows that overtook it hold the queue (``Held``)."""

    @property
    def key(self) -> tuple:
        return line_key(created=self.created, name=self.name, namespace=self.namespace, at_risk=self.at_risk)

    @property
    def plain_key(self) -> tuple:
        """Its place were it not at risk."""
        return line_key(created=self.created, name=self.name, namespace=self.namespace)


@dataclass(frozen=True)
class QueueView:
    """A Volcano queue as the shell read it for one plan."""

    name: str
    capacity: Resources | None
    """What the queue can hold at once: its ``capability``, or every ready node's allocatable together; None when
    neither is known (then nothing is held back)."""
    capacity_source: str = "capability"
    jobflows: tuple[InLine, ...] = ()
    """Every JobFlow the engine can see (the JobFlow planned included or not: it is skipped by name)."""
    priority_class: str | None = PRIORITY_CLASS
    """The PriorityClass for started JobFlows' vcjobs; None when it is not installed (or cannot be read)."""
    at_risk_priority_class: str | None = AT_RISK_PRIORITY_CLASS
    """The PriorityClass for the vcjobs of started JobFlows at risk; None when it is not installed."""
    at_risk: datetime | None = None
    """The planned JobFlow's deadline when it is at risk (:func:`jobflow_core.queueing.deadline.steer`): it stands in
    line by it, and its vcjobs once started get :attr:`at_risk_priority_class`."""


def capability_of(queue: Mapping[str, Any] | None) -> Resources | None:
    """What a Volcano Queue (JSON, as read) caps itself at: its ``spec.capability``; None without one."""
    capability = ((queue or {}).get("spec") or {}).get("capability")
    return resources.of_wire(capability) if capability else None


def nodes_capacity(nodes: Iterable[Mapping[str, Any]]) -> Resources | None:
    """What the ready, schedulable (not cordoned) nodes (JSON, as listed) can hold together: a queue without a
    capability holds at most that. None when no node is."""
    allocatable = [(node.get("status") or {}).get("allocatable") or {} for node in nodes if _schedulable(node)]
    return resources.add(*map(resources.of_wire, allocatable)) if allocatable else None


def _schedulable(node: Mapping[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def line_key(*, created: datetime | None, name: str, namespace: str, at_risk: datetime | None = None) -> tuple:
    """The order of the line: creation time (plus :data:`OVERTAKE_SECONDS`; an at-risk JobFlow's deadline when that
    is earlier), then the name with its numbers compared as numbers, then namespace."""
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", name) if p)
    if created is None:
        return (True, datetime.min, parts, namespace)
    stands = created + timedelta(seconds=OVERTAKE_SECONDS)
    return (False, min(stands, at_risk) if at_risk is not None else stands, parts, namespace)


def in_line(raw: Mapping[str, Any]) -> InLine:
    """A JobFlow (JSON, as listed) in line: what its ``status.queue`` and phase say."""
    meta, status = raw.get("metadata") or {}, raw.get("status") or {}
    queue = status.get("queue") or {}
    phase = (status.get("state") or {}).get("phase")
    created = meta.get("creationTimestamp")
    started = queue.get("state") == ADMITTED or bool(status.get("jobStatusList")) or phase == "Running" \
        or (meta.get("annotations") or {}).get(PARENT_STARTED) == "true"  # a child of a started parent
    requests = queue.get("requests")
    deadline = status.get("deadline") or {}
    return InLine(
        namespace=meta.get("namespace", ""), name=meta.get("name", ""),
        created=_time(created),
        queue=queue.get("name") or ("" if raw.get("status") else None), started=started,
        ended=phase in ("Succeed", "Failed") or meta.get("deletionTimestamp") is not None
        or bool((raw.get("spec") or {}).get("suspend")) and not started,
        reserved=resources.of_wire(queue.get("reserved")),
        requests=resources.of_wire(requests) if requests is not None else None,
        at_risk=_time(deadline.get("at")) if deadline.get("state") == "AtRisk"
        else _time((raw.get("spec") or {}).get("deadline")) if not raw.get("status") else None,
        seconds=queue.get("expectedSeconds") if isinstance(queue.get("expectedSeconds"), int) else None,
        expected_end=_time(status.get("expectedCompletion")) if started else None,
        held=queue.get("state") == HELD,
    )


def _time(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None
    except ValueError:
        return None


def counts_for(entry: InLine, *, asking: InLine) -> bool:
    """Whether :func:`admit` can count ``entry`` when ``asking`` (not started) asks: a started JobFlow that reserves
    room, or one ahead of ``asking`` (were it not at risk: its plan may find it no longer is) that has not started,
    neither ended nor out of line. The others change no answer, so the line an event carries (:func:`line_to_wire`)
    leaves them out."""
    if entry.ended or entry.queue == "" or (entry.namespace, entry.name) == (asking.namespace, asking.name):
        return False
    if asking.started:  # only what may hold its next stages: at-risk JobFlows' room (overtaken)
        return entry.started and entry.at_risk is not None and bool(entry.reserved)
    return bool(entry.reserved) and entry.queue is not None if entry.started else entry.key < asking.plain_key


def line_to_wire(entry: InLine) -> dict[str, Any]:
    """One JobFlow of the line as an event carries it (:mod:`jobflow_core.routing.snapshots`); :func:`line_of_wire`
    reads it back."""
    wire = {"namespace": entry.namespace, "name": entry.name,
            "created": entry.created.isoformat() if entry.created else None, "queue": entry.queue,
            "started": entry.started, "ended": entry.ended, "reserved": resources.to_wire(entry.reserved),
            "requests": resources.to_wire(entry.requests) if entry.requests is not None else None}
    extra = {"atRisk": entry.at_risk.isoformat() if entry.at_risk else None, "seconds": entry.seconds,
             "expectedEnd": entry.expected_end.isoformat() if entry.expected_end else None,
             "held": entry.held or None}
    return wire | {key: value for key, value in extra.items() if value is not None}  # a snapshot has a size cap


def line_of_wire(wire: Mapping[str, Any]) -> InLine:
    created, requests = wire.get("created"), wire.get("requests")
    return InLine(namespace=wire["namespace"], name=wire["name"],
                  created=datetime.fromisoformat(created) if created else None, queue=wire.get("queue"),
                  started=bool(wire.get("started")), ended=bool(wire.get("ended")),
                  reserved=resources.of_wire(wire.get("reserved")),
                  requests=resources.of_wire(requests) if requests is not None else None,
                  at_risk=_time(wire.get("atRisk")), seconds=wire.get("seconds"),
                  expected_end=_time(wire.get("expectedEnd")), held=bool(wire.get("held")))


@dataclass(frozen=True)
class Admission:
    """The answer for a JobFlow that has not started: start now, or wait, with its place in line."""

    start: bool
    position: int
    """1: first in line (0 when it starts)."""
    message: str
    queue: str = DEFAULT_QUEUE
    needs: Resources = field(default_factory=dict)
    """What its first stages need."""
    unschedulable: bool = False
    """The queue can never hold what it needs at once (a stage of a ``wholeFlowAdmission`` JobFlow): it is blocked,
    with ``message`` saying why, and takes no place in line."""


def admit(view: QueueView, *, namespace: str, name: str, created: datetime | None,
          needs: Resources) -> Admission:
    """Whether the JobFlow ``namespace/name``, not started, whose first stages need ``needs``, starts now."""
    if view.capacity is None:
        return Admission(True, 0, "starts now (the queue's capacity is not known: nothing is held back)", view.name,
                         needs)
    me = line_key(created=created, name=name, namespace=namespace, at_risk=view.at_risk)
    others = [j for j in view.jobflows if (j.namespace, j.name) != (namespace, name) and not j.ended
              and j.queue in (view.name, None)]
    holding = [j for j in others if j.started and j.queue == view.name and holds_for(j, me, at_risk=view.at_risk)]
    reserved = resources.add(*(j.reserved for j in holding))
    ahead = sorted((j for j in others if not j.started and j.key < me), key=lambda j: j.key)
    # Each counted at most as the whole queue: first stages that can never all run at once (each gang fits, the
    # start table checked that) start when the queue is otherwise empty, instead of waiting for ever at the head.
    wanted = resources.add(*(resources.at_most(j.requests if j.requests is not None else needs, view.capacity)
                             for j in ahead))
    total = resources.add(reserved, wanted, resources.at_most(needs, view.capacity))
    if not resources.exceeding(total, view.capacity):
        return Admission(True, 0, "starts now", view.name, needs)
    position = len(ahead) + 1
    started = sum(1 for j in holding if j.reserved)
    return Admission(False, position, (
        f'waiting for room in Volcano queue "{view.name}": {ordinal(position)} in line; its first stages need '
        f"{resources.describe(needs)}, {started} started JobFlows reserve {resources.describe(reserved)}"
        f"{f', {len(ahead)} created before it need {resources.describe(wanted)}' if ahead else ''}, of "
        f"{resources.describe(view.capacity)} ({view.capacity_source})"), view.name, needs)


def holds_for(entry: InLine, me: tuple, *, at_risk: datetime | None) -> bool:
    """Whether the room started ``entry`` reserves is counted for a JobFlow standing in line at ``me``: always, but
    for an at-risk one (``at_risk``: its deadline), which goes ahead of what started JobFlows not at risk hold when it
    stands ahead of them in line (it then takes their next stages' room: its vcjobs' PriorityClass puts them first
    in Volcano)."""
    return at_risk is None or entry.at_risk is not None or entry.plain_key < me


GANG_FIX: Final = "lower minAvailable or the requests"


def never_fits(view: QueueView | None, *, request: Resources, what: str = "its gang",
               fix: str = GANG_FIX) -> str | None:
    """Why ``what`` (a gang, or a stage of gangs), asking ``request`` at once, can never be scheduled on the queue,
    or None. ``fix``: what the user may change besides the queue."""
    if view is None or view.capacity is None:
        return None
    over = resources.exceeding(request, view.capacity)
    if not over:
        return None
    return (f"{what} needs {resources.describe(request)} at once, more {' and '.join(over)} than Volcano queue "
            f'"{view.name}" can ever hold ({resources.describe(view.capacity)}, its {view.capacity_source}): '
            f"{fix}, or raise the queue's capability; nothing was created")


@dataclass(frozen=True)
class Stage:
    """One level of a JobFlow's DAG on one Volcano queue: the flows of the level whose vcjobs join it, and what
    their gangs need together (the room ``wholeFlowAdmission`` waits for and keeps)."""

    queue: str
    flows: tuple[str, ...]
    needs: Resources

    def never_fits(self, view: QueueView | None) -> str | None:
        """Why the queue can never hold this stage at once, or None."""
        names = ", ".join(f'"{name}"' for name in self.flows)
        return never_fits(view, request=self.needs,
                          what=f"its stage of flows {names} (wholeFlowAdmission starts it only with room for them "
                               "all)",
                          fix=f"remove wholeFlowAdmission (its stages then run as the queue has room), {GANG_FIX}")


def _gangs(jobflow: JobFlow,
           templates: Mapping[str, JobTemplate]) -> Iterator[tuple[Flow, dict[str, Any], Resources]]:
    """Each flow of ``jobflow`` with the spec of the vcjob it would make and that vcjob's gang requests. Flows whose
    JobTemplate is missing or invalid are left out: the start table blocks them when their turn comes."""
    for flow in jobflow.spec.flows or ():
        template = templates.get(template_name(flow))
        if template is None:
            continue
        try:
            spec = build_job(jobflow, flow=flow.name, template=template)["spec"]
            gang = resources.gang_requests(spec)
        except (ValueError, TypeError, KeyError):
            continue
        yield flow, spec, gang


def stages(jobflow: JobFlow, templates: Mapping[str, JobTemplate]) -> list[Stage]:
    """The levels of ``jobflow``'s DAG, each split by the queue its vcjobs join, in level order. Flows whose
    JobTemplate is missing, or makes no vcjob, count for nothing (the start table blocks them when their turn
    comes)."""
    graph = flow_graph(jobflow)
    members: dict[tuple[int, str], dict[str, Resources]] = {}
    for flow, spec, gang in _gangs(jobflow, templates):
        members.setdefault((graph.levels.get(flow.name, 0), queue_of(spec)), {}).setdefault(flow.name, gang)
    return [Stage(queue=queue, flows=tuple(gangs), needs=resources.add(*gangs.values()))
            for (_, queue), gangs in sorted(members.items())]


def unschedulable(jobflow: JobFlow, *, templates: Mapping[str, JobTemplate],
                  queues: Mapping[str, QueueView]) -> list[str]:
    """For the validating webhook: each flow of ``jobflow`` whose vcjob (its JobTemplate with the flow's patch) could
    never be scheduled on its queue, and, with ``wholeFlowAdmission``, each stage of several flows that could never
    be held at once, with the numbers. Flows whose template is missing or invalid are left to the start table (they
    are blocked for that)."""
    messages, alone = [], set()
    for flow, spec, gang in _gangs(jobflow, templates):
        why = never_fits(queues.get(spec.get("queue") or DEFAULT_QUEUE), request=gang)
        if why:
            alone.add(flow.name)
            messages.append(f'JobFlow "{jobflow.namespace}/{jobflow.name}", flow "{flow.name}" (JobTemplate '
                            f'"{template_name(flow)}"): {why}')
    for stage in stages(jobflow, templates) if jobflow.spec.whole_flow_admission else ():
        why = stage.never_fits(queues.get(stage.queue)) if alone.isdisjoint(stage.flows) else None
        if why:
            messages.append(f'JobFlow "{jobflow.namespace}/{jobflow.name}": {why}')
    return messages


def overtaken(view: QueueView, *, namespace: str, name: str, created: datetime | None,
              needs: Resources) -> Admission:
    """For a started JobFlow not at risk about to create vcjobs needing ``needs``: whether they wait, because
    at-risk JobFlows that stand ahead of it (they overtook it: :func:`holds_for`) hold the queue. They would take the
    room those JobFlows' next stages need at their stage boundaries (a vcjob that exists takes freed room before one
    that does not, whatever the priorities). Only their room is counted: started JobFlows never wait for each other
    (Volcano orders their vcjobs)."""
    me = line_key(created=created, name=name, namespace=namespace)
    ahead = [j for j in view.jobflows if j.started and not j.ended and j.at_risk is not None and j.reserved
             and j.queue == view.name and j.key < me and (j.namespace, j.name) != (namespace, name)]
    held = resources.add(*(resources.at_most(j.reserved, view.capacity) for j in ahead)) if view.capacity else {}
    if view.capacity is None or view.at_risk is not None or not ahead \
            or not resources.exceeding(resources.add(held, resources.at_most(needs, view.capacity)), view.capacity):
        return Admission(True, 0, "starts now", view.name, needs)
    return Admission(False, 1, (
        f'its next stages wait for room in Volcano queue "{view.name}": {len(ahead)} JobFlow'
        f'{"" if len(ahead) == 1 else "s"} at risk of missing their deadline hold {resources.describe(held)} of '
        f"{resources.describe(view.capacity)} ({view.capacity_source}); they need {resources.describe(needs)}"),
        view.name, needs)


def first_stages_admission(observation: "Observation", starting: list[dict[str, Any]], *,
                           queues: Mapping[str, QueueView],
                           templates: Mapping[str, JobTemplate] | None = None) -> Admission | None:
    """For a JobFlow that has not started and would create the vcjobs ``starting`` now: whether each queue they
    join has room for them (the first queue that has not, when one has not); None when the question does not
    arise. With ``wholeFlowAdmission`` they need room for the widest stage on their queue too, and a stage the
    queue can never hold blocks the JobFlow (``unschedulable``) rather than keeping it first in line for ever."""
    if not queues or not starting:
        return None
    jobflow = observation.jobflow
    if observation.started:
        gangs: dict[str, list[Resources]] = {}
        for manifest in starting:
            gangs.setdefault(queue_of(manifest["spec"]), []).append(resources.gang_requests(manifest["spec"]))
        held = [overtaken(queues[name], namespace=jobflow.namespace, name=jobflow.name,
                          created=jobflow.metadata.creation_timestamp, needs=resources.add(*needs))
                for name, needs in gangs.items() if name in queues]
        return next((answer for answer in held if not answer.start), None)
    levels = stages(jobflow, templates or {}) if jobflow.spec.whole_flow_admission else []
    for stage in levels:
        why = stage.never_fits(queues.get(stage.queue))
        if why:
            return Admission(False, 0, f'JobFlow "{jobflow.namespace}/{jobflow.name}": {why}', stage.queue,
                             stage.needs, unschedulable=True)
    needs: dict[str, list[Resources]] = {}
    for manifest in starting:
        needs.setdefault(queue_of(manifest["spec"]), []).append(resources.gang_requests(manifest["spec"]))
    answers = [admit(queues[name], namespace=jobflow.namespace, name=jobflow.name,
                     created=jobflow.metadata.creation_timestamp,
                     needs=resources.most(resources.add(*gangs), *(s.needs for s in levels if s.queue == name)))
               for name, gangs in needs.items() if name in queues]
    return next((answer for answer in answers if not answer.start), answers[0] if answers else None)


def queue_of(spec: Mapping[str, Any]) -> str:
    """The Volcano queue a vcjob spec (JSON) joins (Volcano's default when it names none)."""
    return spec.get("queue") or DEFAULT_QUEUE


def reserved_of(gangs: Iterable[Resources]) -> Resources:
    """What a started JobFlow holds: the gang requests of its unfinished vcjobs, added up."""
    return resources.add(*gangs)


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
