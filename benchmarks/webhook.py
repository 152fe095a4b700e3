"""How fast admission is on upstream's worst case: a 2,000-flow layered DAG (2 flows per layer, each depending on
both flows of the layer before, 3,996 edges).

Measured, each many times (p50 / p99 / max):

1. the pure core: ``validate`` on the parsed JobFlow; the whole ``review`` (parse the object, validate, answer) of a
   CREATE, and of an UPDATE that changes every flow's patch while every vcjob exists (both objects parsed, warnings);
2. the webhook over HTTPS on loopback, as the API server calls it: ``handlers.create_app()`` under gunicorn with TLS,
   run with the admission Deployment's own command (``manifests/webhook/``), one new TLS connection per review
   (the API server's worst case) and one kept-alive connection;
3. if a healthy ``make cluster`` runs: the API server's dry-run create of that JobFlow, with our webhook registered
   (scoped to a namespace of this run, deleted at the end) and without it;
4. the validation core at other sizes (linear), and a faithful model of upstream's ``IsDAG`` (a path search from
   every vertex that unmarks on backtrack) counting its calls at small sizes, to show its growth (×4 per layer).

Run: ``.venv/bin/python -m benchmarks.webhook [--flows 2000] [--repeat 200] [--no-cluster]``.
Writes ``benchmarks/results/webhook.json``. A benchmark, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import base64
import copy
import gc
import http.client
import json
import logging
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from werkzeug.serving import make_server

from benchmarks.common import machine, summary_ms, table, write_result
from devcluster import cluster
from devcluster.pki import loopback_serving_cert
from devcluster.processes import free_port
from devcluster.state import ClusterState
from handlers import create_app
from jobflow_core.models import JobFlow
from jobflow_core.validation.jobflows import validate
from jobflow_core.validation.review import JOBFLOW, review
from jobflow_core.vocabulary.api import JOBFLOW as JOBFLOW_TYPE

REPO = Path(__file__).resolve().parent.parent


def layered(count: int, *, name: str = "layered") -> dict:
    flows = [{"name": f"f{i}", **({"dependsOn": {"targets": [f"f{2 * (i // 2) - 2}", f"f{2 * (i // 2) - 1}"]}}
                                  if i >= 2 else {})} for i in range(count)]
    return {"apiVersion": JOBFLOW_TYPE.api_version, "kind": JOBFLOW_TYPE.kind,
            "metadata": {"name": name, "namespace": "default", "uid": "u"}, "spec": {"flows": flows}}


def admission_review(obj: dict, *, old: dict | None = None) -> dict:
    kind = {"group": JOBFLOW_TYPE.group, "version": JOBFLOW_TYPE.version, "kind": JOBFLOW_TYPE.kind}
    request = {"uid": str(uuid.uuid4()), "kind": kind, "operation": "UPDATE" if old else "CREATE",
               "namespace": "default", "object": obj}
    if old:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def update_pair(count: int) -> tuple[dict, dict]:
    """Every flow's vcjob exists (status), and the update gives every flow a patch: the most warnings work."""
    old = layered(count)
    old["status"] = {"jobStatusList": [{"name": f"layered-f{i}", "state": "Completed"} for i in range(count)]}
    new = copy.deepcopy(old)
    for flow in new["spec"]["flows"]:
        flow["patch"] = {"jobSpec": {"queue": "other"}}
    return old, new


def timed(call: Callable[[], object], repeat: int) -> dict:
    call()  # warm-up
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return summary_ms(samples)


# --- 1. the core -----------------------------------------------------------------------------------------------

def core(count: int, repeat: int) -> dict:
    obj = layered(count)
    parsed = JobFlow.model_validate(obj)
    assert validate(parsed) == []
    old, new = update_pair(count)
    created = admission_review(obj)
    updated = admission_review(new, old=old)
    assert review(created, kind=JOBFLOW)["response"]["allowed"]
    assert review(updated, kind=JOBFLOW)["response"]["warnings"]
    return {
        "validate (parsed JobFlow)": timed(lambda: validate(parsed), repeat),
        "review CREATE (parse + validate)": timed(lambda: review(created, kind=JOBFLOW), repeat),
        "review UPDATE (2 objects + warnings)": timed(lambda: review(updated, kind=JOBFLOW), repeat),
    }


