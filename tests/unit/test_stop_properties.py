"""Stop and terminate (``spec.shutdown``) under racing reconciles: once a stop lands, nothing new starts (issue 43).

The same race model as ``test_race_properties.py``: real :class:`~handlers.jobflows.Reconciler` s take turns at
every API call with each other and with the cluster (Volcano advancing vcjobs, its job controller carrying out the
abort Commands), events arrive as single JobFlow events, resyncs and snapshots as old as the watches may give them
(duplicated, reordered). At a moment Hypothesis draws, a user sets ``spec.shutdown`` (``Stop`` or ``Terminate``).
Every interleaving must keep these promises:

* **no flow starts after the stop**: every vcjob created once the stop was stored is one the status already named
  when it landed (a create in flight, whose guarded status write won the race before the stop); the others lose
  their status write to the stop's new resourceVersion, so they create nothing. The one exception: with ``Stop``,
  the ``finally`` flow;
* **nothing is retried after the stop**: no new attempt (``-r<n>``) of a flow whose vcjob the stop aborted;
* **what ran is aborted**: at the end, no vcjob but a ``finally`` one (with ``Stop``) runs, and the aborts were asked
  again until Volcano carried them out (a Command lost or carried out late changes nothing);
* **the JobFlow ends Failed** with reason Stopped or Terminated (unless it had succeeded before the stop), its phase
  never goes back; with ``Stop`` its ``finally`` flow ran, once; with ``Terminate`` it never started after the stop.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apiclient.rest import Conflict
from handlers.dispatch import Dispatcher, PartlyFailed
from handlers.jobflows import Reconciler
from handlers.writes import Writes
from interleaving import Interleaving, SteppedKube
from jobflow_core.routing.snapshots import trim
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB
from memory_kube import MemoryKube
from scenario import TEMPLATE_SPEC

NS = "default"
SHAPES = {
    "a -> b, finally": "[{name: a}, {name: b, dependsOn: {targets: [a]}}, {name: z, finally: true}]",
    "retry, handler, finally": "[{name: a, retry: {limit: 2}}, {name: h, dependsOn: {targets: [a], outcome: Failed}},"
                               " {name: b, dependsOn: {targets: [a]}}, {name: z, finally: true}]",
    "fan-out, finally": "[{name: a}, {name: x, dependsOn: {targets: [a]}, forEach: {items: [1, 2, 3], "
                        "parallelism: 2}}, {name: z, finally: true}]",
}
NEXT_PHASE = {"": "Pending", "Pending": "Running", "Running": "Completed"}


class StopKube(MemoryKube):
    """Counts creates, notes the phases written, and which vcjobs were created once the stop was stored."""

    def __init__(self) -> None:
        super().__init__()
        self.creates: Counter[str] = Counter()
        self.phases: list[str] = []
        self.named_at_stop: set[str] | None = None
        """The vcjob names the status held when the stop landed (None: no stop yet)."""
        self.after_stop: list[str] = []
        self.failed_before = False
        """The JobFlow was Failed when the stop landed (its reason then stays what it was)."""

    def create_vcjob(self, body: dict) -> None:
        super().create_vcjob(body)
        name = body["metadata"]["name"]
        self.creates[name] += 1
        if self.named_at_stop is not None:
            self.after_stop.append(name)

    def replace_jobflow_status(self, flow: dict) -> dict:
        written = super().replace_jobflow_status(flow)
        self.phases.append(((written.get("status") or {}).get("state") or {}).get("phase") or "")
        return written

    def stop(self, how: str) -> None:
        flow = self.stored(JOBFLOW, NS, "f")
        flow["spec"]["shutdown"] = how
        self.named_at_stop = named(flow)
        self.failed_before = ((flow.get("status") or {}).get("state") or {}).get("phase") == "Failed"
        self.put(flow)


def named(flow: dict) -> set[str]:
    """Every vcjob name a JobFlow's status holds (a plan's status names the vcjobs it is about to create)."""
    status = flow.get("status") or {}
    names = {entry["name"] for entry in status.get("jobStatusList") or () if entry.get("name")}
    for key in ("pendingJobs", "runningJobs", "completedJobs", "failedJobs", "terminatedJobs", "unKnowJobs"):
        names |= set(status.get(key) or ())
    return names | set(status.get("conditions") or {})


def cluster_with(shape: str) -> StopKube:
    kube = StopKube()
    for name in "abhxz":
        kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
                  "metadata": {"name": name, "namespace": NS}, "spec": yaml.safe_load(TEMPLATE_SPEC)})
    kube.put(yaml.safe_load(f"apiVersion: {JOBFLOW.api_version}\nkind: JobFlow\n"
                            f"metadata: {{name: f, namespace: {NS}}}\nspec: {{flows: {SHAPES[shape]}}}"))
    return kube


def phase_of(job: dict) -> str:
    return ((job.get("status") or {}).get("state") or {}).get("phase") or ""


def live_jobs(kube: MemoryKube) -> list[dict]:
    return [kube.stored(VCJOB, NS, name) for name in kube.names(VCJOB, NS)]


def volcano_moves(kube: StopKube) -> list[tuple[str, str]]:
    return [("volcano", job["metadata"]["name"]) for job in live_jobs(kube) if phase_of(job) in NEXT_PHASE]


def move(kube: StopKube, name: str) -> None:
    phase = NEXT_PHASE[phase_of(kube.stored(VCJOB, NS, name))]
    flows = {flow["name"] for flow in kube.stored(JOBFLOW, NS, "f")["spec"]["flows"]}
    # The first attempt of the flow with retries and a failure handler fails.
    kube.move(NS, name, "Failed" if phase == "Completed" and name == "f-a" and "h" in flows else phase)


def reconciler(kube: SteppedKube | MemoryKube) -> Reconciler:
    return Reconciler(kube, clock=lambda: kube.now, writes=Writes())


def reconcile(kube: SteppedKube | MemoryKube, snapshot: dict | None = None) -> None:
    try:
        reconciler(kube).jobflow(NS, "f", snapshot=snapshot)
    except Conflict:  # lost every race: the bus delivers the event again
        pass


def resync(kube: SteppedKube) -> None:
    try:
        Dispatcher(reconciler(kube)).resync()
    except PartlyFailed as failed:
        assert failed.retry, failed


def is_final_flow(name: str) -> bool:
    return name == "f-z" or name.startswith("f-z-")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from(sorted(SHAPES)), how=st.sampled_from(["Stop", "Terminate"]), data=st.data())
def test_once_a_stop_lands_nothing_new_starts_what_ran_is_aborted_and_the_jobflow_ends_failed(shape, how, data):
    kube = cluster_with(shape)
    race = Interleaving()
    stepped = SteppedKube(kube, race)
    log: list[str] = []
    history = [(kube.stored(JOBFLOW, NS, "f"), live_jobs(kube))]
    stop_after = data.draw(st.integers(min_value=0, max_value=60), label="the stop lands after this many steps")
    for step in range(data.draw(st.integers(min_value=stop_after + 1, max_value=100), label="steps")):
        if step == stop_after:
            kube.stop(how)
            log.append(f"stop {how}")
        options = [*(("step", actor.name) for actor in race.waiting),
                   *((("reconcile", ""), ("resync", ""), ("snapshot", "")) if len(race.waiting) < 3
                     and len(race.actors) < 12 else ()),
                   *volcano_moves(kube), ("commands", "")]
        choice = data.draw(st.sampled_from(options))
        log.append(" ".join(choice).strip())
        if choice[0] == "step":
            race.step(next(actor for actor in race.actors if actor.name == choice[1]))
        elif choice[0] in ("reconcile", "resync"):
            race.spawn(f"r{len(race.actors)}", lambda work=reconcile if choice[0] == "reconcile" else resync:
                       work(stepped))
        elif choice[0] == "snapshot":
            moments = st.integers(min_value=0, max_value=len(history) - 1)
            flow, jobs = history[data.draw(moments)][0], history[data.draw(moments)][1]
            seen = trim(flow, [job for job in jobs if any(ref.get("uid") == flow["metadata"]["uid"]
                                                           for ref in job["metadata"].get("ownerReferences") or ())])
            race.spawn(f"r{len(race.actors)}", lambda seen=seen: reconcile(stepped, seen))
        elif choice[0] == "commands":
            kube.carry_out_commands()
        else:
            move(kube, choice[1])
        history.append((kube.stored(JOBFLOW, NS, "f"), live_jobs(kube)))
    race.finish()
    for _ in range(40):  # the race is over: Volcano carries out the aborts; only a finally flow (Stop) runs on
        kube.carry_out_commands()
        for _, name in volcano_moves(kube):
            if how == "Stop" and is_final_flow(name):
                move(kube, name)
        reconcile(kube)
        kube.now += timedelta(seconds=30)
    errors = [f"{actor.name}: {actor.error!r}" for actor in race.actors if actor.error is not None]
    assert not errors, errors
    assert kube.named_at_stop is not None
    new = [name for name in kube.after_stop if name not in kube.named_at_stop]
    allowed = [name for name in new if how == "Stop" and is_final_flow(name)]
    assert new == allowed, f"started after the stop: {sorted(set(new) - set(allowed))} after {log}"
    retried = [name for name in new if "-r" in name.removeprefix("f-")]
    assert not retried, f"retried after the stop: {retried} after {log}"
    twice = {name: count for name, count in kube.creates.items() if count > 1}
    assert not twice, f"created more than once: {twice} after {log}"
    status = kube.stored(JOBFLOW, NS, "f")["status"]
    if status["state"]["phase"] == "Succeed":  # everything had completed before the stop could abort anything
        assert {phase_of(job) for job in live_jobs(kube)} <= {"Completed"}, f"{kube.phases} after {log}"
        return
    assert status["state"]["phase"] == "Failed", f"phases written: {kube.phases} after {log}"
    after = kube.phases[kube.phases.index("Failed"):]
    assert set(after) == {"Failed"}, f"phases written: {kube.phases} after {log}"
    if not kube.failed_before:
        assert status["state"]["reason"] == ("Stopped" if how == "Stop" else "Terminated"), f"after {log}"
    running = [job["metadata"]["name"] for job in live_jobs(kube) if phase_of(job) not in
               ("Completed", "Failed", "Aborted", "Terminated")]
    assert running == [], f"still running at the end: {running} after {log}"
    if how == "Stop":
        assert kube.creates["f-z"] == 1, f"the finally flow did not run once after {log}"
