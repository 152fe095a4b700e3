"""Knative's own events drive JobFlows to Succeed, with our event source nowhere: none runs in these tests.

``ApiServerSourceAdapter`` below does, for one namespace, what Knative's ApiServerSource receive adapter does
(knative.dev/eventing v0.49.2 ``pkg/adapter/apiserver``; the reference's sections 1.3 to 1.6), written from that
description rather than from our event source, so the two cannot share a mistake:

- a LIST per resource whose items it does not announce (the adapter's store ``Replace()`` is a no-op), then a watch
  from that LIST's resourceVersion; every ADDED, MODIFIED, DELETED becomes one event;
- binary HTTP mode: ``Ce-Specversion``, ``Ce-Id`` (a fresh UUID), ``Ce-Source`` (the API server's URL),
  ``Ce-Type`` ``dev.knative.apiserver.{ref|resource}.{add|update|delete}``, ``Ce-Subject`` (the pseudo self-link
  with the guessed plural), ``Ce-Time`` (Go's RFC 3339 with nanoseconds), the extensions ``Ce-Kind``,
  ``Ce-Apiversion``, ``Ce-Name``, ``Ce-Namespace``, ``Content-Type: application/json``, plus the headers its HTTP
  client adds: ``Kn-Namespace`` (the source's namespace) and a W3C ``Traceparent``;
- the body: Reference mode ``{"kind","namespace","name","apiVersion"}`` as Go marshals an ObjectReference, Resource
  mode the whole object from the watch event (its last state for a delete);
- delivery: up to 6 attempts 100, 200, 400, 800, 1600 ms apart, only on 404, 413, 425, 429, 502, 503, 504 or a
  transport error; anything else (409 and 500 included), or the last failure, drops the event.

The second half is the safety net for everything that adapter loses: a JobFlow whose events were all dropped is
finished by nothing but PingSource events, POSTed as Knative's Broker delivers them.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from devcluster.testing import LocalCluster
from engine import serve
from handlers.kube import KubeApi
from objects import apply, events_of, jobflow, template, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

SOURCE_NAMESPACE = "volcano-jobflow"  # where the ApiServerSource object would live (knative/apiserversource.yaml)
# knative/apiserversource.yaml: (apiVersion, kind, label selector)
RESOURCES = [("flow.volcano.sh/v1alpha1", "JobFlow", None), ("flow.volcano.sh/v1alpha1", "JobTemplate", None),
             ("batch.volcano.sh/v1alpha1", "Job", "volcano.sh/createdByJobFlow")]
CHANGES = {"ADDED": "add", "MODIFIED": "update", "DELETED": "delete"}
RETRIED = {404, 413, 425, 429, 502, 503, 504}  # sdk-go defaultRetriableErrors
BACKOFF_SECONDS = [0.1, 0.2, 0.4, 0.8, 1.6]

FLOW = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: f}
spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}
"""


def go_time() -> str:
    """Now, as Go's time.RFC3339Nano writes it (nanoseconds, trailing zeros trimmed, Z)."""
    seconds, nanos = divmod(time.time_ns(), 10**9)
    fraction = f"{nanos:09d}".rstrip("0")
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """(status, body) of one POST; status 0 when there was no HTTP answer."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError:
        return 0, b""


class ApiServerSourceAdapter:
    """Knative's ApiServerSource receive adapter for one namespace (see the module docstring)."""

    def __init__(self, api: client.ApiClient, namespace: str, sink: str, *, mode: str) -> None:
        self.api, self.namespace, self.sink, self.mode = api, namespace, sink, mode
        self.stop = threading.Event()
        self.listed = threading.Semaphore(0)
        self.sent: Counter[tuple[str, str, int]] = Counter()  # (kind, event type, final status)
        self.threads = [threading.Thread(target=self._run, args=resource, daemon=True) for resource in RESOURCES]

    def start(self) -> ApiServerSourceAdapter:
        """Start watching; returns once every resource was listed (what exists now will never be announced)."""
        for thread in self.threads:
            thread.start()
        for _ in self.threads:
            assert self.listed.acquire(timeout=30), "the adapter could not list its resources"
        return self

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=10)

    def _run(self, api_version: str, kind: str, label: str | None) -> None:
        group, version = api_version.split("/")
        plural = kind.lower() + "s"  # meta.UnsafeGuessKindToResource
        custom = client.CustomObjectsApi(self.api)
        selector = {"label_selector": label} if label else {}
        # The initial LIST ends in the store's Replace(), a no-op: existing objects are never announced.
        version_seen = custom.list_namespaced_custom_object(group, version, self.namespace, plural,
                                                            **selector)["metadata"]["resourceVersion"]
        self.listed.release()
        while not self.stop.is_set():
            stream = watch.Watch().stream(custom.list_namespaced_custom_object, group, version, self.namespace,
                                          plural, resource_version=version_seen, timeout_seconds=2, **selector)
            try:
                for change in stream:
                    obj = change["object"]
                    version_seen = obj["metadata"]["resourceVersion"]
                    if change["type"] in CHANGES:
                        self._send(api_version, kind, plural, CHANGES[change["type"]], obj)
            except ApiException as error:
                if error.status != 410:
                    raise
                # A relist after 410 Gone also ends in the no-op Replace(): what changed meanwhile is lost.
                version_seen = custom.list_namespaced_custom_object(group, version, self.namespace, plural,
                                                                    **selector)["metadata"]["resourceVersion"]

    def _send(self, api_version: str, kind: str, plural: str, change: str, obj: dict) -> None:
        name = obj["metadata"]["name"]
        if self.mode == "Reference":
            data = {"kind": kind, "namespace": self.namespace, "name": name, "apiVersion": api_version}
        else:
            data = obj
        event_type = f"dev.knative.apiserver.{'ref' if self.mode == 'Reference' else 'resource'}.{change}"
        headers = {
            "Content-Type": "application/json",
            "Ce-Specversion": "1.0",
            "Ce-Id": str(uuid.uuid4()),
            "Ce-Source": self.api.configuration.host,
            "Ce-Type": event_type,
            "Ce-Subject": f"/apis/{api_version}/namespaces/{self.namespace}/{plural}/{name}",
            "Ce-Time": go_time(),
            "Ce-Kind": kind,
            "Ce-Apiversion": api_version,
            "Ce-Name": name,
            "Ce-Namespace": self.namespace,
            "Kn-Namespace": SOURCE_NAMESPACE,
            "Traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01",
        }
        body = json.dumps(data, separators=(",", ":")).encode()
        for delay in [*BACKOFF_SECONDS, None]:
            status, reply = post(self.sink, body, headers)
            if (status != 0 and status not in RETRIED) or delay is None:
                break
            time.sleep(delay)
        assert not (200 <= status < 300) or reply == b"", f"a 2xx with a body would be a reply event: {reply!r}"
        self.sent[(kind, event_type, status)] += 1


