"""Scale to zero, shown: the handler as a Knative Service run by Knative Serving's own programs, going to zero pods
when idle and woken by the events of a real ApiServerSource adapter.

The cluster is the install tier's (``pods_cluster``: the real kubelet, containerd, kube-proxy). On it
``devcluster/knative_serving.py`` installs Serving's release, whose controller, webhook, autoscaler and activator
run as pods from images of the pinned module's programs, with the fifth, queue-proxy, beside every handler pod;
``devcluster/serving_engine.py`` applies ``knative/base/handler.yaml`` unchanged and runs the ApiServerSource adapter
as a pod sending to the ksvc's address. An event at zero goes adapter -> cluster DNS -> the KIngress stand-in ->
the revision's public Service, whose endpoints Serving points at the activator -> the activator holds it and tells
the autoscaler -> the autoscaler scales the revision's Deployment 0 -> 1 -> the kubelet starts the pod -> the
activator sends the request to its queue-proxy -> the handler -> 202, back along the same way.

Test settings (``knative_serving.SETTINGS``): a 6 s stable window and a 10 s scale-to-zero grace period, so a
handler with nothing to do is gone some 50 s after its last request (the queue-proxy's 30 s drain included).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest
from kubernetes import client

from devcluster import knative_serving, pod_node, serving_engine
from devcluster.testing import LocalCluster
from installation import KUBECTL
from objects import History, apply, diamond_templates, flow_phase
from seeds import diamond_yaml
from serving import EventCounts, handler_processes, remove_plain_install, wait_at_zero

pytestmark = pytest.mark.cluster
BURST = 20
TARGET = "autoscaling.knative.dev/target"


@pytest.fixture(scope="module")
def serving(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """Serving installed, the handler's ksvc Ready and the adapter sending to it (the plain install removed first)."""
    if os.geteuid() != 0:
        pytest.skip("the Serving tier needs root: Knative Serving's programs run as pods on the pod node (network "
                    "namespaces, iptables, containerd, podman); CI runs it as root")
    pods_cluster: LocalCluster = request.getfixturevalue("pods_cluster")
    log = lambda line: print(line, flush=True)  # noqa: E731
    load = partial(pod_node.load_image, pods_cluster.state)
    remove_plain_install(pods_cluster)
    try:
        knative_serving.start(pods_cluster.state, pods_cluster.api, load_image=load, log=log)
        serving_engine.deploy(pods_cluster.api, load_image=load, log=log)
    except Exception as error:  # the message says which step failed and what to do
        pytest.fail(f"Knative Serving could not be installed:\n{error}", pytrace=False)
    yield pods_cluster


@pytest.fixture(scope="module")
def user_namespace(serving: LocalCluster) -> Iterator[str]:
    """One namespace for the module, with the diamond's templates: deleting a namespace between tests would send
    events (its objects' deletions) that wake the handler again."""
    name = serving.create_namespace()
    apply(serving, name, diamond_templates(run_for="1s"))
    yield name
    serving.delete_namespace(name)