# --- 2. the webhook over HTTPS ---------------------------------------------------------------------------------

def admission_command(port: int, cert: Path, key: Path) -> list[str]:
    """The admission Deployment's command, with a loopback port and certificate files put in."""
    docs = yaml.safe_load_all((REPO / "manifests/webhook/base/admission.yaml").read_text())
    deployment = next(doc for doc in docs if doc and doc["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    put_in = {"0.0.0.0:$(PORT)": f"127.0.0.1:{port}", "/tls/tls.crt": str(cert), "/tls/tls.key": str(key)}
    command = [put_in.get(arg, arg) for arg in container["command"]]
    command[0] = str(Path(sys.executable).parent / command[0])
    return [arg for arg in command if arg not in ("--access-logfile", "-")]


def post(connection: http.client.HTTPSConnection, body: bytes) -> dict:
    connection.request("POST", "/validate/jobflows", body=body, headers={"Content-Type": "application/json"})
    reply = connection.getresponse()
    data = reply.read()
    assert reply.status == 200, (reply.status, data[:200])
    return json.loads(data)


def webhook(count: int, repeat: int, workdir: Path) -> dict:
    tls = loopback_serving_cert(workdir, "admission-bench")
    port = free_port()
    server = subprocess.Popen(admission_command(port, tls.cert, tls.key), cwd=workdir, start_new_session=True,
                              env={"HOME": str(workdir), "PATH": os.environ["PATH"], "LOG_LEVEL": "WARNING"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    context = ssl.create_default_context(cafile=str(tls.ca))
    body = json.dumps(admission_review(layered(count))).encode()
    old, new = update_pair(count)
    update_body = json.dumps(admission_review(new, old=old)).encode()
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                post(http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5), body)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)

        def fresh(payload: bytes) -> Callable[[], object]:
            def call() -> object:
                connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
                try:
                    return post(connection, payload)
                finally:
                    connection.close()
            return call

        kept = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
        return {
            "CREATE, new TLS connection each": timed(fresh(body), repeat),
            "CREATE, kept-alive connection": timed(lambda: post(kept, body), repeat),
            "UPDATE, new TLS connection each": timed(fresh(update_body), repeat),
            "request bytes (CREATE / UPDATE)": {"n": 1, "p50": len(body), "p99": len(update_body)},
        }
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=10)


# --- 3. through the API server ---------------------------------------------------------------------------------

def through_api_server(count: int, repeat: int, workdir: Path) -> dict | None:
    state = ClusterState.load(cluster.DEFAULT_ROOT)
    if state is None or not cluster.healthy(state):
        return None
    api = cluster.api_client(state)
    core_api, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    admission = client.AdmissionregistrationV1Api(api)
    run = uuid.uuid4().hex[:8]
    label = {"jobflow.dev/admission-bench": run}
    checked, unchecked = f"adm-bench-{run}", f"adm-bench-{run}-off"
    config_name = f"jobflow-admission-bench-{run}"
    tls = loopback_serving_cert(workdir, "admission-bench-api")
    port = free_port()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.cert, tls.key)
    server = make_server("127.0.0.1", port, create_app(), threaded=True, ssl_context=context)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    hooks = yaml.safe_load((REPO / "manifests/webhook/base/validating-webhook.yaml").read_text())
    hooks["metadata"] = {"name": config_name}
    for hook in hooks["webhooks"]:
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{hook['clientConfig']['service']['path']}",
                                "caBundle": base64.b64encode(tls.ca_bundle).decode()}
        hook["namespaceSelector"] = {"matchLabels": label}
    body = layered(count, name="layered")
    del body["metadata"]["namespace"], body["metadata"]["uid"]
    try:
        core_api.create_namespace({"metadata": {"name": checked, "labels": label}})
        core_api.create_namespace({"metadata": {"name": unchecked}})
        admission.create_validating_webhook_configuration(hooks)
        cycle = {**body, "spec": {"flows": [{"name": "a", "dependsOn": {"targets": ["b"]}},
                                            {"name": "b", "dependsOn": {"targets": ["a"]}}]}}
        deadline = time.monotonic() + 30
        while True:  # until the API server calls the new webhook
            try:
                custom.create_namespaced_custom_object(JOBFLOW_TYPE.group, JOBFLOW_TYPE.version, checked,
                                                       JOBFLOW_TYPE.plural, cycle, dry_run="All")
            except ApiException as error:
                if error.status == 422:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the API server never called the benchmark's webhook")
            time.sleep(0.2)

        def dry_run(namespace: str) -> Callable[[], object]:
            return lambda: custom.create_namespaced_custom_object(JOBFLOW_TYPE.group, JOBFLOW_TYPE.version, namespace,
                                                                  JOBFLOW_TYPE.plural, body, dry_run="All")

        return {"dry-run create, webhook on": timed(dry_run(checked), repeat),
                "dry-run create, webhook off": timed(dry_run(unchecked), repeat)}
    finally:
        try:
            admission.delete_validating_webhook_configuration(config_name)
        except ApiException:
            pass
        server.shutdown()
        for namespace in (checked, unchecked):
            try:
                core_api.delete_namespace(namespace)
            except ApiException:
                pass
        api.close()


