"""A JobFlow that waits for another, raced: whatever the interleaving of its reconciles (its own events, the awaited
runs' events that wake it, resyncs, up to three at once) with the cluster (runs of the template created, run by
Volcano, deleted), the waiter's binding, once written, is never written differently, its end once recorded never
changes, and its flow's vcjob is created at most once and only after the bound run succeeded (:mod:`interleaving`,
as ``tests/unit/test_race_properties.py`` does for one JobFlow)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apiclient.rest import Conflict, Gone
from handlers.dispatch import Dispatcher, PartlyFailed
from handlers.jobflows import Reconciler
from handlers.writes import Writes
from interleaving import Interleaving, SteppedKube
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, RUN_OF, VCJOB
from memory_kube import MemoryKube
from scenario import TEMPLATE_SPEC

NS = "default"
RUNS = ("t-1", "t-2", "t-3")
NEXT_PHASE = {"": "Pending", "Pending": "Running", "Running": "Completed"}


class WatchedKube(MemoryKube):
    """Notes every status the waiter ``w`` is given and every vcjob created."""

    def __init__(self) -> None:
        super().__init__()
        self.creates: Counter[str] = Counter()
        self.written: list[dict[str, Any]] = []
        self.early: list[str] = []

    def create_vcjob(self, body: dict) -> None:
        super().create_vcjob(body)
        name = body["metadata"]["name"]
        self.creates[name] += 1
        if name == "w-eval":
            entry = ((self.stored(JOBFLOW, NS, "w").get("status") or {}).get("awaitedJobFlows") or [{}])[0]
            bound = self.stored(JOBFLOW, NS, entry.get("jobFlow", ""))
            if entry.get("phase") != "Succeed" and ((bound or {}).get("status") or {}).get("state", {}).get(
                    "phase") != "Succeed":
                self.early.append(name)

    def replace_jobflow_status(self, flow: dict) -> dict:
        written = super().replace_jobflow_status(flow)
        if flow["metadata"]["name"] == "w":
            self.written.append(written.get("status") or {})
        return written


def cluster() -> WatchedKube:
    kube = WatchedKube()
    for name in ("train", "eval"):
        kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
                  "metadata": {"name": name, "namespace": NS}, "spec": yaml.safe_load(TEMPLATE_SPEC)})
    kube.put({"apiVersion": JOBFLOW.api_version, "kind": "JobFlow", "metadata": {"name": "w", "namespace": NS},
              "spec": {"dependsOn": {"jobFlows": [{"template": "t", "withinSeconds": 3600}]},
                       "flows": [{"name": "eval"}]}})
    return kube


def moves(kube: WatchedKube) -> list[tuple[str, str]]:
    found = [("create run", run) for run in RUNS if kube.stored(JOBFLOW, NS, run) is None
             and run not in kube.gone]
    for run in RUNS:
        job = kube.stored(VCJOB, NS, f"{run}-train")
        if job is not None and ((job.get("status") or {}).get("state") or {}).get("phase") != "Completed":
            found.append(("volcano", f"{run}-train"))
        if kube.stored(JOBFLOW, NS, run) is not None:
            found.append(("delete run", run))
    return found


def carry_out(kube: WatchedKube, move: tuple[str, str]) -> None:
    what, name = move
    if what == "create run":
        kube.put({"apiVersion": JOBFLOW.api_version, "kind": "JobFlow",
                  "metadata": {"name": name, "namespace": NS, "labels": {RUN_OF: "t"}},
                  "spec": {"flows": [{"name": "train"}]}})
    elif what == "volcano":
        phase = ((kube.stored(VCJOB, NS, name).get("status") or {}).get("state") or {}).get("phase") or ""
        kube.move(NS, name, NEXT_PHASE[phase])
    else:
        kube.remove(JOBFLOW, NS, name)
        kube.gone.add(name)


def dispatcher(kube: SteppedKube | MemoryKube) -> Dispatcher:
    return Dispatcher(Reconciler(kube, clock=lambda: kube.now, writes=Writes()))


def event(kube: SteppedKube | MemoryKube, name: str) -> None:
    try:
        dispatcher(kube).jobflow(NS, name)
    except (Conflict, Gone):  # lost every race it ran (the event is delivered again), or the run went meanwhile
        pass


def resync(kube: SteppedKube | MemoryKube) -> None:
    try:
        dispatcher(kube).resync()
    except PartlyFailed as failed:
        assert failed.retry, failed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_racing_reconciles_bind_once_record_once_and_start_the_waiter_once(data):
    kube = cluster()
    kube.gone = set()
    race = Interleaving()
    stepped = SteppedKube(kube, race)
    log: list[str] = []
    for _ in range(data.draw(st.integers(min_value=10, max_value=120), label="steps")):
        options = [("step", actor.name) for actor in race.waiting]
        if len(race.waiting) < 3 and len(race.actors) < 12:
            options += [("event", "w"), ("resync", ""), *(("event", run) for run in RUNS
                                                          if kube.stored(JOBFLOW, NS, run) is not None)]
        options += moves(kube)
        if not options:
            break
        choice = data.draw(st.sampled_from(options))
        log.append(" ".join(choice))
        if choice[0] == "step":
            race.step(next(actor for actor in race.actors if actor.name == choice[1]))
        elif choice[0] == "event":
            race.spawn(f"r{len(race.actors)}", lambda name=choice[1]: event(stepped, name))
        elif choice[0] == "resync":
            race.spawn(f"r{len(race.actors)}", lambda: resync(stepped))
        else:
            carry_out(kube, choice)
    race.finish()
    kube.now += timedelta(seconds=1)
    for _ in range(8):  # the race is over: Volcano runs what is left, one reconcile at a time
        for move in [m for m in moves(kube) if m[0] == "volcano"]:
            carry_out(kube, move)
        for run in RUNS:
            event(kube, run)
        event(kube, "w")
    errors = [f"{actor.name}: {actor.error!r}" for actor in race.actors if actor.error is not None]
    assert not errors, errors
    assert kube.creates["w-eval"] <= 1, f"created twice after {log}"
    assert not kube.early, f"started before its run succeeded, after {log}"
    entries = [(status.get("awaitedJobFlows") or [{}])[0] for status in kube.written]
    bindings = {(e.get("jobFlow"), e.get("uid")) for e in entries if e.get("uid")}
    assert len(bindings) <= 1, f"bound to {bindings} after {log}"
    ends = [(e.get("phase"), e.get("endTimestamp"), e.get("reason")) for e in entries
            if e.get("phase") or e.get("reason")]
    assert len(set(ends)) <= 1, f"recorded ends {ends} after {log}"
    phases = [(status.get("state") or {}).get("phase") for status in kube.written]
    final = [phase for phase in phases if phase in ("Succeed", "Failed")]
    assert all(phase == final[0] for phase in final), f"phases {phases} after {log}"
