"""The one write loop (``handlers/writes.py``, :func:`~handlers.writes.rewrite`): changes re-applied after lost
races, nothing written when nothing changes, a bounded number of attempts; and the group commit of JobTemplate
changes made by reconciles running at once."""

from __future__ import annotations

import threading
import time

import pytest
import yaml

from apiclient.rest import Conflict
from handlers.writes import MAX_ATTEMPTS, REMEMBERED_TEMPLATES, Replan, Writes, rewrite
from jobflow_core import UpdateTemplate
from jobflow_core.flows.memo import Entry, entries_of
from jobflow_core.insight.template_stats import EndedJob
from jobflow_core.models import FlowState, JobFlowStatus
from jobflow_core.planning import notifications
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, MEMO_CACHE
from jobflow_core.vocabulary.phase import FlowOutcome
from memory_kube import T0, MemoryKube
from scenario import TEMPLATE_SPEC

NS = "default"


def put_template(kube: MemoryKube, name: str = "t") -> None:
    kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
              "metadata": {"name": name, "namespace": NS}, "spec": yaml.safe_load(TEMPLATE_SPEC)})


class Stored:
    """One object behind a resourceVersion guard, as the API server keeps it; ``rivals`` writes of someone else
    land between each of our reads and our write, one per write, until there are none left."""

    def __init__(self, rivals: int = 0) -> None:
        self.object = {"metadata": {"resourceVersion": "1"}, "count": 0}
        self.rivals, self.gets, self.writes = rivals, 0, 0

    def get(self) -> dict:
        self.gets += 1
        return self._copy()

    def put(self, wanted: dict) -> dict:
        self.writes += 1
        if self.rivals:
            self.rivals -= 1
            self._store(self.object["count"] + 10)
        if wanted["metadata"]["resourceVersion"] != self.object["metadata"]["resourceVersion"]:
            raise Conflict("conflict: the object has been modified")
        return self._store(wanted["count"])

    def _store(self, count: int) -> dict:
        version = str(int(self.object["metadata"]["resourceVersion"]) + 1)
        self.object = {"metadata": {"resourceVersion": version}, "count": count}
        return self._copy()

    def _copy(self) -> dict:
        return {**self.object, "metadata": dict(self.object["metadata"])}


def add_one(current: dict) -> dict:
    return {**current, "count": current["count"] + 1}


def test_a_write_that_loses_a_race_applies_its_change_again_to_a_fresh_read():
    stored = Stored(rivals=1)
    written = rewrite(kind="Thing", name="default/x", get=stored.get, change=add_one, write=stored.put)
    assert stored.object["count"] == 11  # the rival's 10 kept, our 1 added to it
    assert written == stored.object
    assert (stored.gets, stored.writes) == (2, 2)  # one read and one write per attempt


def test_a_change_that_changes_nothing_writes_nothing_and_gives_back_the_object_as_read():
    stored = Stored()
    assert rewrite(kind="Thing", name="default/x", get=stored.get, change=lambda current: None,
                   write=stored.put) == stored.object
    assert (stored.gets, stored.writes) == (1, 0)


def test_a_write_that_starts_from_an_earlier_read_does_not_read_first():
    stored = Stored()
    rewrite(kind="Thing", name="default/x", get=stored.get, change=add_one, write=stored.put, read=stored.get())
    assert (stored.gets, stored.writes, stored.object["count"]) == (1, 1, 1)  # the one read is the one handed in


def test_an_object_that_is_gone_takes_no_change_and_no_write():
    stored = Stored()
    assert rewrite(kind="Thing", name="default/x", get=lambda: None, change=add_one, write=stored.put) is None
    assert stored.writes == 0


def test_a_loop_that_loses_every_race_gives_up_after_its_attempts_with_conflict():
    """Conflict is what the routes answer 503 with retry (test_shell_routes): the event is delivered again."""
    stored = Stored(rivals=1000)
    with pytest.raises(Conflict, match=f"Thing default/x kept changing during {MAX_ATTEMPTS} attempts; retry later"):
        rewrite(kind="Thing", name="default/x", get=stored.get, change=add_one, write=stored.put)
    assert (stored.gets, stored.writes) == (MAX_ATTEMPTS, MAX_ATTEMPTS)
    assert stored.object["count"] == 10 * MAX_ATTEMPTS  # every rival's write kept, none of ours


def test_a_create_that_finds_the_object_made_meanwhile_reads_it_and_writes_over_it():
    kube = MemoryKube()
    real = kube.create_configmap

    def another_handler_first(body: dict) -> None:
        real(body | {"data": {"other": Entry("default/o-a", T0, "x").to_text()}})
        real(body)  # ours: Exists

    kube.create_configmap = another_handler_first
    Writes.memo(kube, NS, "mine", Entry("default/m-a", T0, "y"))
    assert sorted(entries_of(kube.get_configmap(NS, MEMO_CACHE)["data"])) == ["mine", "other"]


def test_a_memoization_cache_that_keeps_changing_asks_for_a_new_attempt_of_the_reconcile():
    kube = MemoryKube()
    Writes.memo(kube, NS, "first", Entry("default/f-a", T0, "x"))
    kube.replace_configmap = lambda body: (_ for _ in ()).throw(Conflict("always someone else"))
    with pytest.raises(Replan, match="kept changing"):
        Writes.memo(kube, NS, "second", Entry("default/s-a", T0, "y"))


