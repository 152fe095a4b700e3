"""``kubectl jobflow logs``: the logs of a JobFlow's pods through the command line's own client, against an API
server stand-in that serves the JobFlow, its vcjobs, their pods, watches of all three and each container's log
(``timestamps``, ``tailLines``, ``sinceTime`` to the second as the kubelet gets it, ``follow`` until the container
ends), and that can cut a log's connection half-way, as an API-server restart does."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest

from api_standin import serving
from jobflow_core.insight.log_lines import instant
from kubectl_jobflow import cli
from log_objects import jobflow, pod, vcjob

KINDS = {"jobflows": "jobflow", "jobs": "job", "pods": "pod"}


class Kube:
    """What the stand-in serves; every change is a watch event with the next resourceVersion."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.version = 1
        self.objects: dict[str, dict[str, dict]] = {"jobflow": {}, "job": {}, "pod": {}}
        self.events: list[tuple[int, str, str, dict]] = []
        self.logs: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.cut: dict[tuple[str, str], int] = {}
        """(pod, container) -> lines after which its log's next connection is cut."""
        self.half: dict[tuple[str, str], int] = {}
        """(pod, container) -> lines after which its log's next answer ends, cleanly, half-way through a line."""
        self.asked: list[str] = []
        self.answered = 0
        """Log answers that ended (not cut)."""
        self.ticks = 0

    def put(self, which: str, obj: dict) -> None:
        with self.changed:
            self.version += 1
            obj = json.loads(json.dumps(obj))
            obj["metadata"]["resourceVersion"] = str(self.version)
            kind = "MODIFIED" if obj["metadata"]["name"] in self.objects[which] else "ADDED"
            self.objects[which][obj["metadata"]["name"]] = obj
            self.events.append((self.version, which, kind, obj))
            self.changed.notify_all()

    def write(self, pod_name: str, container: str, *texts: str) -> None:
        """Lines a container writes, four to a second (so a second holds lines shown before a cut and after)."""
        with self.changed:
            for text in texts:
                self.ticks += 1
                fraction = f"{self.ticks % 4 * 25:02d}".rstrip("0")  # the kubelet trims trailing zeros
                stamp = f"2026-11-25T09:{self.ticks // 240:02d}:{self.ticks // 4 % 60:02d}" + \
                    (f".{fraction}Z" if fraction else "Z")
                self.logs.setdefault((pod_name, container), []).append((stamp, text))
            self.changed.notify_all()

    def running(self, pod_name: str, container: str) -> bool:
        found = self.objects["pod"].get(pod_name)
        statuses = (found or {}).get("status", {}).get("containerStatuses", [])
        return any(s["name"] == container and "running" in s["state"] for s in statuses)