def kubectl_get_ksvc(cluster: LocalCluster) -> dict:
    result = subprocess.run([KUBECTL, f"--kubeconfig={cluster.state.kubeconfig}", "get", "ksvc", "--namespace",
                             serving_engine.NAMESPACE, serving_engine.KSVC, "-o", "json"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def set_target(cluster: LocalCluster, target: str) -> None:
    """Set the ksvc's soft concurrency target (a new revision) and wait until the ksvc is Ready with it."""
    client.CustomObjectsApi(cluster.api).patch_namespaced_custom_object(
        *serving_engine.SERVING, serving_engine.NAMESPACE, "services", serving_engine.KSVC,
        {"spec": {"template": {"metadata": {"annotations": {TARGET: target}}}}})
    cluster.wait_until(f"the ksvc Ready with target {target}", lambda: serving_engine.ksvc_ready(cluster.api),
                       timeout=120)


def run_burst(cluster: LocalCluster, namespace: str, *, names: list[str], timeout: float = 240) -> History:
    """Create a diamond of each name at once, wait until all Succeed, and return what was seen
    meanwhile."""
    history = History(cluster, namespace)
    with ThreadPoolExecutor(max_workers=10) as pool:  # the API client's connection pool
        list(pool.map(lambda name: apply(cluster, namespace, diamond_yaml(name)),
                      names))
    cluster.wait_until(f"{len(names)} JobFlows to Succeed", lambda: all(
        flow_phase(cluster, namespace, name) == "Succeed" for name in names), timeout=timeout, interval=1)
    return history.stop()


def assert_each_flow_once(history: History, names: list[str]) -> None:
    """One vcjob per flow of each JobFlow ``names``, and no status going backwards (neither phase nor count)."""
    seen = {name: uids for name, uids in history.uids.items() if name.rsplit("-", 1)[0] in names}
    assert {name: len(uids) for name, uids in seen.items()} == {f"{name}-{flow}": 1 for name in names for flow in "abcde"}
    assert history.regressions() == {}
    ended = {name: counts for name, counts in history.ended.items() if name in names}
    assert {name: (counts == sorted(counts), counts[-1]) for name, counts in ended.items()} == \
        {name: (True, 5) for name in names}, ended


def test_idle_the_revision_has_no_pod_and_no_handler_process_while_the_ksvc_stays_ready(
        serving: LocalCluster, user_namespace: str) -> None:
    wait_at_zero(serving)

    assert handler_processes(serving) == []
    status = kubectl_get_ksvc(serving)["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "ConfigurationsReady": "True", "Ready": "True", "RoutesReady": "True"}
    revision = status["latestReadyRevisionName"]
    activators = {pod.status.pod_ip for pod in serving.core.list_namespaced_pod(
        knative_serving.SYSTEM_NAMESPACE, label_selector="app=activator").items}
    public = serving.core.read_namespaced_endpoints(revision, serving_engine.NAMESPACE)
    assert {address.ip for subset in public.subsets for address in subset.addresses} == activators


def test_a_jobflow_created_at_zero_wakes_the_handler_runs_the_diamond_once_and_the_handler_goes_back_to_zero(
        serving: LocalCluster, user_namespace: str) -> None:
    wait_at_zero(serving)
    counts = EventCounts(serving)

    history = run_burst(serving, user_namespace, names=["wake"])
    counts.settle()

    assert_each_flow_once(history, ["wake"])
    assert counts.handler, "no handler pod was seen"
    assert counts.sent() == counts.received() and all(code == "202" for _, code in counts.sent())
    assert serving_engine.ksvc_ready(serving.api), kubectl_get_ksvc(serving)["status"]
    wait_at_zero(serving)
    assert handler_processes(serving) == []
    assert serving_engine.ksvc_ready(serving.api), kubectl_get_ksvc(serving)["status"]


def test_twenty_jobflows_created_in_one_burst_at_zero_all_succeed_and_no_event_is_lost(
        serving: LocalCluster, user_namespace: str) -> None:
    wait_at_zero(serving)
    counts = EventCounts(serving)
    started = time.monotonic()
    names = [f"burst-{i}" for i in range(BURST)]

    history = run_burst(serving, user_namespace, names=names)
    counts.settle()

    print(f"{BURST} diamonds from zero: all Succeed after {time.monotonic() - started:.1f} s; at most "
          f"{counts.most_pods} handler pods Ready at once; events {dict(counts.sent())}")
    assert_each_flow_once(history, names)
    sent, received = counts.sent(), counts.received()
    assert sum(sent.values()) > BURST * 10  # every JobFlow's own events, and its vcjobs'
    assert sent == received  # by type and code: each request the adapter sent reached a handler pod
    assert {code for _, code in sent} <= {"202", "503"}, sent  # answered; a 503 is retried by the adapter


def test_under_a_burst_the_autoscaler_runs_more_than_one_handler_pod_with_no_duplicate_and_no_lost_write(
        serving: LocalCluster, user_namespace: str) -> None:
    shipped = serving_engine.ksvc(serving.api)["spec"]["template"]["metadata"]["annotations"][TARGET]
    set_target(serving, "1")
    try:
        counts = EventCounts(serving)
        names = [f"out-{i}" for i in range(BURST)]
        history = run_burst(serving, user_namespace, names=names)
        counts.settle()
    finally:  # the tests after this one, and a rerun on this cluster, expect the ksvc as shipped
        set_target(serving, shipped)

    print(f"target 1: at most {counts.most_pods} handler pods Ready at once; events {dict(counts.sent())}")
    assert counts.most_pods > 1
    assert_each_flow_once(history, names)
    assert counts.sent() == counts.received()
