"""The one write loop (``handlers/writes.py``): changes re-applied after lost races, and the group commit of
JobTemplate changes made by reconciles running at once."""

from __future__ import annotations

import threading
import time

import pytest
import yaml

from handlers.kube import Conflict
from handlers.writes import Replan, Writes
from jobflow_core import UpdateTemplate
from jobflow_core.api import JOBFLOW, JOBTEMPLATE
from jobflow_core.models import FlowState, JobFlowStatus
from jobflow_core.phase import FlowOutcome
from jobflow_core.run_stats import Run
from memory_kube import T0, MemoryKube
from scenario import TEMPLATE_SPEC

NS = "default"


def put_template(kube: MemoryKube, name: str = "t") -> None:
    kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
              "metadata": {"name": name, "namespace": NS}, "spec": yaml.safe_load(TEMPLATE_SPEC)})


def run(i: int) -> Run:
    return Run(template="t", name=f"f{i}-t", uid=f"uid-{i}", outcome=FlowOutcome.SUCCEEDED, seconds=float(i),
               end_time=T0, reason=None)


class SlowWrites(MemoryKube):
    """Each template status PUT takes a moment, so that other reconciles' changes queue up behind it."""

    def __init__(self) -> None:
        super().__init__()
        self.puts = 0
        self.lock = threading.Lock()

    def replace_jobtemplate_status(self, template: dict) -> dict:
        with self.lock:
            self.puts += 1
        time.sleep(0.02)
        with self.lock:
            return super().replace_jobtemplate_status(template)

    def get_jobtemplate(self, namespace: str, name: str) -> dict | None:
        with self.lock:
            return super().get_jobtemplate(namespace, name)


def test_forty_reconciles_recording_runs_in_one_template_at_once_count_every_run_in_far_fewer_writes():
    kube, writes = SlowWrites(), Writes()
    put_template(kube)
    threads = [threading.Thread(target=writes.template, args=(kube, NS, "t", UpdateTemplate("t", runs=(run(i),)).apply))
               for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    status = kube.stored(JOBTEMPLATE, NS, "t")["status"]
    assert (status["runs"], status["succeeded"]) == (40, 40)
    assert kube.puts < 20, kube.puts  # one GET and one PUT for each batch of changes that waited
    assert writes._batches == {}  # nothing kept once the requests are answered


def test_a_template_change_that_loses_a_race_is_applied_again_to_a_fresh_read():
    kube, writes = MemoryKube(), Writes()
    put_template(kube)
    real = kube.replace_jobtemplate_status
    races = iter([True])

    def other_writer_first(template: dict) -> dict:
        if next(races, False):
            stored = kube.stored(JOBTEMPLATE, NS, "t")  # another handler process counted a run meanwhile
            kube.put(stored | {"status": {"runs": 1, "succeeded": 1, "failed": 0, "jobDependsOnList": ["x-t"]}})
        return real(template)

    kube.replace_jobtemplate_status = other_writer_first
    writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(1),), added=("f1-t",)).apply)
    status = kube.stored(JOBTEMPLATE, NS, "t")["status"]
    assert (status["runs"], status["jobDependsOnList"]) == (2, ["f1-t", "x-t"])


def test_a_failed_batch_fails_every_reconcile_that_waited_for_it():
    kube, writes = MemoryKube(), Writes()
    put_template(kube)
    kube.replace_jobtemplate_status = lambda template: (_ for _ in ()).throw(Conflict("always someone else"))
    with pytest.raises(Conflict, match="kept changing"):
        writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(1),)).apply)
    assert writes._batches == {}


def test_a_planned_jobflow_status_that_loses_a_race_asks_for_a_new_plan():
    kube, writes = MemoryKube(), Writes()
    flow = kube.put({"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind,
                     "metadata": {"name": "f", "namespace": NS}, "spec": {"flows": [{"name": "a"}]}})
    kube.put(kube.stored(JOBFLOW, NS, "f"))  # someone wrote after our read
    with pytest.raises(Replan):
        writes.planned(kube, flow, JobFlowStatus(state=FlowState(phase="Running")))