class Api(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    kube: ClassVar[Kube]

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        self.kube.asked.append(self.path)
        kind = KINDS.get(parts[-1]) or KINDS.get(parts[-2])
        if parts[-1] == "log":
            return self.log(parts[-2], query)
        if parts[-1] in KINDS and query.get("watch") == "true":
            return self.watch(KINDS[parts[-1]], int(query["resourceVersion"]))
        if parts[-1] in KINDS:
            with self.kube.changed:
                items = list(self.kube.objects[kind].values())
                return self.json({"metadata": {"resourceVersion": str(self.kube.version)}, "items": items})
        found = self.kube.objects[kind].get(parts[-1])
        if found is None:
            return self.json({"kind": "Status", "code": 404, "reason": "NotFound", "details": {"name": parts[-1]},
                              "message": f'{parts[-2]} "{parts[-1]}" not found'}, status=404)
        return self.json(found)

    def json(self, body: Any, *, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def chunked(self) -> None:
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def watch(self, which: str, since: int) -> None:
        self.chunked()
        with self.kube.changed:
            self.kube.changed.wait_for(lambda: self.kube.version > since, timeout=0.5)
            events = [(kind, obj) for version, what, kind, obj in self.kube.events if what == which and version > since]
        for kind, obj in events:
            self.chunk(json.dumps({"type": kind, "object": obj}).encode() + b"\n")
        self.chunk(b"")

    def log(self, pod_name: str, query: dict[str, str]) -> None:
        key = (pod_name, query["container"])
        if pod_name not in self.kube.objects["pod"]:
            return self.json({"kind": "Status", "code": 404, "message": f'pods "{pod_name}" not found'}, status=404)
        kube, since = self.kube, query.get("sinceTime")
        with kube.changed:
            lines = kube.logs.get(key, [])
            position = next((n for n, line in enumerate(lines) if since is None or instant(line[0]) >= instant(since)),
                            len(lines))
            if "tailLines" in query:
                position = max(position, len(lines) - int(query["tailLines"]))
        self.chunked()
        sent, cut, half = 0, kube.cut.pop(key, None), kube.half.pop(key, None)
        while True:
            with kube.changed:
                lines = list(kube.logs.get(key, []))
            for stamp, text in lines[position:]:
                if cut is not None and sent == cut:  # an API-server restart: the connection drops mid-answer
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                line = (f"{stamp} {text}" if query.get("timestamps") == "true" else text).encode()
                if half is not None and sent == half:  # the answer ends (cleanly) in the middle of this line
                    self.chunk(line[:len(line) // 2])
                    self.chunk(b"")
                    return
                self.chunk(line + b"\n")
                sent, position = sent + 1, position + 1
            with kube.changed:
                if query.get("follow") != "true" or (position >= len(kube.logs.get(key, []))
                                                       and not kube.running(*key)):
                    break
                kube.changed.wait_for(lambda: len(kube.logs.get(key, [])) > position or not kube.running(*key),
                                      timeout=0.3)
        self.chunk(b"")
        kube.answered += 1

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def kube(tmp_path):
    Api.kube = Kube()
    with serving(Api, tmp_path / "config"):
        Api.kube.config = str(tmp_path / "config")
        yield Api.kube


def logs(kube: Kube, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["logs", *argv, "--kubeconfig", kube.config, "-n", "ns"], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def ran(kube: Kube, *, phase: str = "Running") -> None:
    """Flow ``a`` Completed, the three items of ``b`` too; each container wrote two lines."""
    kube.put("jobflow", jobflow(state={"phase": phase}))
    for job in ("test-a", "test-b-0", "test-b-1", "test-b-2"):
        kube.put("job", vcjob(job, phase="Completed"))
        kube.put("pod", pod(job, containers={"main": "terminated"}))
        kube.write(f"{job}-main-0", "main", f"{job} starts", f"{job} done")


def test_every_line_of_every_pod_in_dag_order_each_prefixed_with_flow_item_pod_and_container(kube):
    ran(kube)
    assert logs(kube, "test") == (0, (
        "[a/main/test-a-main-0/main] test-a starts\n[a/main/test-a-main-0/main] test-a done\n"
        "[b/0/main/test-b-0-main-0/main] test-b-0 starts\n[b/0/main/test-b-0-main-0/main] test-b-0 done\n"
        "[b/1/main/test-b-1-main-0/main] test-b-1 starts\n[b/1/main/test-b-1-main-0/main] test-b-1 done\n"
        "[b/2/main/test-b-2-main-0/main] test-b-2 starts\n[b/2/main/test-b-2-main-0/main] test-b-2 done\n"), "")


def test_one_item_its_last_line_with_its_time(kube):
    ran(kube)
    assert logs(kube, "test", "b", "--item", "1", "--tail", "1", "--timestamps") == (
        0, "[b/1/main/test-b-1-main-0/main] 2026-11-25T09:00:01.5Z test-b-1 done\n", "")


def test_flows_whose_pods_are_gone_are_said_on_stderr_and_nothing_to_show_exits_1(kube):
    flow = jobflow(state={"phase": "Succeed"}, jobStatusList=[{"name": "test-a", "state": "Completed",
                                                               "result": "42 rows"}])
    flow["spec"]["jobRetainPolicy"] = "delete"
    kube.put("jobflow", flow)
    assert logs(kube, "test", "a") == (1, "", "flow a: vcjob test-a was deleted (jobRetainPolicy: delete); its logs "
                                              "are gone with its pods; the status kept its result: 42 rows\n")


def test_a_jobflow_or_flow_that_is_not_there_and_flags_that_do_not_go_together(kube):
    ran(kube)
    code, out, err = logs(kube, "nope")
    assert (code, out) == (1, "")
    assert err == ('Failed to show the logs: JobFlow "ns/nope" not found: check the name and the namespace '
                   "(kubectl jobflow list -A lists them all)\n")
    assert logs(kube, "test", "c") == (1, "", "Failed to show the logs: JobFlow ns/test has no flow 'c': its flows "
                                              "are a, b\n")
    assert logs(kube, "test", "--item", "1")[0] == 2
    assert logs(kube, "test", "b", "--item", "-1")[0] == 2


def test_following_more_running_containers_than_max_log_requests_is_refused_as_kubectl_does(kube):
    kube.put("jobflow", jobflow())
    for job in ("test-b-0", "test-b-1", "test-b-2"):
        kube.put("job", vcjob(job))
        kube.put("pod", pod(job))
    assert logs(kube, "test", "-f", "--max-log-requests", "2") == (2, "", (
        "Failed to show the logs: you are attempting to follow 3 log streams, but maximum allowed concurrency is 2, "
        "use --max-log-requests to increase the limit\n"))


def test_follow_takes_in_later_flows_pods_goes_on_across_a_cut_and_ends_with_the_jobflow(kube):
    kube.put("jobflow", jobflow())
    kube.put("job", vcjob("test-a"))
    kube.put("pod", pod("test-a"))
    kube.write("test-a-main-0", "main", "a1", "a2", "a3")
    kube.cut[("test-a-main-0", "main")] = 2  # the first answer drops after two lines, as an API-server restart
    result: list[tuple[int, str, str]] = []
    follower = threading.Thread(target=lambda: result.append(logs(kube, "test", "-f")))
    follower.start()
    wait_for(lambda: sum("/log?" in path for path in kube.asked) >= 2)  # cut, asked again
    kube.write("test-a-main-0", "main", "a4")
    kube.put("pod", pod("test-a", containers={"main": "terminated"}))
    kube.put("job", vcjob("test-a", phase="Completed"))
    for item in range(3):
        kube.put("job", vcjob(f"test-b-{item}"))
        kube.put("pod", pod(f"test-b-{item}"))
        kube.write(f"test-b-{item}-main-0", "main", f"b{item}")
    wait_for(lambda: sum("test-b" in path and "/log?" in path for path in kube.asked) >= 3)
    for item in range(3):
        kube.write(f"test-b-{item}-main-0", "main", f"b{item} done")
        kube.put("pod", pod(f"test-b-{item}", containers={"main": "terminated"}))
    kube.put("jobflow", jobflow(state={"phase": "Succeed"}))
    follower.join(timeout=30)
    [(code, out, err)] = result
    assert (code, err) == (0, "")
    lines = out.splitlines()
    a = "[a/main/test-a-main-0/main]"
    assert [line for line in lines if line.startswith("[a/")] == [f"{a} a{n}" for n in range(1, 5)]
    for item in range(3):
        b = f"[b/{item}/main/test-b-{item}-main-0/main]"
        assert [line for line in lines if line.startswith(f"[b/{item}/")] == [f"{b} b{item}", f"{b} b{item} done"]
    again = [path for path in kube.asked if "test-a-main-0/log?" in path][1]
    assert "sinceTime=2026-11-25T09%3A00%3A00Z" in again and "tailLines" not in again


def test_follow_goes_on_with_the_log_of_a_restarted_container(kube):
    kube.put("jobflow", jobflow())
    kube.put("job", vcjob("test-a"))
    kube.put("pod", pod("test-a"))
    kube.write("test-a-main-0", "main", "first run")
    result: list[tuple[int, str, str]] = []
    follower = threading.Thread(target=lambda: result.append(logs(kube, "test", "a", "-f")))
    follower.start()
    wait_for(lambda: any("/log?" in path for path in kube.asked))
    kube.put("pod", pod("test-a", containers={"main": "terminated"}))  # it crashed: its log's stream ends
    wait_for(lambda: kube.answered == 1)
    with kube.changed:
        kube.logs[("test-a-main-0", "main")] = []  # the kubelet serves the new container's log
    kube.put("pod", pod("test-a", restarts=1))
    kube.write("test-a-main-0", "main", "second run")
    wait_for(lambda: sum("/log?" in path for path in kube.asked) >= 2)
    kube.put("pod", pod("test-a", restarts=1, containers={"main": "terminated"}))
    kube.put("jobflow", jobflow(state={"phase": "Succeed"}))
    follower.join(timeout=30)
    assert result == [(0, "[a/main/test-a-main-0/main] first run\n[a/main/test-a-main-0/main] second run\n", "")]


def wait_for(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
