"""The handler speaks the Knative delivery contract: each case of what it answers, and what a Broker then does.

A Broker's dispatcher (knative.dev/eventing ``pkg/kncloudevents/retries.go``, the reference's section 3.4) treats
an answer thus: a 2xx is delivered (and a 2xx carrying an event is a *reply*, put back into the Broker, which is why
the handler's 2xx has an empty body); 5xx, 404, 408, 409 and 429 are retried with the Trigger's backoff; any other
status goes to the dead-letter sink at once. So: success is 202 and empty, an event retrying cannot fix is a 4xx
outside that list, and trouble that passes (a lost write race, an API server that is down or throttling) is retried.

Events are built as ApiServerSource builds them (the event source's encoder, itself tested against that format).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from engine import RacedKube, serve
from apiclient import cloudevents
from apiclient.connection import Connection
from handlers.kube import KubeApi
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB, ApiType
from objects import apply, jobflow, template
from test_knative_events import ping_event

pytestmark = pytest.mark.cluster

FLOW = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: f}
spec: {flows: [{name: a}]}
"""


def broker_retries(status: int) -> bool:
    """Whether a Knative Broker delivers the event again after this answer (``SelectiveRetry``)."""
    return status >= 500 or status in (404, 408, 409, 429)


def is_reply_event(headers: dict[str, str], body: bytes) -> bool:
    """Whether the Broker would read the answer as a CloudEvent (binary or structured) and re-inject it."""
    lowered = {k.lower(): v for k, v in headers.items()}
    return "ce-specversion" in lowered or lowered.get("content-type", "").startswith("application/cloudevents")


def event(api_type: ApiType, namespace: str, name: str, change=cloudevents.Change.UPDATE):
    envelope = cloudevents.Envelope(api_type, change, {"metadata": {"namespace": namespace, "name": name}})
    return cloudevents.encode(envelope, mode=cloudevents.Mode.REFERENCE, source="https://10.96.0.1:443", overrides={})


def answer(url: str, message: tuple[dict[str, str], bytes]) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of the handler's answer to one POST."""
    headers, body = message
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


# --- 2xx, empty: delivered -------------------------------------------------------------------------------------

def test_a_reconciled_event_is_answered_202_with_no_body_after_the_work_is_done(
        cluster: LocalCluster, namespace: str, handler) -> None:
    apply(cluster, namespace, template("a") + "---\n" + FLOW)

    status, headers, body = answer(handler.url, event(JOBFLOW, namespace, "f"))

    assert (status, body) == (202, b"") and not is_reply_event(headers, body)
    assert jobflow(cluster, namespace, "f")["status"]["pendingJobs"] == ["f-a"]  # done before the answer


def test_an_event_for_an_object_already_gone_is_delivered(namespace: str, handler) -> None:
    status, headers, body = answer(handler.url, event(VCJOB, namespace, "gone", cloudevents.Change.DELETE))

    assert (status, body) == (202, b"") and not is_reply_event(headers, body)


@pytest.mark.parametrize("path", ["", "resync"])
def test_a_ping_event_is_delivered_on_both_routes(cluster: LocalCluster, namespace: str, path: str) -> None:
    class Empty(KubeApi):  # a resync of a cluster with no JobFlows: the shared cluster's are not ours to move
        def list_jobflows(self, namespace: str | None = None) -> list[dict]:
            return []

    with serve(Empty(cluster.connection)) as url:
        status, headers, body = answer(url + path, ping_event())

    assert (status, body) == (202, b"") and not is_reply_event(headers, body)


# --- 4xx: poison, straight to the dead-letter sink -------------------------------------------------------------

POISON = {
    "not a CloudEvent": (b"{}", {"Content-Type": "application/json"}),
    "a batch (never sent unsolicited)": (b"[]", {"Content-Type": "application/cloudevents-batch+json"}),
    "a kind the handler does not reconcile from (batch/v1 Job)": (
        b"{}", {"Content-Type": "application/json", "Ce-Specversion": "1.0", "Ce-Id": "1", "Ce-Source": "s",
                "Ce-Type": "dev.knative.apiserver.ref.update", "Ce-Kind": "Job", "Ce-Apiversion": "batch/v1",
                "Ce-Name": "x", "Ce-Namespace": "y"}),
}


@pytest.mark.parametrize("case", sorted(POISON))
def test_an_event_retrying_cannot_fix_gets_a_4xx_the_broker_does_not_retry(handler, case: str) -> None:
    body, headers = POISON[case]

    status, reply_headers, reply = answer(handler.url, (headers, body))

    assert status == 400 and not broker_retries(status)
    assert "error" in json.loads(reply) and not is_reply_event(reply_headers, reply)


def test_an_object_our_models_cannot_read_gets_422_not_retried(cluster: LocalCluster, namespace: str) -> None:
    class NewerVolcano(KubeApi):
        """A JobFlow as a future Volcano might store it, in a shape this engine cannot read."""

        def get_jobflow(self, namespace: str, name: str) -> dict:
            return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                    "metadata": {"namespace": namespace, "name": name, "resourceVersion": "1"},
                    "spec": {"flows": "a, b"}}

    with serve(NewerVolcano(cluster.connection)) as url:
        status, _, reply = answer(url, event(JOBFLOW, namespace, "f"))

    assert status == 422 and not broker_retries(status)
    assert "does not match the JobFlow API" in json.loads(reply)["error"]


# --- 503: transient, retried ------------------------------------------------------------------------------

def test_a_lost_write_race_gets_503_which_the_broker_retries(cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, template("a") + "---\n" + FLOW)
    with serve(RacedKube(cluster.connection)) as url:
        status, _, reply = answer(url, event(JOBFLOW, namespace, "f"))

    assert status == 503 and broker_retries(status)
    assert json.loads(reply)["retry"] is True


@contextmanager
def api_server_answering(status: int) -> Iterator[Connection]:
    """A stand-in API server that answers every request with ``status`` and a Kubernetes Status body."""
    class Always(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Always)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Connection(f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("api_status", [429, 500, 503])
def test_an_api_server_that_throttles_or_fails_gives_503_which_the_broker_retries(namespace: str,
                                                                                  api_status: int) -> None:
    with api_server_answering(api_status) as api, serve(KubeApi(api)) as url:
        status, _, reply = answer(url, event(JOBFLOW, namespace, "f"))

    assert status == 503 and broker_retries(status)
    assert f"API server answered {api_status}" in json.loads(reply)["error"]


def test_an_unreachable_api_server_gives_503_which_the_broker_retries(namespace: str) -> None:
    with serve(KubeApi(Connection(f"http://127.0.0.1:{free_port()}"))) as url:
        status, _, reply = answer(url, event(JOBFLOW, namespace, "f"))

    assert status == 503 and broker_retries(status)
    assert "unreachable" in json.loads(reply)["error"]
