"""Bounded work per event (issue 25): an event that concerns many JobFlows reconciles none of them (our event
source takes them back) or at most ``INLINE_LIMIT`` (the rest handed out to the sink, one event each)."""

from __future__ import annotations

import yaml

from handlers.dispatch import INLINE_LIMIT, Dispatcher
from handlers.hints import hint_from_request
from handlers.jobflows import Reconciler
from handlers.notify import Notifier
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB
from memory_kube import MemoryKube
from sinks import Sink
from test_shell_reconciler import A_THEN_B, NS, template


def many_jobflows(count: int) -> MemoryKube:
    kube = MemoryKube()
    kube.put(template("a"))
    for i in range(count):
        kube.put(yaml.safe_load(A_THEN_B.replace("name: f,", f"name: f{i:02},")))
    return kube


def test_a_resync_from_our_event_source_reconciles_nothing_and_hands_every_jobflow_back():
    kube = many_jobflows(30)
    result = Dispatcher(Reconciler(kube, clock=lambda: kube.now), hand_back=True).resync()
    assert result.outcomes == [] and kube.names(VCJOB, NS) == []
    assert sorted(result.handed) == [(NS, f"f{i:02}") for i in range(30)]


def test_a_resync_from_another_sender_reconciles_the_first_jobflows_and_hands_the_rest_to_the_sink():
    kube = many_jobflows(INLINE_LIMIT + 5)
    with Sink() as sink:
        result = Dispatcher(Reconciler(kube, clock=lambda: kube.now, notifier=Notifier(sink.url))).resync()
    assert len(result.outcomes) == INLINE_LIMIT and len(kube.names(VCJOB, NS)) == INLINE_LIMIT
    handed = [hint_from_request(r.headers, r.body) for r in sink.received  # not the notifications
              if r.headers["ce-type"].startswith("dev.knative.apiserver.")]
    assert [(hint.about, hint.namespace) for hint in handed] == [(JOBFLOW, NS)] * 5
    assert {hint.name for hint in handed} | {o.jobflow.split("/")[1] for o in result.outcomes} == \
        {f"f{i:02}" for i in range(INLINE_LIMIT + 5)}


def test_without_a_sink_or_our_event_source_every_jobflow_is_reconciled_inline():
    kube = many_jobflows(INLINE_LIMIT + 5)
    result = Dispatcher(Reconciler(kube, clock=lambda: kube.now)).resync()
    assert len(result.outcomes) == INLINE_LIMIT + 5 and len(kube.names(VCJOB, NS)) == INLINE_LIMIT + 5
