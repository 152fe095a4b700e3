"""The dashboard's in-memory tier: its views and layout (pure), its app's pages, live stream and guarded actions on a
store filled by hand. The browser tier (tests/cluster/test_dashboard_in_browser.py) runs the same app as users do,
on the real cluster, in Chromium."""

from __future__ import annotations

import json
import threading
import time
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard.app import TOKEN_HEADER, ActionError, Settings, create_app
from dashboard.pages import Pages
from dashboard.store import Store
from dashboard.views import STATES, items_view, jobflow_view
from display.facts import CACHED, CREATED, SKIPPED, WAITING
from display.layout import NODE_HEIGHT, NODE_WIDTH, columns, place
from display.svg import render
from jobflow_core.dag.graph import flow_graph
from jobflow_core.models import JobFlow, VcJobPhase
from jobflow_core.vocabulary.api import CREATED_BY_JOBTEMPLATE, JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, RUN_OF, VCJOB
from seeds import diamond_flows

NOW = datetime(2026, 11, 25, 9, 0, 0, tzinfo=UTC)


def jobflow(name: str = "test", flows: list | None = None, *, status: dict | None = None, rv: str = "1") -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": rv, "generation": 1,
                         "creationTimestamp": "2026-11-25T08:59:00Z"},
            "spec": {"flows": flows if flows is not None else diamond_flows()},
            **({"status": status} if status else {})}