# --- 4. growth: ours, and upstream's -----------------------------------------------------------------------------

def upstream_is_dag_calls(count: int) -> int:
    """Recursive calls of a model of upstream's IsDAG (validate_jobflow.go util.go): DFS from every vertex, marking
    vertices on the current path only (unmarked on backtrack), no memo of finished vertices."""
    graph = {flow["name"]: [t for t in (flow.get("dependsOn") or {}).get("targets", [])]
             for flow in layered(count)["spec"]["flows"]}
    calls = 0

    def has_cycle(vertex: str, visited: set[str]) -> bool:
        nonlocal calls
        calls += 1
        visited.add(vertex)
        for target in graph[vertex]:
            if target in visited or has_cycle(target, visited):
                return True
        visited.discard(vertex)
        return False

    for vertex in graph:
        if has_cycle(vertex, set()):
            break
    return calls


def growth(repeat: int) -> dict:
    ours = {}
    for count in (500, 1000, 2000, 4000, 10000):
        parsed = JobFlow.model_validate(layered(count))
        ours[str(count)] = timed(lambda parsed=parsed: validate(parsed), max(10, repeat // 10))
    upstream = {}
    for count in (16, 20, 24, 28, 32, 36):
        started = time.perf_counter()
        calls = upstream_is_dag_calls(count)
        upstream[str(count)] = {"calls": calls, "ms": round((time.perf_counter() - started) * 1000, 1)}
    return {"ours validate ms by flows": ours, "upstream IsDAG model by flows": upstream}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--no-cluster", action="store_true", help="skip the API server measurement")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)  # before create_app(), which would log every request at INFO
    gc.freeze()  # as the webhook server does once its app is built (handlers/webhooks.py)
    with tempfile.TemporaryDirectory(prefix="admission-bench-") as scratch:
        workdir = Path(scratch)
        results = {"machine": machine(), "flows": args.flows, "edges": 2 * (args.flows - 2),
                   "core": core(args.flows, args.repeat), "webhook": webhook(args.flows, args.repeat, workdir)}
        api = None if args.no_cluster else through_api_server(args.flows, max(20, args.repeat // 5), workdir)
        if api is not None:
            results["api_server"] = api
        results["growth"] = growth(args.repeat)
    rows = [[f"{part}: {what}", s["n"], s["p50"], s["p99"], s.get("max", "")]
            for part in ("core", "webhook", "api_server") for what, s in results.get(part, {}).items()]
    print(f"{args.flows} flows in layers of 2, {results['edges']} edges (milliseconds, bytes where said)")
    print(table(["measured", "n", "p50", "p99", "max"], rows))
    ours = results["growth"]["ours validate ms by flows"]
    print(table(["flows", "ours: validate p50 ms"], [[k, v["p50"]] for k, v in ours.items()]))
    print(table(["flows", "upstream IsDAG calls", "ms"],
                [[k, v["calls"], v["ms"]] for k, v in results["growth"]["upstream IsDAG model by flows"].items()]))
    print(f"written to {write_result('webhook', results)}")


if __name__ == "__main__":
    main()
