"""Which containers' logs a selection of a JobFlow means (``kubectl jobflow logs``, the dashboard's logs pane), in
which order, under which prefix, and what to say of the flows that have none.

A selection names a JobFlow and optionally one flow, one item (iteration) of a ``forEach`` (``repeat``) flow, one
attempt and one container. What it means, unit by unit (a plain flow, or one item or iteration of a fan-out):

* the unit's vcjobs are its attempts, named by :func:`~jobflow_core.vocabulary.naming.attempt_job_name`
  (``<jobflow>-<flow>[-<index>][-r<k>]``), found among the live vcjobs the JobFlow controls (owner UID) and the
  records of ``status.jobStatusList`` (which outlive the vcjobs); the selected attempt is the one asked for, else the
  latest (a retry's, a rerun's);
* its pods are those Volcano labels ``volcano.sh/job-name: <vcjob>`` and whose controller is that very vcjob, by
  UID (Volcano always sets it: a pod that only carries the label, made by anyone, is not the vcjob's), ordered by
  task as the vcjob lists its tasks, then by replica index; each container that has run (init containers first)
  is one :class:`Stream`;
* a unit without pods gets a :class:`Note`: its vcjob was deleted (``jobRetainPolicy: delete``, a TTL), it reused a
  memoized run, the flow was skipped, it has not started yet; with the result the status kept, when it kept one.

Every stream is prefixed like ``kubectl logs --prefix`` (``[pod/<pod>/<container>]``), with the flow, the item's
(iteration's) index when the flow has them, and the task first: ``[b/1/worker/test-b-1-worker-0/main]``; the pod's
name carries the vcjob, so the attempt (``-r1``). Pure: the caller reads the JobFlow, its vcjobs and the
pods, and streams the logs (:mod:`apiclient.logs`).
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jobflow_core.dag.graph import flow_graph
from jobflow_core.models import FlowJobStatus, JobFlow, JobFlowPhase, RetainPolicy, VcJob
from jobflow_core.vocabulary.api import POD_JOB_NAME, POD_TASK_SPEC
from jobflow_core.vocabulary.naming import is_owned_by, job_name
from jobflow_core.vocabulary.phase import is_final


@dataclass(frozen=True)
class Selection:
    """What a person asked to see: every flow (``flow`` None), one item or iteration (``item``), an attempt
    (``attempt``, from 1; None: the latest), one container (``container``; None: all)."""

    flow: str | None = None
    item: int | None = None
    attempt: int | None = None
    container: str | None = None


@dataclass(frozen=True)
class Container:
    """One container of a pod, as its status tells: ``instance`` is the container ID whose log the API server serves
    now (the running one, else the last that ran), None before it first started."""

    name: str
    instance: str | None
    running: bool
    waiting: str | None
    """Why it waits (``ContainerCreating``, ``CrashLoopBackOff``), while it does."""
    restarts: int = 0


@dataclass(frozen=True)
class Pod:
    """What logs need of a pod: its vcjob and task (Volcano's labels), its controller and its containers, init
    containers first, each in the order of its spec."""

    name: str
    job: str | None
    task: str | None
    owner_uid: str | None
    containers: tuple[Container, ...]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> "Pod":
        """The pod as the API server returns it (JSON)."""
        meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
        labels = meta.get("labels") or {}
        owner = next((ref.get("uid") for ref in meta.get("ownerReferences") or () if ref.get("controller")), None)
        statuses = {entry.get("name"): entry for entry in (*(status.get("initContainerStatuses") or ()),
                                                           *(status.get("containerStatuses") or ()))}
        names = [c.get("name") for c in (*(spec.get("initContainers") or ()), *(spec.get("containers") or ()))]
        return cls(name=meta.get("name") or "", job=labels.get(POD_JOB_NAME), task=labels.get(POD_TASK_SPEC),
                   owner_uid=owner, containers=tuple(_container(name, statuses.get(name) or {}) for name in names
                                                     if name))


def _container(name: str, status: Mapping[str, Any]) -> Container:
    state, last = status.get("state") or {}, status.get("lastState") or {}
    running, terminated = state.get("running"), state.get("terminated")
    instance = status.get("containerID") if running is not None or terminated is not None else None
    if instance is None and (last.get("terminated") or {}).get("containerID"):
        instance = last["terminated"]["containerID"]  # waiting to start again: the API serves the last one's log
    waiting = (state.get("waiting") or {}).get("reason") or ("Waiting" if "waiting" in state else None)
    return Container(name=name, instance=instance or None, running=running is not None, waiting=waiting,
                     restarts=int(status.get("restartCount") or 0))


@dataclass(frozen=True)
class Stream:
    """One container of one pod of the selection: the log the API server serves for ``pod``/``container``."""

    flow: str
    index: int | None
    """The item's (iteration's) index, for a ``forEach`` (``repeat``) flow."""
    iterations: bool
    attempt: int
    job: str
    task: str
    pod: str
    container: str
    instance: str
    """The container instance whose log is served now (its ID); a restart makes a new one."""
    running: bool

    @property
    def key(self) -> tuple[str, str]:
        """What stays the same across the container's restarts: (pod, container)."""
        return (self.pod, self.container)

    @property
    def prefix(self) -> str:
        """``[flow/task/pod/container]``, or ``[flow/index/task/pod/container]`` for an item or an iteration."""
        index = "" if self.index is None else f"{self.index}/"
        return f"[{self.flow}/{index}{self.task}/{self.pod}/{self.container}]"