def vcjob(flow: str, phase: str, *, owner: str = "test", created: str = "08:59:10", ended: str = "08:59:20") -> dict:
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": f"{owner}-{flow}", "namespace": "ns", "resourceVersion": "7",
                         "creationTimestamp": f"2026-11-25T{created}Z",
                         "labels": {"volcano.sh/createdByJobTemplate": f"ns.{flow}"},
                         "ownerReferences": [{"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                                              "name": owner, "uid": f"uid-{owner}", "controller": True}]},
            "spec": {"tasks": [{"name": "main", "replicas": 1}]},
            "status": {"state": {"phase": phase, "lastTransitionTime": f"2026-11-25T{ended}Z"}}}


def test_every_phase_a_flow_can_show_has_a_colour_a_glyph_and_its_word() -> None:
    shown = {phase.value for phase in VcJobPhase if phase.value} | {WAITING, SKIPPED, CREATED, CACHED}
    assert shown <= STATES.keys()
    tones = {tone for tone, _ in STATES.values()}
    assert tones == {"done", "running", "pending", "trouble", "failed", "waiting", "skipped"}


def test_the_diamond_before_anything_ran_shows_every_flow_waiting_and_what_it_waits_for() -> None:
    view = jobflow_view(jobflow(), [vcjob("a", "Running")], [], now=NOW)
    nodes = {node["name"]: node for node in view["nodes"]}
    assert list(nodes) == ["a", "b", "c", "d", "e"]
    assert nodes["a"]["state"] == "Running" and nodes["a"]["label"] == "▶ Running"
    assert nodes["e"]["state"] == "Waiting" and nodes["e"]["waitingFor"] == ["c", "d"]
    assert nodes["e"]["detail"] == "waits for c, d"
    assert {(e["from"], e["to"]) for e in view["edges"]} == {("a", "b"), ("b", "c"), ("b", "d"), ("c", "e"),
                                                             ("d", "e")}
    assert [bar["job"] for bar in view["timeline"]["bars"]] == ["test-a"]


GATED = [{"name": "a"}, {"name": "ok", "dependsOn": {"targets": ["a"]}, "approval": {"message": "is a good?"}},
         {"name": "b", "dependsOn": {"targets": ["ok"]}}]
"""a, then the approval gate ok, then b."""
GATE_WAITS = {"state": {"phase": "Running"}, "jobStatusList": [{"name": "test-a", "state": "Completed"}],
              "waitingFlows": [{"name": "ok", "jobName": "test-ok", "message": 'waiting for approval of "ok"'},
                               {"name": "b", "jobName": "test-b", "waitingFor": ["ok"]}]}


def test_a_gate_that_waits_is_open_for_an_answer_and_has_no_jobtemplate() -> None:
    view = jobflow_view(jobflow(flows=GATED, status=GATE_WAITS), [vcjob("a", "Completed")], [], now=NOW)
    nodes = {node["name"]: node for node in view["nodes"]}
    assert nodes["ok"]["gate"] == {"question": "is a good?", "open": True, "why": None, "answer": None}
    assert nodes["ok"]["template"] is None and nodes["b"]["template"] == "b"
    assert nodes["a"]["gate"] is None and nodes["b"]["gate"] is None


def test_a_gate_not_open_yet_says_why_and_an_answered_one_who_answered() -> None:
    before = {"state": {"phase": "Running"}, "waitingFlows": [
        {"name": "ok", "jobName": "test-ok", "waitingFor": ["a"]}, {"name": "b", "jobName": "test-b",
                                                                   "waitingFor": ["ok"]}]}
    gate = {n["name"]: n for n in jobflow_view(jobflow(flows=GATED, status=before), [], [], now=NOW)["nodes"]}["ok"]
    assert gate["gate"]["open"] is False and gate["gate"]["answer"] is None
    assert "is not open yet: its dependencies are not met, it waits for a" in gate["gate"]["why"]
    after = {"state": {"phase": "Running"}, "jobStatusList": [{"name": "test-ok", "state": "Completed"}],
             "approvals": [{"flow": "ok", "jobName": "test-ok", "decision": "Approved", "user": "ana",
                            "time": "2026-11-25T08:59:30Z", "message": "a is fine"}]}
    gate = {n["name"]: n for n in jobflow_view(jobflow(flows=GATED, status=after), [], [], now=NOW)["nodes"]}["ok"]
    assert gate["gate"]["open"] is False
    assert gate["gate"]["answer"] == "Approved by ana at 2026-11-25T08:59:30Z: a is fine"


@pytest.mark.parametrize(("spec", "status", "stoppable"), [
    ({}, {"state": {"phase": "Running"}}, True),
    ({"shutdown": "Stop"}, {"state": {"phase": "Running"}}, True),
    ({}, {"state": {"phase": "Succeed"}}, False),
    ({}, {"state": {"phase": "Failed"}, "jobStatusList": [{"name": "test-a", "state": "Failed"}]}, False),
    ({}, {"state": {"phase": "Failed"}, "jobStatusList": [{"name": "test-a", "state": "Failed"},
                                                          {"name": "test-b", "state": "Running"}]}, True),
])
def test_the_header_says_the_shutdown_asked_and_whether_a_stop_would_find_anything(spec, status, stoppable) -> None:
    obj = jobflow(status=status)
    obj["spec"].update(spec)
    header = jobflow_view(obj, [], [], now=NOW)["header"]
    assert header["shutdown"] == spec.get("shutdown") and header["stoppable"] is stoppable


FIRST_RUN = [vcjob("a", "Completed", created="08:59:00", ended="08:59:10"),
             vcjob("b", "Completed", created="08:59:10", ended="08:59:20"),
             vcjob("c", "Running", created="08:59:20"), vcjob("d", "Completed", created="08:59:20", ended="08:59:30")]
"""The diamond's first run: no statistics yet, so no forecast (``status.criticalPath``); c runs longest."""


def test_a_first_run_stars_the_path_its_vcjobs_took_in_the_dag_the_header_and_the_timeline() -> None:
    view = jobflow_view(jobflow(status={"state": {"phase": "Running"}}), FIRST_RUN, [], now=NOW)
    assert [node["name"] for node in view["nodes"] if node["critical"]] == ["a", "b", "c"]
    assert view["header"]["criticalPath"] == view["timeline"]["critical"] == ["a", "b", "c"]
    assert {bar["flow"] for bar in view["timeline"]["bars"] if bar["critical"]} == {"a", "b", "c"}


def test_a_forecast_critical_path_is_the_one_the_dag_stars() -> None:
    status = {"state": {"phase": "Running"}, "criticalPath": ["a", "b", "d", "e"]}
    view = jobflow_view(jobflow(status=status), FIRST_RUN, [], now=NOW)
    assert [node["name"] for node in view["nodes"] if node["critical"]] == ["a", "b", "d", "e"]
    assert view["header"]["criticalPath"] == ["a", "b", "d", "e"]


def test_a_cycle_and_an_undefined_target_are_drawn_and_named_not_dropped() -> None:
    flows = [{"name": "a", "dependsOn": {"targets": ["ghost"]}}, {"name": "x", "dependsOn": {"targets": ["y"]}},
             {"name": "y", "dependsOn": {"targets": ["x"]}}]
    view = jobflow_view(jobflow(flows=flows), [], [], now=NOW)
    states = {node["name"]: node["state"] for node in view["nodes"]}
    assert states == {"a": "Waiting", "ghost": "undefined", "x": "not a DAG", "y": "not a DAG"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=3), min_size=1, max_size=40))
