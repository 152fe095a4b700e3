"""A finished step never runs twice, and a phase never goes back, whatever the reconciles race with (issue 23).

Reconciles of one JobFlow run side by side (two handlers, a retried delivery, a resync beside a vcjob event), each a
real :class:`~handlers.jobflows.Reconciler` taking turns with the others at every API call
(:mod:`interleaving`). Between any two calls the rest of the cluster may move: Volcano advances a vcjob, Volcano's
garbage collector deletes a Completed vcjob past its ``ttlSecondsAfterFinished``, or a user deletes a Completed
vcjob whose end the status records. The JobFlow itself deletes its vcjobs when it succeeds with
``jobRetainPolicy: delete``; a user may suspend and resume it; the first attempt of a retried flow fails. Hypothesis
draws the interleaving; every one must keep these promises:

* no vcjob name is created twice (a Completed vcjob deleted by any of these paths is never made again);
* once a status says ``Succeed``, no later status says anything else;
* after the race, the JobFlow reaches ``Succeed``.

Reconciles come as single JobFlow events, as resyncs (which hand each JobFlow on as read by their LIST), and as
events carrying a snapshot (issue 25): the JobFlow as it was at one moment of the run so far and its vcjobs as at
another, earlier or later, as two watches may give them (duplicated, reordered, older than the handler's own
writes). A fourth promise: no vcjob is created before every vcjob of its flow's targets had Completed.

Two things are not drawn. A user deleting a Completed vcjob whose end was never recorded: the engine cannot know it
ended, and creates it again (docs/reference.md says so; a ``ttlSecondsAfterFinished`` deletion is held by our
finalizer until the end is recorded, so it is drawn at any moment). And a vcjob completing before every reconcile
that was under way when it was created has ended: a whole run of a vcjob (Volcano scheduling it, its pods running)
takes seconds, one reconcile milliseconds; inside one, a stalled reconcile could still create a vcjob that another
created, ran and deleted meanwhile (docs/architecture.md, "A finished step never runs twice", says why that bound
is the one left).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apiclient.rest import Conflict
from handlers.dispatch import Dispatcher, PartlyFailed
from handlers.jobflows import Reconciler
from handlers.writes import Writes
from interleaving import Interleaving, SteppedKube
from jobflow_core.routing.snapshots import trim
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, VCJOB
from memory_kube import MemoryKube
from scenario import TEMPLATE_SPEC
from seeds import diamond_flows

NS = "default"
SHAPES = {
    "a -> b": "[{name: a}, {name: b, dependsOn: {targets: [a]}}]",
    "diamond": json.dumps(diamond_flows()),  # JSON is YAML's flow style
    "fan-out": "[{name: a}, {name: x, dependsOn: {targets: [a]}, forEach: {items: [1, 2, 3], parallelism: 2}},"
               " {name: b, dependsOn: {targets: [x]}}]",
    "loop": "[{name: l, repeat: {until: 'iteration >= 2', limit: 3}}, {name: b, dependsOn: {targets: [l]}}]",
    "retry, finally": "[{name: a, retry: {limit: 2}}, {name: b, dependsOn: {targets: [a]}}, {name: z, finally: true}]",
    "child": "[{name: c, jobFlow: {template: ct}}, {name: b, dependsOn: {targets: [c]}}]",
}
"""In ``child``, flow ``c`` is a child JobFlow (``f-c``, made from JobFlowTemplate ``ct`` of one flow, ``a``): its
reconciles (its event, which reconciles the parent after it) race with the parent's, Volcano runs its vcjob
``f-c-a``, and a user may delete it once it succeeded, recorded by the parent or not yet (our finalizer holds it,
and a child being deleted keeps the end its status records)."""
FAILS_FIRST = {"f-a"}
"""The first attempt of the retried flow fails (Volcano moves it to Failed): its retry, ``f-a-r1``, completes."""
DELETIONS = ("retain policy", "ttl", "user")
NEXT_PHASE = {"": "Pending", "Pending": "Running", "Running": "Completed"}
SUSPEND = ("user", "suspend")


class CountingKube(MemoryKube):
    """Counts each vcjob name's successful creates and notes the phase of every JobFlow status written."""

    def __init__(self) -> None:
        super().__init__()
        self.creates: Counter[str] = Counter()
        self.phases: list[str] = []
        self.witnesses: dict[str, set[str]] = {}
        """vcjob name -> the reconciles under way when it was (last) created: it ends only after they did."""
        self.under_way: Callable[[], set[str]] = set
        self.early: list[str] = []
        """vcjobs created before every vcjob of their flow's targets had Completed."""

    def create_jobflow(self, body: dict) -> dict:
        created = self._created(body, lambda: super(CountingKube, self).create_jobflow(body))
        return created

    def create_vcjob(self, body: dict) -> None:
        self._created(body, lambda: super(CountingKube, self).create_vcjob(body))

    def _created(self, body: dict, create: Callable[[], Any]) -> Any:
        flow = body["metadata"]["name"].split("-")[1]
        spec = {f["name"]: f for f in self.stored(JOBFLOW, NS, "f")["spec"]["flows"]}
        targets = (spec[flow].get("dependsOn") or {}).get("targets") or ()
        if not all(completed(self, target) for target in targets):
            self.early.append(body["metadata"]["name"])
        created = create()
        self.creates[body["metadata"]["name"]] += 1
        self.witnesses[body["metadata"]["name"]] = self.under_way()
        return created

    def replace_jobflow_status(self, flow: dict) -> dict:
        written = super().replace_jobflow_status(flow)
        if flow["metadata"]["name"] == "f":  # the parent's (a child's phases are its own)
            self.phases.append(((written.get("status") or {}).get("state") or {}).get("phase") or "")
        return written