@dataclass(frozen=True)
class Note:
    """What is said of a part of the selection that shows no log. ``pending``: it may still come (not started, no
    pods yet), so a follower waits instead of saying it; otherwise it never will (the pods are gone)."""

    flow: str
    text: str
    pending: bool = False


@dataclass(frozen=True)
class Problem:
    """A selection that names nothing there is (``usage``: flags that do not go together); the message says what
    to do."""

    message: str
    usage: bool = False


@dataclass(frozen=True)
class LogPlan:
    """The streams of a selection, in the order they are shown, and what is said of the rest."""

    streams: tuple[Stream, ...] = ()
    notes: tuple[Note, ...] = ()
    ended: bool = False
    """The JobFlow has ended (Succeed or Failed): no new vcjob will start."""
    problem: Problem | None = None


@dataclass
class _Unit:
    """The attempts of one unit: attempt number -> (live vcjob, status record)."""

    attempts: dict[int, tuple[VcJob | None, FlowJobStatus | None]] = field(default_factory=dict)


def plan(jobflow: JobFlow, *, jobs: Iterable[VcJob], pods: Iterable[Pod],
         selection: Selection = Selection()) -> LogPlan:
    """The streams and notes of ``selection`` (see the module docstring), from the JobFlow, the vcjobs it may have
    created (only those it controls count) and the pods of its namespace that Volcano labels with a vcjob."""
    problem = check(jobflow, selection)
    ended = (jobflow.status.state.phase if jobflow.status and jobflow.status.state else None) in (
        JobFlowPhase.SUCCEED, JobFlowPhase.FAILED)
    if problem is not None:
        return LogPlan(ended=ended, problem=problem)
    flows = {flow.name: flow for flow in jobflow.spec.flows or ()}
    live = {job.name: job for job in jobs if is_owned_by(job, jobflow)}
    records = {record.name: record for record in (jobflow.status.job_status_list if jobflow.status else None) or ()
               if record.name}
    units = _units(jobflow, live=live, records=records)
    by_job: dict[str, list[Pod]] = {}
    for pod in pods:
        job = live.get(pod.job or "")
        if job is not None and pod.owner_uid is not None and pod.owner_uid == job.metadata.uid:
            by_job.setdefault(job.name, []).append(pod)
    streams: list[Stream] = []
    notes: list[Note] = []
    order = [name for name in flow_graph(jobflow).order if name in flows]
    for name in order if selection.flow is None else [selection.flow]:
        flow = flows[name]
        fan_out = flow.for_each is not None or flow.repeat is not None
        if flow.approval is not None:
            if selection.flow is not None:
                notes.append(Note(name, f"flow {name} is an approval gate: it runs no vcjob, so it has no logs"))
            continue
        found = units.get(name, {})
        if selection.item is not None:
            found = {selection.item: found[selection.item]} if selection.item in found else {}
        if not found:
            notes.append(_not_started(jobflow, name, item=selection.item, iterations=flow.repeat is not None))
            continue
        gone: dict[str, list[tuple[int | None, str, FlowJobStatus | None]]] = {}
        for index in sorted(found, key=lambda i: -1 if i is None else i):
            attempts = found[index].attempts
            number = selection.attempt if selection.attempt is not None else max(attempts)
            if number not in attempts:
                notes.append(Note(name, f"{_who(name, [index], flow.repeat is not None)} has no attempt {number} "
                                        f"(yet): its attempts are {_ranges(sorted(attempts))}", pending=True))
                continue
            job, record = attempts[number]
            if record is not None and record.cached_from:
                gone.setdefault("cached", []).append((index, record.cached_from, record))
            elif job is None and record is not None and not is_final(record.state) and not ended:
                # Recorded as created, not seen yet: the JobFlow's status can be read before the vcjob is.
                notes.append(Note(name, f"{_who(name, [index], flow.repeat is not None)}: vcjob {record.name} is "
                                        "not there yet", pending=True))
            elif job is None:
                gone.setdefault("deleted", []).append((index, record.name if record else "", record))
            elif not by_job.get(job.name):
                if is_final(job.phase):
                    gone.setdefault(f"ended {job.phase.value}", []).append((index, job.name, record))
                else:
                    notes.append(Note(name, f"{_who(name, [index], flow.repeat is not None)}: vcjob {job.name} has "
                                            f"no pods yet ({job.phase.value or 'Pending'})", pending=True))
            else:
                streams.extend(_streams(job, by_job[job.name], flow=name, index=index if fan_out else None,
                                        iterations=flow.repeat is not None, attempt=number, selection=selection))
                if selection.container is None:
                    notes.extend(_unstarted(name, by_job[job.name]))
        notes.extend(_gone(jobflow, name, gone, iterations=flow.repeat is not None))
    if selection.container is not None and not streams and any(by_job.values()):
        have = sorted({c.name for pods_ in by_job.values() for pod in pods_ for c in pod.containers})
        notes.append(Note(selection.flow or "", f"no pod of the selection has a container {selection.container!r} "
                                                f"that has started: their containers are {', '.join(have)}",
                          pending=True))
    return LogPlan(streams=tuple(streams), notes=tuple(notes), ended=ended)


