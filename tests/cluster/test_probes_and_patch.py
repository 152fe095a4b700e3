"""Probes and patches on the real control plane: what upstream declares in its API and never implemented.

Fake pods on kwok nodes get loopback IPs (127.1.0.0/16), so a test can listen on a pod's IP and port and the
handler's HTTP and TCP probes reach a real socket.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import yaml

from devcluster.testing import LocalCluster
from engine import start_engine
from objects import apply, jobflow, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

TF = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: tf}
spec:
  schedulerName: volcano
  queue: default
  tasks:
  - name: ps
    replicas: 1
    template:
      metadata: {annotations: {kwok.jobflow.dev/run-for: 6s, kwok.jobflow.dev/fail: "true"}}
      spec: {restartPolicy: Never, containers: [{name: ps, image: tf}]}
  - name: worker
    replicas: 2
    template:
      metadata: {annotations: {kwok.jobflow.dev/run-for: 1s}}
      spec: {restartPolicy: Never, containers: [{name: worker, image: tf}]}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: next}
spec:
  schedulerName: volcano
  queue: default
  tasks: [{name: main, replicas: 1, template: {spec: {restartPolicy: Never, containers: [{name: m, image: x}]}}}]
"""


def test_a_task_status_probe_starts_the_next_job_when_workers_succeed_although_ps_fails(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, TF)
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: bocloud}
spec:
  flows:
  - name: tf
  - name: next
    dependsOn:
      targets: [tf]
      probe:
        taskStatusList: [{taskName: worker, phase: Succeeded}]
""")

    cluster.wait_until("vcjob bocloud-next", lambda: "bocloud-next" in vcjobs(cluster, namespace), timeout=60)
    tf = vcjobs(cluster, namespace)["bocloud-tf"]
    assert tf["status"]["state"]["phase"] == "Running", "next must start while ps still runs"

    def tf_ended() -> str | None:
        phase = cluster.vcjob_phase(namespace, "bocloud-tf")
        return phase if phase in ("Failed", "Terminated", "Completed") else None

    assert cluster.wait_until("tf to end after ps failed", tf_ended, timeout=60) in ("Failed", "Terminated")


SERVER = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: server}
spec:
  schedulerName: volcano
  queue: default
  tasks:
  - name: web
    replicas: 1
    template:
      metadata: {annotations: {kwok.jobflow.dev/keep-running: "true"}}
      spec: {restartPolicy: Never, containers: [{name: web, image: nginx}]}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: client}
spec:
  schedulerName: volcano
  queue: default
  tasks: [{name: main, replicas: 1, template: {spec: {restartPolicy: Never, containers: [{name: m, image: x}]}}}]
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: serving}
spec:
  jobRetainPolicy: retain
  flows:
  - name: server
  - name: client
    dependsOn:
      targets: [server]
      probe:
        PROBE
"""


@pytest.fixture
def fast_engine(cluster: LocalCluster, namespace: str):
    running = start_engine(cluster, namespace, handler_config={"RECHECK_SECONDS": 2})
    yield running
    running.stop()


def server_pod_ip(cluster: LocalCluster, namespace: str) -> str:
    def ip() -> str | None:
        pods = cluster.core.list_namespaced_pod(namespace, label_selector="volcano.sh/job-name=serving-server").items
        running = [p for p in pods if p.status.phase == "Running" and p.status.pod_ip]
        return running[0].status.pod_ip if running else None

    return cluster.wait_until("the server pod to run with an IP", ip, timeout=60)


def waiting_message(cluster: LocalCluster, namespace: str) -> dict | None:
    flow = jobflow(cluster, namespace, "serving") or {}
    waits = (flow.get("status") or {}).get("waitingFlows") or []
    return waits[0] if waits else None