def test_the_layout_places_every_flow_once_edges_point_right_and_nodes_never_overlap(targets) -> None:
    flows = [{"name": f"f{i}", **({"dependsOn": {"targets": sorted({f"f{t}" for t in ts if t < i})}}
                                  if any(t < i for t in ts) else {})} for i, ts in enumerate(targets)]
    graph = flow_graph(JobFlow.model_validate(jobflow(flows=flows)))
    positions, (width, height) = place(graph)
    assert set(positions) == {flow["name"] for flow in flows}
    for source, dependent in graph.edges:
        assert positions[source][0] + NODE_WIDTH < positions[dependent][0]
    corners = list(positions.values())
    assert len(set(corners)) == len(corners)
    assert all(x + NODE_WIDTH <= width and y + NODE_HEIGHT <= height for x, y in corners)


SVG = "{http://www.w3.org/2000/svg}"


def _drawn_columns(boxes: dict[str, tuple[float, float]]) -> list[list[str]]:
    """Columns left to right, each top to bottom, as they appear in a picture (node -> its x and y)."""
    by_x: dict[float, list[str]] = {}
    for name, (x, _) in sorted(boxes.items(), key=lambda item: item[1][0]):
        by_x.setdefault(x, []).append(name)
    return [sorted(names, key=lambda name: boxes[name][1]) for _, names in sorted(by_x.items())]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=3), min_size=1, max_size=30))
def test_the_dashboard_and_graph_svg_draw_the_same_columns_in_the_same_order(targets) -> None:
    # Targets may point forward (a cycle) or at no flow (undefined): broken specs are drawn too.
    flows = [{"name": f"f{i}", **({"dependsOn": {"targets": sorted({f"f{t}" for t in ts})}} if ts else {})}
             for i, ts in enumerate(targets)]
    graph = flow_graph(JobFlow.model_validate(jobflow(flows=flows)))
    dashboard = _drawn_columns(place(graph)[0])
    svg = ET.fromstring(render(graph, {}, {}, title="t"))
    rects = {g.get("data-flow"): g.find(f"{SVG}rect") for g in svg.iter(f"{SVG}g") if g.get("data-flow")}
    # The SVG centres each box in its column: a column is where the boxes' centres are, not their left edges.
    centres = {name: (round(float(r.get("x")) + float(r.get("width")) / 2, 1), float(r.get("y")))
               for name, r in rects.items()}
    assert _drawn_columns(centres) == dashboard == columns(graph)


def test_two_thousand_flows_are_each_a_node() -> None:
    flows = [{"name": "start"}] + [{"name": f"s{i}", "dependsOn": {"targets": ["start"]}} for i in range(1998)] + \
        [{"name": "end", "dependsOn": {"targets": [f"s{i}" for i in range(1998)]}}]
    view = jobflow_view(jobflow(flows=flows), [], [], now=NOW)
    assert len(view["nodes"]) == 2000 and len(view["edges"]) == 2 * 1998


FAN_OUT = [{"name": "shard", "forEach": {"items": ["x", "y", "z"]}}]
"""A forEach flow: its vcjobs are test-shard-0, -1, -2, each made from the flow's JobTemplate, shard."""


def item(index: int, phase: str) -> dict:
    job = vcjob(f"shard-{index}", phase)
    job["metadata"]["labels"][CREATED_BY_JOBTEMPLATE] = "ns.shard"
    return job