def check(jobflow: JobFlow, selection: Selection) -> Problem | None:
    """Whether the selection names parts the JobFlow has (None: it does)."""
    flows = {flow.name: flow for flow in jobflow.spec.flows or ()}
    if selection.item is not None and selection.flow is None:
        return Problem(f"--item {selection.item} needs a FLOW: kubectl jobflow logs {jobflow.name} FLOW --item "
                       f"{selection.item}", usage=True)
    if selection.flow is not None and selection.flow not in flows:
        return Problem(f"JobFlow {jobflow.namespace}/{jobflow.name} has no flow {selection.flow!r}: its flows are "
                       f"{', '.join(flows) or '(none)'}")
    flow = flows.get(selection.flow or "")
    if selection.item is not None and flow is not None and flow.for_each is None and flow.repeat is None:
        return Problem(f"flow {flow.name} has no items or iterations (neither forEach nor repeat): leave out --item",
                       usage=True)
    return None


_ITEM_ATTEMPT = re.compile(r"(0|[1-9][0-9]*)(?:-r([1-9][0-9]*))?")
_RETRY = re.compile(r"r([1-9][0-9]*)")


def _units(jobflow: JobFlow, *, live: Mapping[str, VcJob],
           records: Mapping[str, FlowJobStatus]) -> dict[str, dict[int | None, _Unit]]:
    """flow -> index (None for a plain flow) -> its attempts, from the vcjob names (live or recorded). A name goes to
    the longest flow name it can be an attempt of, so flow ``a-r1`` is never taken for a retry of ``a``."""
    flows = sorted(jobflow.spec.flows or (), key=lambda flow: -len(flow.name))
    found: dict[str, dict[int | None, _Unit]] = {}
    for name in dict.fromkeys([*live, *records]):
        for flow in flows:
            parsed = parse_job_name(name, jobflow=jobflow.name, flow=flow.name,
                                    fan_out=flow.for_each is not None or flow.repeat is not None)
            if parsed is not None:
                index, attempt = parsed
                unit = found.setdefault(flow.name, {}).setdefault(index, _Unit())
                unit.attempts[attempt] = (live.get(name), records.get(name))
                break
    return found


def parse_job_name(name: str, *, jobflow: str, flow: str, fan_out: bool) -> tuple[int | None, int] | None:
    """(item or iteration index, attempt) of vcjob ``name`` as an attempt of ``flow`` (the inverse of
    :func:`~jobflow_core.vocabulary.naming.attempt_job_name`); None when it is not one. A fan-out flow's vcjobs all
    carry an index, a plain flow's none."""
    base = job_name(jobflow=jobflow, flow=flow)
    if name == base:
        return None if fan_out else (None, 1)
    if not name.startswith(base + "-"):
        return None
    match = (_ITEM_ATTEMPT if fan_out else _RETRY).fullmatch(name[len(base) + 1:])
    if match is None:
        return None
    retry = match[2] if fan_out else match[1]
    return (int(match[1]) if fan_out else None), (int(retry) + 1 if retry else 1)