def test_storing_a_memoized_run_the_cache_holds_already_writes_nothing():
    kube = MemoryKube()
    Writes.memo(kube, NS, "first", Entry("default/f-a", T0, "x"))
    kube.replace_configmap = lambda body: pytest.fail("wrote a cache that holds the entry already")
    Writes.memo(kube, NS, "first", Entry("default/f-a", T0, "x"))


def pending(*ids: str) -> dict:
    return {"notifications": {"sequence": len(ids), "pending": [
        {"id": i, "type": "dev.volcano.jobflow.phase", "subject": "phase"} for i in ids]}}


def test_notifications_the_sink_took_are_removed_again_from_a_fresh_read_when_another_writer_came_first():
    kube = MemoryKube()
    read = kube.put({"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind,
                     "metadata": {"name": "f", "namespace": NS}, "spec": {"flows": [{"name": "a"}]},
                     "status": pending("u.1", "u.2")})
    races = iter([True])

    def another_reconcile_first(flow: dict) -> None:
        if next(races, False):
            kube.put(kube.stored(JOBFLOW, NS, "f") | {"status": pending("u.1", "u.2", "u.3")})

    kube.before_status_write = another_reconcile_first
    written = Writes.flow_change(kube, NS, "f", lambda flow: notifications.delivered(flow.status, {"u.1"}), read=read)
    assert [n["id"] for n in kube.stored(JOBFLOW, NS, "f")["status"]["notifications"]["pending"]] == ["u.2", "u.3"]
    assert written == kube.stored(JOBFLOW, NS, "f")


def run(i: int) -> EndedJob:
    return EndedJob(template="t", name=f"f{i}-t", uid=f"uid-{i}", outcome=FlowOutcome.SUCCEEDED, seconds=float(i),
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


class CountingReads(MemoryKube):
    """Counts the template GETs and the PUTs answered 409."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = self.conflicts = 0

    def get_jobtemplate(self, namespace: str, name: str) -> dict | None:
        self.gets += 1
        return super().get_jobtemplate(namespace, name)

    def replace_jobtemplate_status(self, template: dict) -> dict:
        try:
            return super().replace_jobtemplate_status(template)
        except Conflict:
            self.conflicts += 1
            raise


def test_the_next_write_to_a_template_starts_from_what_this_process_wrote_there_last():
    kube, writes = CountingReads(), Writes()
    put_template(kube)
    stale = kube.get_jobtemplate(NS, "t")  # a reconcile's read, made before the writes below
    for i in range(1, 6):
        writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(i),)).apply)
    writes.template(kube, NS, "t", UpdateTemplate("t", added=("f9-t",)).apply, read=stale)
    status = kube.stored(JOBTEMPLATE, NS, "t")["status"]
    assert (status["runs"], status["jobDependsOnList"]) == (5, ["f9-t"])
    assert (kube.gets, kube.conflicts) == (2, 0)  # the one above and the first write's: no GET since, no lost race


def test_a_template_another_process_wrote_since_is_read_again_and_nothing_is_lost():
    kube, writes = CountingReads(), Writes()
    put_template(kube)
    writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(1),)).apply)
    stored = kube.stored(JOBTEMPLATE, NS, "t")  # another handler process records a run of its own
    kube.put(stored | {"status": {**stored["status"], "runs": 2, "succeeded": 2}})
    writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(3),)).apply)
    status = kube.stored(JOBTEMPLATE, NS, "t")["status"]
    assert status["runs"] == 3 and kube.conflicts == 1


def test_a_template_deleted_and_made_again_gets_none_of_the_old_ones_statistics():
    kube, writes = CountingReads(), Writes()
    put_template(kube)
    writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(1), run(2))).apply)
    kube.remove(JOBTEMPLATE, NS, "t")
    put_template(kube)
    writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(3),)).apply)
    assert kube.stored(JOBTEMPLATE, NS, "t")["status"]["runs"] == 1


def test_a_handler_remembers_only_its_last_writes_to_so_many_templates():
    kube, writes = MemoryKube(), Writes()
    for i in range(REMEMBERED_TEMPLATES + 5):
        put_template(kube, f"t{i}")
        writes.template(kube, NS, f"t{i}", UpdateTemplate(f"t{i}", added=(f"x-t{i}",)).apply)
    assert len(writes._written) == REMEMBERED_TEMPLATES
    assert (NS, "t0") not in writes._written and (NS, f"t{REMEMBERED_TEMPLATES + 4}") in writes._written


def test_a_template_deleted_since_this_process_wrote_it_takes_the_change_nowhere():
    kube, writes = MemoryKube(), Writes()
    put_template(kube)
    writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(1),)).apply)
    kube.remove(JOBTEMPLATE, NS, "t")
    writes.template(kube, NS, "t", UpdateTemplate("t", runs=(run(2),)).apply)  # no error: as when a GET finds none
    assert kube.stored(JOBTEMPLATE, NS, "t") is None and writes._written == {}
