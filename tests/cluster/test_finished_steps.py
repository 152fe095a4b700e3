"""A finished step never runs twice, on the real control plane (issue 23).

Twenty JobFlows whose vcjobs are deleted as soon as they may be (``jobRetainPolicy: delete``, or a JobTemplate
``ttlSecondsAfterFinished: 0`` that Volcano's garbage collector acts on) run under three handlers that race for
every event, with every event duplicated, delayed and reordered on the way and some dropped (a resync every 5 s
makes up for those). A watch sees every vcjob the API server ever added, so a name created twice shows two UIDs even
if the second lived only a moment, and every phase each JobFlow's status went through. The model of the same races,
interleaved call by call, is ``tests/unit/test_race_properties.py``.
"""

from __future__ import annotations

import json
import time

import pytest

import eventsource
from devcluster.testing import LocalCluster
from engine import Mangler, Pinger, Spreader, serve
from apiclient import cloudevents
from handlers.kube import KubeApi
from objects import History, apply, flow_phase, template, vcjobs
from seeds import diamond_flows

pytestmark = pytest.mark.cluster

DIAMONDS = 18
DIAMOND_FLOWS = json.dumps(diamond_flows())  # JSON is YAML (its flow style)
FAN_OUT_FLOWS = ("[{name: a}, {name: x, dependsOn: {targets: [a]}, forEach: {items: [1, 2, 3], parallelism: 2}},"
                 " {name: b, dependsOn: {targets: [x]}}]")
LOOP_FLOWS = "[{name: l, repeat: {until: 'iteration >= 2', limit: 3}}, {name: b, dependsOn: {targets: [l]}}]"


def jobflows(*, retain: str) -> tuple[str, set[str]]:
    """The twenty JobFlows as one YAML stream, and the vcjob names they must create, each once."""
    flows = {**{f"d{i:02}": DIAMOND_FLOWS for i in range(DIAMONDS)}, "fan": FAN_OUT_FLOWS, "loop": LOOP_FLOWS}
    text = "---\n".join(f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {{name: {name}}}\n"
                        f"spec: {{jobRetainPolicy: {retain}, flows: {spec}}}\n" for name, spec in flows.items())
    names = {f"d{i:02}-{flow}" for i in range(DIAMONDS) for flow in "abcde"}
    names |= {"fan-a", "fan-x-0", "fan-x-1", "fan-x-2", "fan-b", "loop-l-0", "loop-l-1", "loop-b"}
    return text, names


@pytest.mark.parametrize("deletion", ["jobRetainPolicy: delete", "ttlSecondsAfterFinished: 0"])
def test_twenty_jobflows_whose_vcjobs_are_deleted_create_each_vcjob_once_under_racing_handlers(
        cluster: LocalCluster, namespace: str, deletion: str) -> None:
    ttl = "  ttlSecondsAfterFinished: 0\n" if deletion.startswith("ttl") else ""
    apply(cluster, namespace, "---\n".join(template(name, run_for="300ms") + ttl for name in "abcdelx"))
    text, expected = jobflows(retain="delete" if not ttl else "retain")
    history = History(cluster, namespace)
    with serve(KubeApi(cluster.connection)) as one, serve(KubeApi(cluster.connection)) as two, \
            serve(KubeApi(cluster.connection)) as three:
        spread = Spreader([one, two, three])
        mangler = Mangler(spread.url, seed=23, drop=0.1)
        pinger = Pinger(one, seconds=5)
        source = eventsource.start(cluster.connection, sink=mangler.url, namespaces=[namespace],
                                   mode=cloudevents.Mode.REFERENCE, resync_seconds=3600, senders=4, watch_seconds=2)
        started = time.monotonic()
        try:
            apply(cluster, namespace, text)
            names = [name for name in (doc.split("name: ")[1].split("}")[0] for doc in text.split("---\n"))]
            cluster.wait_until("every JobFlow to Succeed", lambda: all(
                flow_phase(cluster, namespace, name) == "Succeed" for name in names), timeout=300, interval=1)
            succeeded = time.monotonic() - started
            cluster.wait_until("every vcjob to be deleted", lambda: not vcjobs(cluster, namespace), timeout=120,
                               interval=1)
        finally:
            source.stop()
            pinger.stop()
            mangler.server.shutdown()
            spread.server.shutdown()
    history.stop()
    print(f"{len(names)} JobFlows succeeded in {succeeded:.1f} s; {mangler.dropped} events dropped, "
          f"{mangler.delivered} deliveries to {spread.counts} per handler")
    assert history.created_twice() == {}
    assert set(history.uids) == expected
    assert history.regressions() == {}
    assert {name: seen[-1] for name, seen in history.phases.items()} == dict.fromkeys(names, "Succeed")
    assert mangler.dropped > 0 and all(spread.counts)