def cluster_with(shape: str, deletion: str) -> CountingKube:
    kube = CountingKube()
    ttl = {"ttlSecondsAfterFinished": 0} if deletion == "ttl" else {}
    for name in "abcdelxz":
        kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
                  "metadata": {"name": name, "namespace": NS}, "spec": yaml.safe_load(TEMPLATE_SPEC) | ttl})
    retain = "jobRetainPolicy: delete, " if deletion == "retain policy" else ""
    kube.put({"apiVersion": JOBFLOWTEMPLATE.api_version, "kind": JOBFLOWTEMPLATE.kind,
              "metadata": {"name": "ct", "namespace": NS}, "spec": {"jobFlow": {"spec": {"flows": [{"name": "a"}]}}}})
    kube.put(yaml.safe_load(f"apiVersion: {JOBFLOW.api_version}\nkind: JobFlow\n"
                            f"metadata: {{name: f, namespace: {NS}}}\nspec: {{{retain}flows: {SHAPES[shape]}}}"))
    return kube


def live_jobs(kube: MemoryKube) -> list[dict[str, Any]]:
    return [kube.stored(VCJOB, NS, name) for name in kube.names(VCJOB, NS)]


def live_children(kube: MemoryKube) -> list[dict[str, Any]]:
    return [kube.stored(JOBFLOW, NS, name) for name in kube.names(JOBFLOW, NS) if name != "f"]


def phase_of(job: dict[str, Any]) -> str:
    return ((job.get("status") or {}).get("state") or {}).get("phase") or ""


def as_run_phase(child: dict[str, Any]) -> str:
    """A child JobFlow's phase as its flow's run: Succeed is Completed."""
    phase = phase_of(child)
    return "Completed" if phase == "Succeed" else phase


def owned_by_f(job: dict[str, Any]) -> bool:
    return any(ref.get("name") == "f" for ref in job["metadata"].get("ownerReferences") or ())


def recorded_completed(kube: MemoryKube) -> set[str]:
    """The vcjobs the JobFlow's status records as Completed."""
    status = kube.stored(JOBFLOW, NS, "f").get("status") or {}
    return {entry["name"] for entry in status.get("jobStatusList") or () if entry.get("state") == "Completed"} | \
        set(status.get("completedJobs") or ())