@contextmanager
def http_server(ip: str, port: int, *, header: tuple[str, str]) -> Iterator[list[dict]]:
    """A real HTTP server on the fake pod's IP that answers /ready with 200 only when the probe's header is sent."""
    seen: list[dict] = []

    class Ready(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            seen.append({"path": self.path, "header": self.headers.get(header[0])})
            ok = self.path == "/ready" and self.headers.get(header[0]) == header[1]
            self.send_response(200 if ok else 503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((ip, port), Ready)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


def free_port_on(ip: str) -> int:
    with socket.socket() as sock:
        sock.bind((ip, 0))
        return sock.getsockname()[1]


def test_an_http_probe_starts_the_dependent_only_after_the_server_answers(
        cluster: LocalCluster, namespace: str, fast_engine) -> None:
    port = 18080
    probe = f"httpGetList: [{{taskName: web, path: /ready, port: {port}, httpHeader: {{name: X-Probe, value: jf}}}}]"
    apply(cluster, namespace, SERVER.replace("PROBE", probe))
    ip = server_pod_ip(cluster, namespace)

    waiting = cluster.wait_until("the status to say what the client waits for",
                                 lambda: (w := waiting_message(cluster, namespace)) and "HTTP GET" in w["message"]
                                 and w, timeout=30)
    assert waiting["recheckSeconds"] == 2
    assert f"HTTP GET :{port}/ready on task 'web' of vcjob 'serving-server'" in waiting["message"]
    assert "serving-client" not in vcjobs(cluster, namespace)

    with http_server(ip, port, header=("X-Probe", "jf")) as seen:
        cluster.wait_until("the client vcjob", lambda: "serving-client" in vcjobs(cluster, namespace), timeout=30)
    assert {"path": "/ready", "header": "jf"} in seen


def test_a_tcp_probe_starts_the_dependent_only_after_something_listens(
        cluster: LocalCluster, namespace: str, fast_engine) -> None:
    port = 17070
    apply(cluster, namespace, SERVER.replace("PROBE", f"tcpSocketList: [{{taskName: web, port: {port}}}]"))
    ip = server_pod_ip(cluster, namespace)
    cluster.wait_until("the status to say the TCP probe is refused",
                       lambda: (w := waiting_message(cluster, namespace)) and "refused" in w["message"], timeout=30)
    assert "serving-client" not in vcjobs(cluster, namespace)

    listener = socket.create_server((ip, port))
    try:
        cluster.wait_until("the client vcjob", lambda: "serving-client" in vcjobs(cluster, namespace), timeout=30)
    finally:
        listener.close()


def test_a_probe_that_never_passes_leaves_the_dependent_waiting_and_says_why(
        cluster: LocalCluster, namespace: str, fast_engine) -> None:
    apply(cluster, namespace, SERVER.replace("PROBE", "tcpSocketList: [{taskName: web, port: 1}]"))
    server_pod_ip(cluster, namespace)

    waiting = cluster.wait_until("a refused probe in the status",
                                 lambda: (w := waiting_message(cluster, namespace)) and "refused" in w["message"]
                                 and w, timeout=30)

    assert waiting["name"] == "client" and waiting["waitingFor"] == ["server"]
    assert "checked again every 2s" in waiting["message"]
    flow = wait_for_phase(cluster, namespace, "serving", "Running")
    assert "serving-client" not in vcjobs(cluster, namespace)
    assert flow["status"]["progress"] == "0/2"


PATCHED = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: train}
spec:
  minAvailable: 1
  schedulerName: volcano
  queue: default
  maxRetry: 4
  tasks:
  - name: worker
    replicas: 2
    template:
      metadata: {annotations: {kwok.jobflow.dev/keep-running: "true"}}
      spec:
        restartPolicy: Never
        containers:
        - {name: trainer, image: "trainer:1", env: [{name: EPOCHS, value: "10"}, {name: LR, value: "0.1"}]}
        - {name: logger, image: "logger:1"}
"""


def test_a_patch_changes_exactly_what_it_names_and_two_jobflows_get_two_vcjobs(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, PATCHED)
    for name, replicas, epochs in (("small", 3, "20"), ("big", 5, "50")):
        apply(cluster, namespace, f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: {name}}}
spec:
  flows:
  - name: train
    patch:
      jobSpec:
        tasks:
        - name: worker
          replicas: {replicas}
          template:
            spec:
              containers:
              - {{name: trainer, env: [{{name: EPOCHS, value: "{epochs}"}}]}}
              - {{name: logger, image: "logger:2"}}
""")
    jobs = cluster.wait_until("both vcjobs", lambda: (j := vcjobs(cluster, namespace)) and
                              {"small-train", "big-train"} <= set(j) and j, timeout=60)

    for name, replicas, epochs in (("small", 3, "20"), ("big", 5, "50")):
        expected = yaml.safe_load(PATCHED)["spec"]
        worker = expected["tasks"][0]
        worker["replicas"] = replicas
        worker["template"]["spec"]["containers"][0]["env"][0]["value"] = epochs
        worker["template"]["spec"]["containers"][1]["image"] = "logger:2"
        spec = jobs[f"{name}-train"]["spec"]
        task = spec["tasks"][0]
        # Volcano's webhook adds its defaults (task minAvailable, ...): compare what the template and patch set.
        assert task["replicas"] == replicas
        containers = [{k: v for k, v in c.items() if v != {}}  # the vcjob CRD's defaulting adds resources: {}
                      for c in task["template"]["spec"]["containers"]]
        assert containers == worker["template"]["spec"]["containers"]
        assert task["template"]["metadata"] == worker["template"]["metadata"]
        assert {k: spec[k] for k in ("minAvailable", "schedulerName", "queue", "maxRetry")} == {
            "minAvailable": 1, "schedulerName": "volcano", "queue": "default", "maxRetry": 4}
    stored = cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates",
                                                         "train")
    assert stored["spec"]["tasks"][0]["replicas"] == 2, "the JobTemplate itself is never changed"
