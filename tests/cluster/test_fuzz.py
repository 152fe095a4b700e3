"""The fuzz tier (issue 16): over 10,000 generated requests to the real handler process (the Procfile's ``web``
command, gunicorn, against the real API server), and not one is answered with a 5xx but for a transient fault
(503 asking for a retry, which a healthy cluster should not even need); the process is healthy afterwards, and once
warmed up its memory grows less than 10 % (issue 25).

The requests are what a confused or hostile sender on the event bus could POST: CloudEvents in binary,
structured and batch mode whose attributes, extensions and data have any JSON type (Reference- and Resource-mode
payloads among them, with names and namespaces valid or not), AdmissionReviews with any object, and bytes that
are nothing at all; and now and then a resync, a scrape of ``/metrics``, a health check. Mixed in, what a working
cluster sends: events about real JobFlows (diamonds with a ``when`` condition, run to their end by these very
events on the real Volcano), their vcjobs and JobTemplates, and AdmissionReviews of valid JobFlows whose
conditions nobody wrote before (each a new CEL program to compile).

Memory: warm-up is a first run of 1,000 generated requests of the same mix (every path imports and caches what it
needs: the admission core, CEL, the Kubernetes client's models); growth is what the next 10,500 add to the worker's
resident memory (docs/robustness.md has the figures).
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
from engine import children
from healthz import answers_healthz, wait_for_healthz
from objects import apply, template

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = 10_500
WARM_UP = 1_000
REAL_FLOWS = [f"real-{index}" for index in range(4)]
REAL = "---\n".join([
    *(template(name, run_for="200ms", message=f"accuracy=0.{index}") for index, name in enumerate("abcd")),
    *(f"""apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: {name}}}
spec:
  failurePolicy: KeepGoing
  flows:
  - {{name: a}}
  - {{name: b, dependsOn: {{targets: [a]}}}}
  - {{name: c, dependsOn: {{targets: [a]}}, when: 'targets.a.result.accuracy >= 0.5'}}
  - {{name: d, dependsOn: {{targets: [b, c], outcome: Finished}}}}
""" for name in REAL_FLOWS)])

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
def real_event(draw, namespace: str) -> tuple[str, str, dict[str, str], bytes]:
    """An ApiServerSource event about one of the real JobFlows, one of their vcjobs or JobTemplates."""
    flow = draw(st.sampled_from(REAL_FLOWS))
    kind, api_version, name = draw(st.sampled_from([
        ("JobFlow", "flow.volcano.sh/v1alpha1", flow), ("JobFlow", "flow.volcano.sh/v1alpha1", flow),
        ("Job", "batch.volcano.sh/v1alpha1", f"{flow}-{draw(st.sampled_from('abcd'))}"),
        ("JobTemplate", "flow.volcano.sh/v1alpha1", draw(st.sampled_from("abcd")))]))
    change = draw(st.sampled_from(["add", "update", "update", "delete"]))
    headers = {"ce-specversion": "1.0", "ce-id": draw(header_text.filter(bool)), "ce-source": "https://fuzz",
               "ce-type": f"dev.knative.apiserver.ref.{change}", "ce-kind": kind, "ce-apiversion": api_version,
               "ce-name": name, "ce-namespace": namespace, "Content-Type": "application/json"}
    reference = {"kind": kind, "apiVersion": api_version, "namespace": namespace, "name": name}
    return "POST", "/", headers, json.dumps(reference).encode()


@st.composite
def valid_review(draw, namespace: str) -> tuple[str, str, dict[str, str], bytes]:
    """An AdmissionReview of a valid JobFlow with a condition of its own (a new CEL program each time)."""
    threshold = draw(st.integers(0, 10**9))
    flows = [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]},
                             "when": f"targets.a.result.accuracy >= {threshold} || jobflow.name == 'x{threshold}'"}]
    jobflow = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
               "metadata": {"name": draw(names(namespace)), "namespace": namespace}, "spec": {"flows": flows}}
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": draw(header_text.filter(bool)), "operation": "CREATE", "namespace": namespace,
                          "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": "JobFlow"},
                          "object": jobflow}}
    return "POST", "/validate/jobflows", {"Content-Type": "application/json"}, json.dumps(review).encode()


@st.composite
def requests(draw, namespace: str) -> tuple[str, str, dict[str, str], bytes]:
    """(method, path, headers, body) of one request."""
    mix = draw(st.sampled_from(["made up"] * 6 + ["real"] * 3 + ["valid review"]))
    if mix == "real":
        return draw(real_event(namespace))
    if mix == "valid review":
        return draw(valid_review(namespace))
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
    apply(cluster, namespace, REAL)
    port = free_port()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PORT": str(port), "KUBECONFIG": str(cluster.state.kubeconfig), "LOG_LEVEL": "ERROR"}
    web = start("fuzzed-web", Path(shutil.which("bash") or "/bin/bash"),
                ["-c", read_procfile(REPO / "Procfile")["web"]], log_dir=cluster.state.log_dir, env=env, cwd=REPO)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    codes: Counter = Counter()
    unexpected: list[str] = []
    memory: list[tuple[int, float, float]] = []  # (requests sent, master MiB, worker MiB)

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
        wait_for_healthz(f"http://127.0.0.1:{port}/", timeout=60, server=web)
        master, worker = _master(web.pid), _worker(web.pid)
        memory.append((0, rss_mib(master), rss_mib(worker)))

        @settings(max_examples=WARM_UP, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(requests(namespace))
        def warm_up(request: tuple[str, str, dict[str, str], bytes]) -> None:
            send(*request)

        warm_up()
        memory.append((WARM_UP, rss_mib(master), rss_mib(worker)))

        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(requests(namespace))
        def each(request: tuple[str, str, dict[str, str], bytes]) -> None:
            codes[send(*request)] += 1
            if sum(codes.values()) % 2_000 == 0:
                memory.append((WARM_UP + sum(codes.values()), rss_mib(master), rss_mib(worker)))

        each()
        memory.append((WARM_UP + sum(codes.values()), rss_mib(master), rss_mib(worker)))
        assert web.alive() and answers_healthz(f"http://127.0.0.1:{port}/"), web.log_tail()
    finally:
        connection.close()
        web.stop()
    print(f"{sum(codes.values())} requests after {WARM_UP} to warm up: {dict(sorted(codes.items()))}; RSS (MiB, "
          "master + worker) after n requests: " + ", ".join(f"{n}: {m:.1f} + {w:.1f}" for n, m, w in memory))
    assert sum(codes.values()) >= 10_000
    assert unexpected == [], unexpected[:5]
    assert codes[202] > 1_000, "too few events reached a reconcile for the memory figure to mean anything"
    warmed, end = memory[1][2], memory[-1][2]
    assert end < 1.10 * warmed, f"after warm-up the worker grew from {warmed:.1f} to {end:.1f} MiB (10 % allowed)"


def _master(top: int) -> int:
    """The gunicorn master: ``bash -c`` itself when bash exec'd gunicorn, else its child."""
    below = children(top)
    return top if not below or not children(below[0]) else below[0]


def _worker(top: int) -> int:
    """The gunicorn worker: the deepest process under ``bash -c`` (bash may exec gunicorn, or run it as a child)."""
    pid = top
    while below := children(pid):
        pid = below[0]
    assert pid != top, "no gunicorn worker found"
    return pid