def completed(kube: MemoryKube, flow: str) -> bool:
    """Whether every vcjob of ``flow`` (each item and iteration at its last attempt) is Completed, live or as the
    status records it."""
    status = kube.stored(JOBFLOW, NS, "f").get("status") or {}
    known = {entry["name"]: entry.get("state") or "" for entry in status.get("jobStatusList") or ()}
    known |= dict.fromkeys(status.get("completedJobs") or (), "Completed")
    known |= {job["metadata"]["name"]: phase_of(job) for job in live_jobs(kube) if owned_by_f(job)}
    known |= {child["metadata"]["name"]: as_run_phase(child) for child in live_children(kube)}
    ours = {name: phase for name, phase in known.items() if name == f"f-{flow}" or name.startswith(f"f-{flow}-")}
    last = [name for name in ours if not any(other.startswith(f"{name}-r") for other in ours)]
    return bool(last) and all(ours[name] == "Completed" for name in last)


def snapshot_of(history: list[tuple[dict, list[dict]]], *, flow_at: int, jobs_at: int) -> dict:
    """A snapshot as two watches give it: the JobFlow as it was at one moment, its vcjobs as at another."""
    jobflow, jobs = history[flow_at][0], history[jobs_at][1]
    uid = jobflow["metadata"]["uid"]
    return trim(jobflow, [job for job in jobs
                          if any(ref.get("uid") == uid for ref in job["metadata"].get("ownerReferences") or ())])


def cluster_moves(kube: CountingKube, deletion: str) -> list[tuple[str, str]]:
    """What the rest of the cluster can do now: (what, vcjob name)."""
    moves = []
    under_way = kube.under_way()
    for job in live_jobs(kube):
        name, phase = job["metadata"]["name"], phase_of(job)
        if phase in NEXT_PHASE and not job["metadata"].get("deletionTimestamp") and \
                not (phase == "Running" and kube.witnesses.get(name, set()) & under_way):
            moves.append(("volcano", name))
        if phase == "Completed" and not job["metadata"].get("deletionTimestamp"):
            if deletion == "ttl":
                moves.append(("ttl", name))
            if deletion == "user" and name in recorded_completed(kube):
                moves.append(("user", name))
    for child in live_children(kube):
        name = child["metadata"]["name"]
        if phase_of(child) == "Succeed" and deletion == "user" and not child["metadata"].get("deletionTimestamp"):
            moves.append(("user deletes child", name))
    return [*moves, SUSPEND]


def carry_out(kube: MemoryKube, move: tuple[str, str], *, shape: str) -> None:
    what, name = move
    if move == SUSPEND:  # a user suspends the JobFlow, or resumes it
        flow = kube.stored(JOBFLOW, NS, "f")
        flow["spec"]["suspend"] = not flow["spec"].get("suspend")
        kube.put(flow)
    elif what == "user deletes child":
        kube.remove(JOBFLOW, NS, name)
    elif what == "volcano":
        phase = NEXT_PHASE[phase_of(kube.stored(VCJOB, NS, name))]
        kube.move(NS, name, "Failed" if phase == "Completed" and shape.startswith("retry") and name in FAILS_FIRST
                  else phase)
    else:  # Volcano's TTL garbage collector, or a user: held by our finalizer while the job carries it
        kube.remove(VCJOB, NS, name)


def suspended(kube: MemoryKube) -> bool:
    return bool(kube.stored(JOBFLOW, NS, "f")["spec"].get("suspend"))


def reconciler(kube: SteppedKube | MemoryKube) -> Reconciler:
    """A reconcile with a writer of its own: the group commit of JobTemplate writes makes one thread wait for
    another outside the API calls, which the interleaving cannot schedule (tests/unit/test_writes.py covers it)."""
    return Reconciler(kube, clock=lambda: kube.now, writes=Writes())


def reconcile(kube: SteppedKube | MemoryKube, snapshot: dict | None = None) -> None:
    try:
        reconciler(kube).jobflow(NS, "f", snapshot=snapshot)
    except Conflict:  # lost every race it ran: the bus delivers the event again, and the next reconcile goes on
        pass


