"""The waiting JobFlows woken by the change that makes room (issue 41), in the two places that do it: our event
source's watch cache, and the handler for a sender that is not our event source (Knative's ApiServerSource). The
rules themselves: ``tests/unit/test_queue_wake.py``; on Volcano: ``tests/cluster/test_queues_on_volcano.py``."""

from __future__ import annotations

import yaml

from apiclient.rest import Unavailable
from apiclient.watch_cache import WatchCache
from handlers.dispatch import Dispatcher
from handlers.jobflows import Reconciler
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB
from memory_kube import MemoryKube
from test_queue_reads import NS, template

ONE_STAGE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: {name}, namespace: default}}
spec: {{flows: [{{name: a}}]}}
"""


def full_queue() -> MemoryKube:
    """A queue that holds one gang (4 CPU); ``first`` started in it and ``second`` and ``third`` waiting behind."""
    kube = MemoryKube()
    kube.queues["q"] = {"metadata": {"name": "q"}, "spec": {"weight": 1, "capability": {"cpu": "4"}}}
    kube.put(template("a", queue="q", cpu="4"))
    reconciler = Reconciler(kube, clock=lambda: kube.now)
    for name in ("first", "second", "third"):
        kube.put(yaml.safe_load(ONE_STAGE.format(name=name)))
        kube.tick()
        reconciler.jobflow(NS, name)
    assert kube.names(VCJOB, NS) == ["first-a"]
    return kube


def queue_state(kube: MemoryKube, name: str) -> str:
    return kube.stored(JOBFLOW, NS, name)["status"]["queue"]["state"]


def test_the_handler_starts_the_next_in_line_from_the_event_that_ended_the_one_holding_the_queue() -> None:
    kube = full_queue()
    assert [queue_state(kube, n) for n in ("first", "second", "third")] == ["Admitted", "Waiting", "Waiting"]
    kube.move(NS, "first-a", "Completed")

    result = Dispatcher(Reconciler(kube, clock=lambda: kube.now)).vcjob(NS, "first-a", controller="first",
                                                                       deleted=False)

    assert kube.names(VCJOB, NS) == ["first-a", "second-a"]  # third still waits: one gang at a time
    assert [o.jobflow for o in result.outcomes] == [f"{NS}/first", f"{NS}/second", f"{NS}/third"]
    assert queue_state(kube, "third") == "Waiting"


def test_with_our_event_source_the_handler_leaves_the_waking_to_it() -> None:
    kube = full_queue()
    kube.move(NS, "first-a", "Completed")

    result = Dispatcher(Reconciler(kube, clock=lambda: kube.now), hand_back=True).vcjob(
        NS, "first-a", controller="first", deleted=False)

    assert kube.names(VCJOB, NS) == ["first-a"] and [o.jobflow for o in result.outcomes] == [f"{NS}/first"]


def test_the_event_sources_cache_wakes_those_waiting_when_the_status_says_the_holder_ended() -> None:
    kube = full_queue()
    cache = WatchCache()
    for name in ("first", "second", "third"):
        cache.note(JOBFLOW, kube.stored(JOBFLOW, NS, name), deleted=False)
    cache.woken()  # the first sight of each says nothing about room
    kube.move(NS, "first-a", "Completed")
    Reconciler(kube, clock=lambda: kube.now).jobflow(NS, "first")
    ended = kube.stored(JOBFLOW, NS, "first")
    assert ended["status"]["state"]["phase"] == "Succeed"

    cache.note(JOBFLOW, ended, deleted=False)

    assert cache.woken() == [(NS, "second"), (NS, "third")]
    assert cache.woken() == []  # each change wakes once
    cache.note(JOBFLOW, ended, deleted=False)  # the same status again (a resync): no room freed twice
    assert cache.woken() == []


def test_a_wake_that_cannot_list_the_line_leaves_it_to_the_periodic_look_and_the_event_succeeds() -> None:
    kube = full_queue()
    kube.move(NS, "first-a", "Completed")

    def unreachable(namespace):
        raise Unavailable("API server unreachable: connection refused")

    kube.list_jobflows = unreachable  # the reconcile of first reads it by name; only the wake lists

    result = Dispatcher(Reconciler(kube, clock=lambda: kube.now)).vcjob(NS, "first-a", controller="first",
                                                                       deleted=False)

    assert [o.jobflow for o in result.outcomes] == [f"{NS}/first"] and result.outcomes[0].phase == "Succeed"
    assert kube.names(VCJOB, NS) == ["first-a"]
