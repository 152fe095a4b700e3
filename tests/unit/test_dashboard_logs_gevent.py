"""The logs pane through the real client, in a process monkey-patched by gevent as ``python -m dashboard`` is:
:mod:`apiclient.logs`' threads and queues become greenlets, and must still follow a running container's log while
the process serves other greenlets, send a line written later, read as the user a proxy names, and leave no reading
behind within moments of the pane's closing, even of a quiet log. In a child process: monkey patching the test
runner would change every other test.
The API server is test_cli_logs.py's stand-in (JobFlow, vcjobs, pods, their watches and each container's log)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

UNIT = Path(__file__).resolve().parent
REPO = UNIT.parents[1]

CHILD = r'''
from gevent import monkey

monkey.patch_all()

import json, sys, tempfile, threading, time
from pathlib import Path

import gevent

sys.path[:0] = [sys.argv[1], sys.argv[2]]
from api_standin import serving
from log_objects import jobflow, pod, vcjob
from test_cli_logs import Api, Kube

from apiclient.cluster import Cluster, Target
from dashboard.app import Settings, create_app
from dashboard.logs import log_reader
from dashboard.pages import Pages
from dashboard.store import Store
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE

impersonated = []
class Seen(Api):
    def do_GET(self):
        impersonated.append(self.headers.get("Impersonate-User"))
        super().do_GET()

Api.kube = kube = Kube()
kube.put("jobflow", jobflow())
kube.put("job", vcjob("test-a"))
kube.put("pod", pod("test-a"))
kube.write("test-a-main-0", "main", "a1", "a2")
result = {}
with tempfile.TemporaryDirectory() as work, serving(Seen, Path(work) / "config"):
    cluster = Cluster(Target(kubeconfig=str(Path(work) / "config")), program="dashboard")
    store = Store()
    store.fill(JOBFLOW, [jobflow()])
    store.fill(JOBTEMPLATE, [])
    settings = Settings(token="t", logs=log_reader(cluster), user_header="X-Forwarded-User")
    web = create_app(store, Pages(store, None), settings).test_client()
    ticks = []
    ticker = gevent.spawn(lambda: [ticks.append(gevent.sleep(0.05)) for _ in iter(int, 1)])
    response = web.get("/api/jobflows/ns/test/logs?flow=a", headers={"X-Forwarded-User": "ana"}, buffered=False)
    chunks = iter(response.response)
    texts = []
    def read_until(count):
        while len(texts) < count:
            chunk = next(chunks).decode()
            if chunk.startswith("event: lines"):
                texts.extend(line["prefix"] + " " + line["text"] for line in json.loads(chunk.split("data: ", 1)[1]))
    read_until(2)
    started = len(ticks)
    gevent.spawn_later(0.5, kube.write, "test-a-main-0", "main", "a3")
    read_until(3)
    result["lines"] = texts
    result["ticked_while_following"] = len(ticks) - started
    result["threads_while_open"] = sorted({t.name for t in threading.enumerate() if t.name.startswith("logs")})
    response.close()  # the log stays quiet: its follower's read is shut down, not waited out
    closed = time.monotonic()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(t.name.startswith("logs") for t in threading.enumerate()):
        gevent.sleep(0.1)
    result["threads_after_close"] = sorted(t.name for t in threading.enumerate() if t.name.startswith("logs"))
    result["seconds_to_end"] = time.monotonic() - closed
    result["impersonated"] = sorted(set(impersonated))
    ticker.kill()
print(json.dumps(result))
'''


def test_under_gevent_the_pane_follows_a_running_container_as_the_user_and_leaves_nothing_behind() -> None:
    child = subprocess.run([sys.executable, "-c", CHILD, str(UNIT), str(REPO)], capture_output=True, text=True,
                           timeout=60, cwd=REPO)
    assert child.returncode == 0, child.stderr
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert result["lines"] == [f"[a/main/test-a-main-0/main] a{n}" for n in (1, 2, 3)]
    assert result["ticked_while_following"] >= 5  # the other greenlets ran while the pane waited for a3
    assert "logs-test-a-main-0-main" in result["threads_while_open"]
    assert result["threads_after_close"] == []
    assert result["seconds_to_end"] < 3  # a quiet log's read is not waited out (60 s)
    assert result["impersonated"] == ["ana"]  # the watches and the log's stream too, not only the first reads
