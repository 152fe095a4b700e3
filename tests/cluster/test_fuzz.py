"""The fuzz tier (issue 16): over 10,000 generated requests to the real handler process (the Procfile's ``web``
command, gunicorn, against the real API server), and not one is answered with a 5xx but for a transient fault
(503 asking for a retry, which a healthy cluster should not even need); the process is healthy afterwards and its
memory bounded.

The requests are what a confused or hostile sender on the event bus could POST: CloudEvents in binary,
structured and batch mode whose attributes, extensions and data have any JSON type (Reference- and Resource-mode
payloads among them, with names and namespaces valid or not), AdmissionReviews with any object, and bytes that
are nothing at all; and now and then a resync, a scrape of ``/metrics``, a health check.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from demo.procfile import read_procfile
from devcluster.processes import free_port, start
from devcluster.testing import LocalCluster
from engine import answers_health_check, children

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = 10_500

KINDS = [("JobFlow", "flow.volcano.sh/v1alpha1"), ("JobTemplate", "flow.volcano.sh/v1alpha1"),
         ("Job", "batch.volcano.sh/v1alpha1"), ("Job", "batch/v1"), ("Pod", "v1")]
TYPES = ["dev.knative.apiserver.ref.update", "dev.knative.apiserver.resource.add", "dev.knative.apiserver.ref.delete",
         "dev.knative.sources.ping", "com.example.anything"]
# Header values go through http.client: printable ASCII without CR/LF (what an HTTP sender can put there).
header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def names(namespace: str) -> st.SearchStrategy[str]:
    valid = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True) | st.just(namespace)
    return st.one_of(valid, valid, valid, header_text,
                     st.sampled_from(["..", ".", "%", "a/b", "x" * 300, "default", "kube-system"]))


@st.composite
def requests(draw, namespace: str) -> tuple[str, str, dict[str, str], bytes]:
    """(method, path, headers, body) of one request."""
    kind, api_version = draw(st.sampled_from(KINDS))
    reference = {"kind": kind, "apiVersion": api_version, "namespace": draw(names(namespace) | json_values),
                 "name": draw(names(namespace) | json_values)}
    resource = {"kind": kind, "apiVersion": api_version, "metadata": {
        "name": draw(names(namespace)), "namespace": draw(st.sampled_from([namespace, "..", "default"])),
        "ownerReferences": draw(json_values | st.just([{"kind": "JobFlow", "name": "f", "controller": True}]))}}
    data = draw(st.sampled_from([reference, resource]) | json_values)
    what = draw(st.sampled_from(["binary", "binary", "binary", "structured", "structured", "batch", "admission",
                                 "bytes", "resync", "metrics", "healthz"]))
    attributes = {"specversion": draw(st.one_of(st.just("1.0"), st.just("1.0"), st.just("1.0"),
                                                st.sampled_from(["0.3", "2"]), header_text)),
                  "id": draw(header_text.filter(bool)), "source": draw(header_text.filter(bool)),
                  "type": draw(st.sampled_from(TYPES) | header_text),  # made-up types once grew the metrics
                  "kind": kind, "apiversion": api_version, "name": draw(names(namespace)),
                  "namespace": draw(names(namespace)), "jobflow": draw(names(namespace))}
    kept = draw(st.sampled_from(["all", "all", "some"]))  # mostly complete, so that many reach the API server
    attributes = {k: v for k, v in attributes.items()
                  if kept == "all" or draw(st.booleans()) or k in ("specversion", "type")}
    if what == "binary":
        headers = {f"ce-{k}": str(v) for k, v in attributes.items()} | {"Content-Type": "application/json"}
        return "POST", "/", headers, json.dumps(data).encode()
    if what in ("structured", "batch"):
        event = {**attributes, **draw(st.dictionaries(st.text(max_size=8), json_values, max_size=3)), "data": data}
        body = [event, draw(json_values)] if what == "batch" else event
        content = "application/cloudevents-batch+json" if what == "batch" else "application/cloudevents+json"
        return "POST", "/", {"Content-Type": content}, json.dumps(body).encode()
    if what == "admission":
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": draw(header_text), "operation": draw(st.sampled_from(["CREATE", "UPDATE"])),
                              "object": draw(st.sampled_from([resource | {"spec": draw(json_values)}, data])),
                              "oldObject": draw(json_values)}}
        path = draw(st.sampled_from(["/validate/jobflows", "/validate/jobtemplates"]))
        body = json.dumps(draw(st.just(review) | json_values)).encode()
        return "POST", path, {"Content-Type": "application/json"}, body
    if what == "bytes":
        return "POST", "/", {"Content-Type": draw(st.sampled_from(["application/json", "text/plain"]))}, \
            draw(st.binary(max_size=200))
    if what == "resync":  # rare: it reconciles every JobFlow of the cluster
        return ("POST", "/resync", {}, b"") if draw(st.integers(0, 20)) == 0 else ("GET", "/healthz", {}, b"")
    return "GET", "/" + what, {}, b""


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_ten_thousand_generated_requests_get_no_5xx_and_the_handler_stays_healthy_and_small(
        cluster: LocalCluster, namespace: str) -> None:
    port = free_port()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PORT": str(port), "KUBECONFIG": str(cluster.state.kubeconfig), "LOG_LEVEL": "ERROR"}
    web = start("fuzzed-web", Path(shutil.which("bash") or "/bin/bash"),
                ["-c", read_procfile(REPO / "Procfile")["web"]], log_dir=cluster.state.log_dir, env=env, cwd=REPO)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    codes: Counter = Counter()
    unexpected: list[str] = []

    def send(method: str, path: str, headers: dict[str, str], body: bytes) -> int:
        for attempt in (1, 2):  # a connection the server closed is reopened once (http.client does that itself)
            try:
                connection.request(method, path, body=body, headers=headers)
                reply = connection.getresponse()
                text = reply.read()
                break
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                if attempt == 2:
                    unexpected.append(f"no answer to {method} {path} {headers} {body[:300]!r}: {error}")
                    return 0
        if reply.status >= 500 and not (reply.status == 503 and b'"retry":true' in text.replace(b" ", b"")):
            unexpected.append(f"{reply.status} for {method} {path} {headers} {body[:300]!r}: {text[:300]!r}")
        return reply.status

    try:
        cluster.wait_until("the handler to answer", lambda: answers_health_check(port), timeout=60)
        worker = _worker(web.pid)
        for _ in range(200):  # warm up: every import and cache the requests below reach
            send("POST", "/", {"Content-Type": "application/json"}, b"{}")
        before = rss_mib(worker)

        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(requests(namespace))
        def each(request: tuple[str, str, dict[str, str], bytes]) -> None:
            codes[send(*request)] += 1

        each()
        after = rss_mib(worker)
        assert web.alive() and answers_health_check(port), web.log_tail()
    finally:
        connection.close()
        web.stop()
    print(f"{sum(codes.values())} requests: {dict(sorted(codes.items()))}; worker RSS {before:.0f} MiB after "
          f"warm-up, {after:.0f} MiB after")
    assert sum(codes.values()) >= 10_000
    assert unexpected == [], unexpected[:5]
    assert after - before < 40, f"the worker grew from {before:.0f} to {after:.0f} MiB"


def _worker(top: int) -> int:
    """The gunicorn worker: the deepest process under ``bash -c`` (bash may exec gunicorn, or run it as a child)."""
    pid = top
    while below := children(pid):
        pid = below[0]
    assert pid != top, "no gunicorn worker found"
    return pid