def child_event(kube: SteppedKube | MemoryKube) -> None:
    """The child JobFlow's event: the child, then its parent (:meth:`handlers.dispatch.Dispatcher.jobflow`)."""
    try:
        Dispatcher(reconciler(kube)).jobflow(NS, "f-c", controller="f")
    except Conflict:
        pass


def resync(kube: SteppedKube) -> None:
    try:
        Dispatcher(reconciler(kube)).resync()
    except PartlyFailed as failed:  # likewise, the next resync goes on
        assert failed.retry, failed


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from(sorted(SHAPES)), deletion=st.sampled_from(DELETIONS), data=st.data())
def test_racing_reconciles_never_create_a_vcjob_twice_nor_move_a_phase_back(shape, deletion, data):
    kube = cluster_with(shape, deletion)
    race = Interleaving()
    stepped = SteppedKube(kube, race)
    kube.under_way = lambda: {actor.name for actor in race.waiting}
    log: list[str] = []
    history = [(kube.stored(JOBFLOW, NS, "f"), live_jobs(kube))]
    # Swarm testing: each example favours some kinds of choice over others (many reconciles at once, or a busy
    # Volcano), which reaches the rare interleavings far sooner than one uniform mix would.
    weights = {kind: data.draw(st.integers(min_value=0, max_value=4), label=f"weight of {kind}")
               for kind in ("step", "reconcile", "cluster")}
    for _ in range(data.draw(st.integers(min_value=10, max_value=150), label="steps")):
        options = {"step": [("step", actor.name) for actor in race.waiting],
                   "reconcile": [("reconcile", ""), ("resync", ""), ("snapshot", ""),
                                 *([("child", "")] if shape == "child" else [])]
                   if len(race.waiting) < 3 and len(race.actors) < 12 else [],
                   "cluster": cluster_moves(kube, deletion)}
        kinds = [kind for kind, found in options.items() if found for _ in range(1 + weights[kind])]
        if not kinds:
            break
        choice = data.draw(st.sampled_from(options[data.draw(st.sampled_from(kinds))]))
        log.append(f"{choice[0]} {choice[1]}")
        if choice[0] == "step":
            race.step(next(actor for actor in race.actors if actor.name == choice[1]))
        elif choice[0] in ("reconcile", "resync", "child"):
            work = {"reconcile": reconcile, "resync": resync, "child": child_event}[choice[0]]
            race.spawn(f"r{len(race.actors)}", lambda work=work: work(stepped))
        elif choice[0] == "snapshot":  # an event carrying a signed snapshot, as old as the watches may be
            moments = st.integers(min_value=0, max_value=len(history) - 1)
            seen = snapshot_of(history, flow_at=data.draw(moments), jobs_at=data.draw(moments))
            race.spawn(f"r{len(race.actors)}", lambda seen=seen: reconcile(stepped, seen))
        else:
            carry_out(kube, choice, shape=shape)
        history.append((kube.stored(JOBFLOW, NS, "f"), live_jobs(kube)))
    race.finish()
    for _ in range(40):  # the race is over: Volcano runs everything to the end, one reconcile at a time
        moves, writes = [move for move in cluster_moves(kube, deletion) if move != SUSPEND], len(kube.phases)
        if suspended(kube):
            carry_out(kube, SUSPEND, shape=shape)
        for move in moves:
            carry_out(kube, move, shape=shape)
        if shape == "child":
            child_event(kube)
        reconcile(kube)
        if not moves and len(kube.phases) == writes and kube.phases[-1:] == ["Succeed"]:
            break
        kube.now += timedelta(seconds=30)  # retry backoffs run out
    errors = [f"{actor.name}: {actor.error!r}" for actor in race.actors if actor.error is not None]
    assert not errors, errors
    assert not kube.early, f"created before their targets completed: {kube.early} after {log}"
    twice = {name: count for name, count in kube.creates.items() if count > 1}
    assert not twice, f"created more than once: {twice} after {log}"
    after = kube.phases[kube.phases.index("Succeed"):] if "Succeed" in kube.phases else []
    assert set(after) <= {"Succeed"}, f"phases written: {kube.phases} after {log}"
    assert kube.phases and kube.phases[-1] == "Succeed", f"phases written: {kube.phases} after {log}"