def _streams(job: VcJob, pods: list[Pod], *, flow: str, index: int | None, iterations: bool, attempt: int,
             selection: Selection) -> list[Stream]:
    tasks = [task.name for task in (job.spec.tasks if job.spec else None) or () if task.name]
    ordered = sorted(pods, key=lambda pod: (tasks.index(pod.task) if pod.task in tasks else len(tasks),
                                            pod.task or "", _replica(pod.name), pod.name))
    return [Stream(flow=flow, index=index, iterations=iterations, attempt=attempt, job=job.name, task=pod.task or "",
                   pod=pod.name, container=container.name, instance=container.instance, running=container.running)
            for pod in ordered for container in pod.containers
            if container.instance is not None and selection.container in (None, container.name)]


def _replica(pod: str) -> int:
    """The replica index Volcano ends a pod's name with (``<vcjob>-<task>-<index>``)."""
    tail = pod.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _unstarted(flow: str, pods: list[Pod]) -> list[Note]:
    return [Note(flow, f"pod {pod.name}: container {c.name} has not started yet ({c.waiting or 'Waiting'})",
                 pending=True)
            for pod in pods for c in pod.containers if c.instance is None]


def _not_started(jobflow: JobFlow, flow: str, *, item: int | None, iterations: bool) -> Note:
    status = jobflow.status
    who = _who(flow, [item], iterations)
    skipped = next((entry for entry in (status.skipped_flows if status else None) or () if entry.name == flow), None)
    if skipped is not None and item is None:
        return Note(flow, f"flow {flow} was skipped{f' ({skipped.message})' if skipped.message else ''}: it ran "
                          "nothing, so it has no logs")
    waiting = next((entry for entry in (status.waiting_flows if status else None) or () if entry.name == flow), None)
    why = f" ({waiting.message})" if waiting is not None and waiting.message else ""
    if (status.state.phase if status and status.state else None) in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
        return Note(flow, f"{who} never ran{why}: the JobFlow ended before it started")
    return Note(flow, f"{who} has not started yet{why}", pending=True)


def _gone(jobflow: JobFlow, flow: str, gone: Mapping[str, list[tuple[int | None, str, FlowJobStatus | None]]], *,
          iterations: bool) -> list[Note]:
    """One note per reason the pods of some units of ``flow`` are gone, the units' indexes as ranges."""
    notes = []
    retained = jobflow.spec.job_retain_policy is RetainPolicy.DELETE
    for reason, units in gone.items():
        who = _who(flow, [index for index, _, _ in units], iterations)
        jobs = ", ".join(job for _, job, _ in units[:3]) + (", ..." if len(units) > 3 else "")
        one = len(units) == 1
        vcjobs, was, its = ("vcjob", "was", "its") if one else ("vcjobs", "were", "their")
        if reason == "cached":
            text = f"{who} reused the Completed run of vcjob {jobs} (memoize): it ran no pods of its own"
        elif reason == "deleted":
            why = "jobRetainPolicy: delete" if retained else "after it ended: ttlSecondsAfterFinished, or by hand"
            text = f"{who}: {vcjobs} {jobs} {was} deleted ({why}); {its} logs are gone with {its} pods"
        else:
            text = (f"{who}: {vcjobs} {jobs} {reason}, and {its} pods are gone (deleted with the vcjob's end, or by "
                    "hand)")
        results = [(index, record.result) for index, _, record in units if record is not None and record.result]
        if len(results) == 1 and len(units) == 1:
            text += f"; the status kept its result: {results[0][1]}"
        elif results:
            text += "; the status kept their results: " + "; ".join(f"{index}: {result}" for index, result in results)
        notes.append(Note(flow, text))
    return notes


def _who(flow: str, indexes: list[int | None], iterations: bool) -> str:
    """``flow b``, ``flow b, item 3``, ``flow b, items 0-2,5``, ``flow t, iteration 1``."""
    numbers = sorted(index for index in indexes if index is not None)
    if not numbers:
        return f"flow {flow}"
    word = "iteration" if iterations else "item"
    return f"flow {flow}, {word}{'s' if len(numbers) > 1 else ''} {_ranges(numbers)}"


def _ranges(numbers: list[int]) -> str:
    """``0-2,5``: sorted numbers with their runs joined."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ",".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)