def test_a_fan_out_is_one_node_counting_its_items_which_are_listed_one_by_one_on_demand() -> None:
    jobs = [item(0, "Completed"), item(1, "Running")]
    [node] = jobflow_view(jobflow(flows=FAN_OUT), jobs, [], now=NOW)["nodes"]
    assert node["items"] == {"total": 3, "counts": {"Completed": 1, "Running": 1, "Waiting": 1}, "iterations": False}
    view = items_view(jobflow(flows=FAN_OUT), jobs, "shard", now=NOW)
    assert view["flow"] == "shard" and view["iterations"] is False
    assert [(i["index"], i["job"], i["state"], i["tone"], i["label"]) for i in view["items"]] == [
        (0, "test-shard-0", "Completed", "done", "✓ Completed"),
        (1, "test-shard-1", "Running", "running", "▶ Running"), (2, "test-shard-2", "Waiting", "waiting", "○ Waiting")]
    with pytest.raises(KeyError):
        items_view(jobflow(flows=FAN_OUT), jobs, "nope", now=NOW)


def test_the_items_endpoint_answers_a_fan_outs_items_and_says_which_flow_or_jobflow_is_missing() -> None:
    store = Store()
    store.fill(JOBFLOW, [jobflow(flows=FAN_OUT)])
    store.fill(VCJOB, [item(0, "Completed"), item(1, "Failed"), item(2, "Pending")])
    web = create_app(store, Pages(store, None, clock=lambda: NOW), Settings()).test_client()
    answer = web.get("/api/jobflows/ns/test/items/shard")
    assert answer.status_code == 200
    assert [(i["job"], i["state"]) for i in answer.get_json()["items"]] == [
        ("test-shard-0", "Completed"), ("test-shard-1", "Failed"), ("test-shard-2", "Pending")]
    unknown = web.get("/api/jobflows/ns/test/items/nope")
    assert unknown.status_code == 404 and unknown.get_json()["error"] == "JobFlow ns/test has no flow nope"
    missing = web.get("/api/jobflows/ns/other/items/shard")
    assert missing.status_code == 404 and "no JobFlow ns/other" in missing.get_json()["error"]


def served(act=None, **kwargs):
    store = Store()
    store.fill(JOBFLOW, [jobflow()])
    store.fill(JOBTEMPLATE, [])
    app = create_app(store, Pages(store, None, clock=lambda: NOW), Settings(act=act, token="t0k", **kwargs))
    return store, app.test_client()


def streamed(web, url: str):
    """The open stream, and a function answering its next message: a view (decoded) or ": keep-alive"."""
    response = web.get(url, buffered=False)
    chunks = iter(response.response)
    assert next(chunks).startswith(b"retry:")

    def message():
        chunk = next(chunks).decode()
        return json.loads(chunk.split("data: ", 1)[1]) if chunk.startswith("event: view") else chunk.strip()
    return response, message


def job_template(name: str, *, runs: int | None = None, rv: str = "1") -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
            **({"status": {"runs": runs, "succeeded": runs, "failed": 0}} if runs is not None else {})}


def test_the_list_and_the_jobflow_pages_serve_their_views() -> None:
    _, web = served()
    listed = web.get("/api/jobflows").get_json()
    assert [(row["namespace"], row["name"], row["progress"]) for row in listed["jobflows"]] == [("ns", "test", "0/5")]
    page = web.get("/jobflows/ns/test")
    assert page.status_code == 200 and b'"page": "jobflow"' in page.data
    assert "Content-Security-Policy" in page.headers
    assert web.get("/api/jobflows/ns/nope").status_code == 404
    assert web.get("/jobtemplates/ns/nope").status_code == 404


def test_a_read_only_dashboard_has_no_buttons_and_refuses_every_post() -> None:
    _, web = served()
    assert b'id="actions"' not in web.get("/jobflows/ns/test").data
    answer = web.post("/api/jobflows/ns/test/suspend", json={}, headers={TOKEN_HEADER: "t0k"})
    assert answer.status_code == 403 and "read-only" in answer.get_json()["error"]


class Recorder:
    def __init__(self) -> None:
        self.calls = []

    def __call__(self, action, namespace, name, flows, user, message):
        self.calls.append((action, namespace, name, flows, user, message))
        if name == "busy":
            raise ActionError("JobFlow ns/busy is Running: only a Failed JobFlow can be retried", status=409)
        return f"did {action}"