@contextmanager
def running_adapter(cluster: LocalCluster, namespace: str, sink: str, *,
                    mode: str) -> Iterator[ApiServerSourceAdapter]:
    adapter = ApiServerSourceAdapter(cluster.api, namespace, sink, mode=mode).start()
    try:
        yield adapter
    finally:
        adapter.close()


@pytest.mark.parametrize("mode", ["Reference", "Resource"])
def test_apiserversource_events_alone_take_a_jobflow_to_succeed(cluster: LocalCluster, namespace: str, handler,
                                                                mode: str) -> None:
    apply(cluster, namespace, template("a") + "---\n" + template("b"))
    with running_adapter(cluster, namespace, handler.url, mode=mode) as adapter:  # the templates are not announced
        apply(cluster, namespace, FLOW)
        flow = wait_for_phase(cluster, namespace, "f", "Succeed", timeout=90)

    assert flow["status"]["completedJobs"] == ["f-a", "f-b"]
    prefix = "ref" if mode == "Reference" else "resource"
    statuses = Counter(status for (_, _, status) in adapter.sent.elements())
    assert set(statuses) == {202}, adapter.sent  # every event was taken, none dropped
    assert adapter.sent[("JobFlow", f"dev.knative.apiserver.{prefix}.add", 202)] == 1
    assert adapter.sent[("Job", f"dev.knative.apiserver.{prefix}.add", 202)] == 2
    # The templates existed before the adapter started: only the handler's own status writes announce them.
    assert not [key for key in adapter.sent if key[0] == "JobTemplate" and not key[1].endswith(".update")]
    created = [m for _, reason, m in events_of(cluster, namespace, "f") if reason == "Created"]
    assert created == ["create a job named f-a!", "create a job named f-b!"]


# --- the safety net --------------------------------------------------------------------------------------------

def ping_event() -> tuple[dict[str, str], bytes]:
    """A PingSource event (schedule only: no data) as the Broker's dispatcher delivers it through a Trigger."""
    return {
        "Ce-Specversion": "1.0",
        "Ce-Id": str(uuid.uuid4()),
        "Ce-Source": f"/apis/v1/namespaces/{SOURCE_NAMESPACE}/pingsources/jobflow-resync",
        "Ce-Type": "dev.knative.sources.ping",
        "Ce-Time": go_time(),
        "Ce-Knativearrivaltime": go_time(),  # stamped by the Broker's ingress
        "Prefer": "reply",  # added by the Broker's dispatcher
        "Traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01",
    }, b""


class OneNamespace(KubeApi):
    """The real API, except that a resync lists only the test's namespace: the cluster is shared with other test
    runs, whose JobFlows are not this test's to move."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        super().__init__(api)
        self.namespace = namespace

    def list_jobflows(self, namespace: str | None = None) -> list[dict]:
        return super().list_jobflows(namespace or self.namespace)


@pytest.mark.parametrize("path", ["resync", ""], ids=["POST /resync (knative/pingsource.yaml)", "POST / (a sink)"])
def test_pingsource_events_alone_finish_a_jobflow_whose_events_were_all_lost(cluster: LocalCluster,
                                                                             namespace: str, path: str) -> None:
    # No source runs: every event about these objects is lost.
    apply(cluster, namespace, template("a") + "---\n" + template("b") + "---\n" + FLOW)
    time.sleep(1)
    assert jobflow(cluster, namespace, "f").get("status") is None and not vcjobs(cluster, namespace)

    with serve(OneNamespace(cluster.connection, namespace)) as url:
        def resynced_to_succeed() -> bool:
            headers, body = ping_event()
            assert post(url + path, body, headers) == (202, b"")
            return (jobflow(cluster, namespace, "f").get("status") or {}).get("state", {}).get("phase") == "Succeed"

        cluster.wait_until("JobFlow f to Succeed by resyncs alone", resynced_to_succeed, timeout=90, interval=0.5)

    assert sorted(vcjobs(cluster, namespace)) == ["f-a", "f-b"]