@pytest.mark.parametrize("headers, why", [
    ({}, "header is missing or wrong"),
    ({TOKEN_HEADER: "wrong"}, "header is missing or wrong"),
    ({TOKEN_HEADER: "t0k", "Origin": "http://evil.example"}, "another site"),
    ({TOKEN_HEADER: "t0k", "Sec-Fetch-Site": "cross-site"}, "cross-site"),
])
def test_a_post_from_anywhere_but_its_own_pages_is_refused(headers, why) -> None:
    act = Recorder()
    _, web = served(act)
    answer = web.post("/api/jobflows/ns/test/suspend", json={}, headers=headers)
    assert answer.status_code == 403 and why in answer.get_json()["error"]
    assert act.calls == []


def test_a_post_from_its_own_page_acts_and_says_what_it_did_or_why_not() -> None:
    act = Recorder()
    _, web = served(act)
    page = web.get("/jobflows/ns/test").data
    assert b'id="actions"' in page and b'"token": "t0k"' in page
    own = {TOKEN_HEADER: "t0k", "Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
    answer = web.post("/api/jobflows/ns/test/retry", json={"flows": ["c"]}, headers=own)
    assert answer.status_code == 200 and answer.get_json() == {"message": "did retry"}
    assert act.calls == [("retry", "ns", "test", ["c"], None, None)]
    refused = web.post("/api/jobflows/ns/busy/retry", json={}, headers=own)
    assert refused.status_code == 409 and "only a Failed JobFlow" in refused.get_json()["error"]
    assert web.post("/api/jobflows/ns/test/delete", json={}, headers=own).status_code == 404


def test_its_page_has_stop_and_terminate_buttons_that_ask_before_they_act() -> None:
    _, web = served(Recorder())
    page = web.get("/jobflows/ns/test").data.decode()
    for action, asked in (("stop", "Stop ns/test? What runs is aborted and nothing new starts but its finally flows"),
                          ("terminate", "Terminate ns/test? What runs is aborted, its finally flows too")):
        assert f'id="action-{action}" data-action="{action}" disabled' in page
        assert f'data-confirm="{asked}' in page


def test_stop_terminate_approve_and_reject_are_actions_and_an_answer_names_its_one_gate() -> None:
    act = Recorder()
    _, web = served(act)
    own = {TOKEN_HEADER: "t0k"}
    for action in ("stop", "terminate"):
        assert web.post(f"/api/jobflows/ns/test/{action}", json={}, headers=own).get_json() == {
            "message": f"did {action}"}
    answer = web.post("/api/jobflows/ns/test/approve", json={"flows": ["gate"], "message": "fine"}, headers=own)
    assert answer.status_code == 200
    assert web.post("/api/jobflows/ns/test/reject", json={"flows": ["gate"]}, headers=own).status_code == 200
    assert act.calls == [("stop", "ns", "test", [], None, None), ("terminate", "ns", "test", [], None, None),
                         ("approve", "ns", "test", ["gate"], None, "fine"),
                         ("reject", "ns", "test", ["gate"], None, None)]
    for body, said in (({}, '"flows" must name the one approval gate to approve'),
                       ({"flows": ["a", "b"]}, '"flows" must name the one approval gate to approve'),
                       ({"flows": ["gate"], "message": 3}, '"message" must be a text')):
        refused = web.post("/api/jobflows/ns/test/approve", json=body, headers=own)
        assert refused.status_code == 400 and refused.get_json() == {"error": said}
    assert len(act.calls) == 4


@pytest.mark.parametrize("body", [["gate"], "retry", 3, True])
def test_a_body_that_is_not_a_json_object_is_refused_with_400_saying_what_it_must_be(body) -> None:
    act = Recorder()
    _, web = served(act)
    refused = web.post("/api/jobflows/ns/test/approve", json=body, headers={TOKEN_HEADER: "t0k"})
    assert refused.status_code == 400
    assert refused.get_json()["error"].startswith("the body must be a JSON object")
    assert act.calls == []


def test_a_read_only_dashboard_refuses_an_answer_too_and_says_which_command_gives_it() -> None:
    _, web = served()
    answer = web.post("/api/jobflows/ns/test/approve", json={"flows": ["gate"]}, headers={TOKEN_HEADER: "t0k"})
    assert answer.status_code == 403
    assert "kubectl jobflow approve test FLOW -n ns" in answer.get_json()["error"]


def test_behind_a_proxy_actions_need_the_user_and_impersonate_them() -> None:
    act = Recorder()
    _, web = served(act, user_header="X-Forwarded-User")
    assert b'id="actions"' not in web.get("/jobflows/ns/test").data
    page = web.get("/jobflows/ns/test", headers={"X-Forwarded-User": "ana"}).data
    assert b'id="actions"' in page
    headers = {TOKEN_HEADER: "t0k", "X-Forwarded-User": "ana"}
    assert web.post("/api/jobflows/ns/test/resume", json={}, headers=headers).status_code == 200
    assert act.calls == [("resume", "ns", "test", [], "ana", None)]
    assert web.post("/api/jobflows/ns/test/resume", json={}, headers={TOKEN_HEADER: "t0k"}).status_code == 403


def test_an_action_for_a_user_named_by_the_proxy_reaches_the_api_server_as_that_user(tmp_path) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from apiclient.cluster import Cluster, Target
    from dashboard.actions import actor

    seen = []

    class ApiServer(BaseHTTPRequestHandler):
        def answer(self) -> None:
            seen.append((self.command, self.headers.get("Impersonate-User")))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps(jobflow()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PATCH = answer

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), ApiServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "dev", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
        "users": [{"name": "dashboard", "user": {"token": "sa"}}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "dashboard"}}]}))
    try:
        cluster = Cluster(Target(kubeconfig=str(kubeconfig)))
        act = actor(cluster)
        assert act("suspend", "ns", "test", [], "ana", None) == "Suspended JobFlow: ns/test"
        assert seen == [("GET", "ana"), ("PATCH", "ana")]
        seen.clear()
        act("suspend", "ns", "test", [], None, None)  # local mode: the dashboard's own identity, the same client
        assert seen == [("GET", None), ("PATCH", None)]
    finally:
        server.shutdown()


def test_an_answer_from_the_dashboard_behind_a_proxy_is_the_proxys_users_as_the_api_server_names_them(
        tmp_path) -> None:
    from api_standin import send_json, serving
    from apiclient.cluster import Cluster, Target
    from dashboard.actions import actor

    seen = []

    class ApiServer(BaseHTTPRequestHandler):
        def _seen(self) -> dict | None:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append((self.command, self.path.split("?")[0], self.headers.get("Impersonate-User")))
            return json.loads(data) if data else None

        def do_GET(self) -> None:
            self._seen()
            send_json(self, jobflow(flows=GATED, status=GATE_WAITS))

        def do_POST(self) -> None:  # a SelfSubjectReview: the user the request is made as, the impersonated one
            self._seen()
            send_json(self, {"status": {"userInfo": {"username": self.headers.get("Impersonate-User")}}})

        def do_PATCH(self) -> None:
            patches.append(self._seen())
            send_json(self, jobflow(flows=GATED, status=GATE_WAITS))

        def log_message(self, *args) -> None:
            pass

    patches: list = []
    with serving(ApiServer, tmp_path / "config"):
        cluster = Cluster(Target(kubeconfig=str(tmp_path / "config")))
        try:
            said = actor(cluster)("reject", "ns", "test", ["ok"], "ana", "not today")
        finally:
            cluster.close()
    assert said.startswith('Rejected gate "ok" of JobFlow ns/test as ana (record test-ok)')
    jobflows = "/apis/flow.volcano.sh/v1alpha1/namespaces/ns/jobflows/test"
    assert seen == [("GET", jobflows, "ana"), ("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "ana"),
                    ("PATCH", jobflows, "ana")]
    assert json.loads(patches[0]["metadata"]["annotations"]["approval.flow.volcano.sh/ok"]) == {
        "jobName": "test-ok", "decision": "Rejected", "user": "ana", "message": "not today"}


def test_in_local_mode_only_the_loopback_host_is_answered() -> None:
    _, web = served(Recorder(), hosts=("127.0.0.1:8765",))
    assert web.get("/", headers={"Host": "127.0.0.1:8765"}).status_code == 200
    assert web.get("/", headers={"Host": "rebound.example:8765"}).status_code == 421


def test_the_stream_sends_the_view_then_each_change_of_it() -> None:
    store, web = served()
    response, message = streamed(web, "/stream?namespace=ns&name=test")
    assert message()["header"]["phase"] == ""
    threading.Timer(0.2, lambda: store.note(JOBFLOW, jobflow(status={"state": {"phase": "Running"}}, rv="2"),
                                            deleted=False)).start()
    assert message()["header"]["phase"] == "Running"
    response.close()


def test_pages_compute_a_view_once_per_change_whoever_asks() -> None:
    store = Store()
    store.fill(JOBFLOW, [jobflow()])
    pages = Pages(store, None, clock=lambda: NOW)
    first, again = pages.jobflow("ns", "test"), pages.jobflow("ns", "test")
    assert first[1] is again[1]
    store.note(JOBFLOW, jobflow(rv="2"), deleted=False)
    assert pages.jobflow("ns", "test")[1] is not first[1]


def test_kubectl_jobflow_dashboard_runs_the_dashboard_with_the_users_connection(monkeypatch) -> None:
    import subprocess
    import sys

    from kubectl_jobflow.cli import run
    from kubectl_jobflow.context import Context

    ran, asked = [], []

    class Reachable:
        def list(self, api_type, namespace, **query):
            asked.append((api_type.kind, namespace, query))
            return {"items": []}

        def close(self) -> None:
            pass

    monkeypatch.setattr(Context, "cluster", property(lambda ctx: Reachable()))
    monkeypatch.setattr(subprocess, "call", lambda command, **kwargs: ran.append(command) or 0)
    assert run(["dashboard", "--kubeconfig", "/k", "--context", "dev", "-n", "team", "--port", "0"]) == 0
    # One request first, so that an unreachable cluster is one line and exit 3 here, not the server's traceback.
    assert asked == [("JobFlow", "team", {"limit": 1})]
    assert ran == [[sys.executable, "-m", "dashboard", "--port", "0", "--kubeconfig", "/k", "--context", "dev",
                    "--namespace", "team"]]


def test_a_jobflowtemplate_page_lists_its_runs_newest_first_and_shows_a_new_run_and_nothing_else(monkeypatch) -> None:
    monkeypatch.setattr("dashboard.app.KEEPALIVE", 0.2)
    store = Store()
    store.fill(JOBFLOWTEMPLATE, [{"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
                                  "metadata": {"name": "nightly", "namespace": "ns", "resourceVersion": "1"},
                                  "spec": {"schedule": "0 2 * * *", "timeZone": "Europe/Paris"}}])

    def run(day: int) -> dict:
        started = jobflow(f"nightly-s{day}", rv=str(day))
        started["metadata"].update(creationTimestamp=f"2026-11-{day}T02:00:00Z", labels={RUN_OF: "nightly"})
        return started

    store.fill(JOBFLOW, [run(23), run(24), jobflow("other")])
    web = create_app(store, Pages(store, None, clock=lambda: NOW), Settings()).test_client()
    assert b'"page": "jobflowtemplate"' in web.get("/jobflowtemplates/ns/nightly").data
    assert web.get("/jobflowtemplates/ns/none").status_code == 404
    stream, message = streamed(web, "/stream?kind=jobflowtemplate&namespace=ns&name=nightly")
    first = message()
    assert (first["schedule"], first["timeZone"]) == ("0 2 * * *", "Europe/Paris")
    assert [(r["namespace"], r["name"]) for r in first["runs"]] == [("ns", "nightly-s24"), ("ns", "nightly-s23")]
    store.note(JOBFLOW, run(25), deleted=False)  # the schedule started tonight's run
    assert [r["name"] for r in message()["runs"]] == ["nightly-s25", "nightly-s24", "nightly-s23"]
    store.note(JOBFLOW, jobflow("other", rv="9"), deleted=False)  # not a run of it
    assert message() == ": keep-alive"
    stream.close()


def test_before_the_first_list_a_page_waits_instead_of_saying_the_jobflow_does_not_exist() -> None:
    store = Store()
    web = create_app(store, Pages(store, None, clock=lambda: NOW), Settings()).test_client()
    assert web.get("/api/jobflows/ns/test").status_code == 503
    assert web.get("/jobtemplates/ns/c").status_code == 200  # its page, whose stream waits for the list too
    response, message = streamed(web, "/stream?namespace=ns&name=test")
    threading.Timer(0.2, lambda: store.fill(JOBFLOW, [jobflow()])).start()
    assert message()["name"] == "test"  # the view, not a "missing" one sent before the list arrived
    response.close()


def test_an_ended_node_shows_its_result_and_a_running_one_its_forecast() -> None:
    status = {"jobStatusList": [{"name": "test-a", "state": "Completed", "result": "accuracy=0.93",
                                 "startTimestamp": "2026-11-25T08:59:10Z", "endTimestamp": "2026-11-25T08:59:20Z"}],
              "estimates": [{"flow": "b", "seconds": 40}]}
    done = vcjob("a", "Completed")
    done["status"]["runningDuration"] = "10s"
    view = jobflow_view(jobflow(status=status), [done, vcjob("b", "Running")], [], now=NOW)
    nodes = {node["name"]: node for node in view["nodes"]}
    assert nodes["a"]["result"] == "accuracy=0.93" and nodes["a"]["detail"].endswith("· accuracy=0.93")
    assert nodes["b"]["since"] == "2026-11-25T08:59:10Z" and nodes["b"]["estimateSeconds"] == 40


def test_a_jobtemplate_page_names_the_jobflows_whose_flows_run_it_and_shows_each_new_run(monkeypatch) -> None:
    monkeypatch.setattr("dashboard.app.KEEPALIVE", 0.2)
    store = Store()
    store.fill(JOBTEMPLATE, [job_template("c"), job_template("shared")])
    store.fill(JOBFLOW, [jobflow(), jobflow("other", [{"name": "x", "jobTemplate": "shared"}])])
    pages = Pages(store, None, clock=lambda: NOW)
    web = create_app(store, pages, Settings()).test_client()
    assert b'"page": "jobtemplate"' in web.get("/jobtemplates/ns/c").data
    stream, message = streamed(web, "/stream?kind=jobtemplate&namespace=ns&name=shared")
    first = message()
    assert first["usedBy"] == [["ns", "other"]] and first["runs"] is None
    store.note(JOBTEMPLATE, job_template("shared", runs=1, rv="2"), deleted=False)  # the engine counted a run
    assert message()["runs"] == 1
    computed = pages.template("ns", "shared")[1]
    store.note(JOBFLOW, jobflow("other", [{"name": "x", "jobTemplate": "shared"}],
                                status={"state": {"phase": "Running"}}, rv="3"), deleted=False)
    store.note(JOBTEMPLATE, job_template("c", runs=4, rv="4"), deleted=False)
    assert message() == ": keep-alive"  # neither its JobFlow's status nor another JobTemplate is on its page
    assert pages.template("ns", "shared")[1] is computed  # nor were they a reason to compute it again
    store.note(JOBFLOW, jobflow("third", [{"name": "y", "jobTemplate": "shared"}]), deleted=False)
    assert message()["usedBy"] == [["ns", "other"], ["ns", "third"]]
    store.note(JOBTEMPLATE, job_template("shared"), deleted=True)
    assert message() == {"missing": True, "namespace": "ns", "name": "shared"}
    store.note(JOBTEMPLATE, job_template("shared", rv="5"), deleted=False)  # created again: drawn again
    assert message()["usedBy"] == [["ns", "other"], ["ns", "third"]]
    stream.close()
    # One created a moment ago may not have reached the server's watch: 404, but the live page, not a dead end.
    late = web.get("/jobtemplates/ns/later")
    assert late.status_code == 404 and b'"page": "jobtemplate"' in late.data
    assert Pages(store, None).template("ns", "c")[0]["usedBy"] == [("ns", "test")]


def test_pages_of_one_jobflow_waking_together_read_its_events_once() -> None:
    store = Store()
    store.fill(JOBFLOW, [jobflow()])
    reads = []

    def slow_events(namespace: str, name: str, uid: str) -> list:
        reads.append((namespace, name, uid))
        time.sleep(0.2)  # the API server's answer takes a while: every other stream wakes meanwhile
        return [{"type": "Normal", "reason": "Created", "message": "create a job named test-a!"}]

    pages = Pages(store, slow_events, clock=lambda: NOW)
    streams = [threading.Thread(target=pages.jobflow, args=("ns", "test")) for _ in range(50)]
    for stream in streams:
        stream.start()
    for stream in streams:
        stream.join()
    assert reads == [("ns", "test", "uid-test")]
    assert pages.jobflow("ns", "test")[0]["events"][0]["reason"] == "Created"
