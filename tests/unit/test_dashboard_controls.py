"""A dashboard people leave open (issue 44): every page names its cluster, the list narrows to a namespace and a
label selector kept in its URL, and a JobFlowTemplate's page runs it now, suspends and resumes it, guarded as every
other action. In memory, on a store filled by hand; the browser tier is
tests/cluster/test_dashboard_controls_in_browser.py."""

from __future__ import annotations

from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler

import pytest

from api_standin import send_json, serving
from dashboard.app import TOKEN_HEADER, ActionError, Settings, create_app
from dashboard.header import Header, describe, header
from dashboard.pages import Pages
from dashboard.store import Store
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE

NOW = datetime(2026, 11, 25, 9, 0, 0, tzinfo=UTC)
OWN = {TOKEN_HEADER: "t0k", "Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
PROD = Header(context="prod-eu", server="10.0.0.1:6443", user="ana", namespaces="all namespaces")


def jobflow(namespace: str, name: str, labels: dict | None = None, *, created: str = "08:59:00") -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1", "labels": labels or {},
                         "creationTimestamp": f"2026-11-25T{created}Z"},
            "spec": {"flows": [{"name": "a"}]}}


def nightly(*, suspended: bool = False) -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
            "metadata": {"name": "nightly", "namespace": "ml", "resourceVersion": "1", "uid": "uid-nightly"},
            "spec": {"schedule": "0 2 * * *", "suspend": suspended, "jobFlow": {"spec": {
                "flows": [{"name": "a"}],
                "parameters": [{"name": "lr", "value": "0.01", "description": "learning rate"},
                               {"name": "epochs", "value": "10"}]}}}}


def served(act=None, act_template=None, header: Header = PROD, **kwargs):
    store = Store()
    store.fill(JOBFLOW, [jobflow("ml", "train-1", {"app": "train", "tier": "prod"}, created="08:58:00"),
                         jobflow("ml", "train-2", {"app": "train", "tier": "dev"}),
                         jobflow("web", "build", {"app": "build"})])
    store.fill(JOBTEMPLATE, [])
    store.fill(JOBFLOWTEMPLATE, [nightly()])
    app = create_app(store, Pages(store, None, clock=lambda: NOW),
                     Settings(act=act, act_template=act_template, token="t0k", header=header, **kwargs))
    return store, app.test_client()


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __call__(self, *call):
        self.calls.append(call)
        if call[2] == "gone":
            raise ActionError('JobFlowTemplate "ml/gone" not found: check the name and the namespace', status=409)
        return f"did {call[0]}"


# ---- the header ----

@pytest.mark.parametrize("path", ["/", "/jobflows/ml/train-1", "/jobtemplates/ml/a", "/jobflowtemplates/ml/nightly"])
def test_every_page_names_the_context_the_server_and_the_namespaces_it_serves(path: str) -> None:
    _, web = served()
    page = web.get(path).data.decode()
    assert '<strong id="cluster-context">prod-eu</strong>' in page
    assert '<span id="cluster-server">10.0.0.1:6443</span>' in page
    assert '<span id="cluster-namespaces">all namespaces</span>' in page
    assert 'aria-label="cluster: prod-eu; server 10.0.0.1:6443; all namespaces"' in page


def test_locally_the_header_is_the_context_and_the_servers_host_in_cluster_its_service_account() -> None:
    local = header(context="dev", server="https://127.0.0.1:6443", user="ana", namespace="team", in_cluster=False)
    assert (local.context, local.server, local.namespaces) == ("dev", "127.0.0.1:6443", "namespace team")
    assert local.line == "dev; server 127.0.0.1:6443; namespace team"
    pod = header(context=None, server="https://10.96.0.1:443", namespace=None, in_cluster=True,
                 user="system:serviceaccount:volcano-jobflow:jobflow-dashboard")
    assert pod.context == "in-cluster (ServiceAccount volcano-jobflow/jobflow-dashboard)"
    assert pod.namespaces == "all namespaces"
    unknown = header(context=None, server="https://10.96.0.1:443", user=None, namespace=None, in_cluster=True)
    assert unknown.context == "in-cluster"


def test_the_header_asks_the_api_server_who_the_dashboard_is_and_reads_the_context_from_the_kubeconfig(
        tmp_path) -> None:
    from apiclient.cluster import Cluster, Target

    class ApiServer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # a SelfSubjectReview
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            send_json(self, {"status": {"userInfo": {"username": "ana"}}})

        def log_message(self, *args) -> None:
            pass

    with serving(ApiServer, tmp_path / "config") as server:
        cluster = Cluster(Target(kubeconfig=str(tmp_path / "config")))
        try:
            said = describe(cluster, "team")
        finally:
            cluster.close()
    assert said.server == f"127.0.0.1:{server.server_port}" and said.user == "ana"
    assert said.namespaces == "namespace team" and said.context and not said.context.startswith("in-cluster")


def test_a_dashboard_that_knows_no_cluster_draws_no_cluster_band() -> None:
    _, web = served(header=Header())
    assert b'id="cluster"' not in web.get("/").data


# ---- the list's namespace and label filters ----

def names(answer) -> list[str]:
    return [f"{row['namespace']}/{row['name']}" for row in answer.get_json()["jobflows"]]


def test_the_list_narrows_to_a_namespace_and_a_label_selector_and_offers_every_namespace() -> None:
    _, web = served()
    everything = web.get("/api/jobflows").get_json()
    assert everything["namespaces"] == ["ml", "web"] and everything["total"] == 3
    assert names(web.get("/api/jobflows?ns=ml")) == ["ml/train-2", "ml/train-1"]
    assert names(web.get("/api/jobflows?l=app=train,tier!=dev")) == ["ml/train-1"]
    assert names(web.get("/api/jobflows?l=app in (build, serve)")) == ["web/build"]
    assert names(web.get("/api/jobflows?ns=web&l=app=train")) == []
    narrowed = web.get("/api/jobflows?ns=web").get_json()
    assert narrowed["namespaces"] == ["ml", "web"] and narrowed["total"] == 3  # still every namespace to choose
    assert narrowed["schedules"] == []  # the JobFlowTemplates of the chosen namespace only


def test_a_bad_label_selector_says_what_is_wrong_instead_of_listing_nothing() -> None:
    _, web = served()
    answer = web.get("/api/jobflows?l=app=train,")
    assert answer.status_code == 400 and "ends with ','" in answer.get_json()["error"]


def test_the_lists_stream_sends_the_narrowed_list_and_a_bad_selectors_reason() -> None:
    from test_dashboard import streamed

    _, web = served()
    stream, message = streamed(web, "/stream?ns=ml&l=tier%3Dprod")
    view = message()
    assert [row["name"] for row in view["jobflows"]] == ["train-1"] and view["selectorError"] is None
    stream.close()
    stream, message = streamed(web, "/stream?l=tier%20in%20(prod")
    view = message()
    assert view["jobflows"] == [] and "is never closed: add ')'" in view["selectorError"]
    stream.close()


def test_the_list_page_has_the_namespace_and_label_filters_and_says_where_a_bad_selector_shows() -> None:
    _, web = served()
    page = web.get("/?ns=ml&l=app%3Dtrain").data.decode()
    assert '<select id="namespace">' in page and '<input id="labels"' in page
    assert 'id="selector-error" class="error" role="alert"' in page and "list.js" in page


# ---- the JobFlowTemplate page's Run now, Suspend and Resume ----

def test_a_jobflowtemplate_page_acting_as_the_user_has_run_now_suspend_and_resume_and_its_parameters() -> None:
    _, web = served(Recorder(), Recorder())
    page = web.get("/jobflowtemplates/ml/nightly").data.decode()
    for action, word in (("run", "Run now"), ("suspend", "Suspend"), ("resume", "Resume")):
        assert f'id="action-{action}" data-action="{action}" disabled>{word}</button>' in page
    assert '"token": "t0k"' in page and '"actions": true' in page
    from test_dashboard import streamed
    stream, message = streamed(web, "/stream?kind=jobflowtemplate&namespace=ml&name=nightly")
    assert message()["parameters"] == [{"name": "lr", "value": "0.01", "description": "learning rate"},
                                       {"name": "epochs", "value": "10", "description": None}]
    stream.close()


def test_a_read_only_jobflowtemplate_page_has_no_buttons_and_refuses_every_post_saying_which_command_acts() -> None:
    _, web = served()
    page = web.get("/jobflowtemplates/ml/nightly").data.decode()
    assert 'id="run-form"' not in page and '"actions": false' in page
    answer = web.post("/api/jobflowtemplates/ml/nightly/run", json={}, headers=OWN)
    assert answer.status_code == 403 and "kubectl jobflow run nightly -n ml" in answer.get_json()["error"]
    answer = web.post("/api/jobflowtemplates/ml/nightly/suspend", json={}, headers=OWN)
    assert "kubectl jobflow suspend jft/nightly -n ml" in answer.get_json()["error"]


@pytest.mark.parametrize("headers, why", [
    ({}, "header is missing or wrong"),
    ({TOKEN_HEADER: "wrong"}, "header is missing or wrong"),
    ({TOKEN_HEADER: "t0k", "Origin": "http://evil.example"}, "another site"),
    ({TOKEN_HEADER: "t0k", "Sec-Fetch-Site": "cross-site"}, "cross-site"),
])
def test_a_jobflowtemplate_action_from_anywhere_but_its_own_pages_is_refused(headers, why) -> None:
    act = Recorder()
    _, web = served(Recorder(), act)
    answer = web.post("/api/jobflowtemplates/ml/nightly/run", json={}, headers=headers)
    assert answer.status_code == 403 and why in answer.get_json()["error"]
    assert act.calls == []


def test_run_now_suspend_and_resume_act_with_the_parameters_given_and_say_what_they_did_or_why_not() -> None:
    act = Recorder()
    _, web = served(Recorder(), act)
    answer = web.post("/api/jobflowtemplates/ml/nightly/run", json={"parameters": {"lr": "0.1"}}, headers=OWN)
    assert answer.status_code == 200 and answer.get_json() == {"message": "did run"}
    assert web.post("/api/jobflowtemplates/ml/nightly/suspend", json={}, headers=OWN).status_code == 200
    assert act.calls == [("run", "ml", "nightly", {"lr": "0.1"}, None), ("suspend", "ml", "nightly", {}, None)]
    refused = web.post("/api/jobflowtemplates/ml/gone/resume", json={}, headers=OWN)
    assert refused.status_code == 409 and "not found" in refused.get_json()["error"]
    assert web.post("/api/jobflowtemplates/ml/nightly/delete", json={}, headers=OWN).status_code == 404
    bad = web.post("/api/jobflowtemplates/ml/nightly/run", json={"parameters": {"lr": 1}}, headers=OWN)
    assert bad.status_code == 400 and "parameters" in bad.get_json()["error"]


@pytest.mark.parametrize("body", [[{"lr": "0.1"}], "run", 3, False])
def test_a_jobflowtemplate_action_whose_body_is_not_a_json_object_is_refused_with_400(body) -> None:
    act = Recorder()
    _, web = served(Recorder(), act)
    refused = web.post("/api/jobflowtemplates/ml/nightly/run", json=body, headers=OWN)
    assert refused.status_code == 400
    assert refused.get_json()["error"].startswith("the body must be a JSON object")
    assert act.calls == []


def test_behind_a_proxy_a_jobflowtemplate_action_impersonates_the_user_it_names() -> None:
    act = Recorder()
    _, web = served(Recorder(), act, user_header="X-Forwarded-User")
    headers = {TOKEN_HEADER: "t0k", "X-Forwarded-User": "ben"}
    assert web.post("/api/jobflowtemplates/ml/nightly/resume", json={}, headers=headers).status_code == 200
    assert act.calls == [("resume", "ml", "nightly", {}, "ben")]
    assert web.post("/api/jobflowtemplates/ml/nightly/resume", json={},
                    headers={TOKEN_HEADER: "t0k"}).status_code == 403


class Templates:
    """The two calls of :class:`apiclient.cluster.Cluster` Run now, Suspend and Resume make, answered from memory:
    JobFlowTemplate ml/nightly (suspended), and what was created and patched."""

    def __init__(self) -> None:
        self.created: list[dict] = []
        self.patched: list[dict] = []

    def find(self, api_type, namespace: str, name: str) -> dict | None:
        return nightly(suspended=True) if (api_type, namespace, name) == (JOBFLOWTEMPLATE, "ml", "nightly") else None

    def create(self, api_type, namespace: str, body: dict) -> dict:
        self.created.append((api_type, namespace, body))
        return body

    def merge_patch(self, api_type, namespace: str, name: str, patch: dict) -> dict:
        self.patched.append((api_type, namespace, name, patch))
        return nightly(suspended=patch["spec"]["suspend"])


def test_run_now_creates_the_run_the_command_line_would_with_the_parameters_set() -> None:
    from dashboard.actions import template_actor

    cluster = Templates()
    act = template_actor(cluster)
    said = act("run", "ml", "nightly", {"lr": "0.1"}, None)
    [(api_type, namespace, run)] = cluster.created
    assert (api_type, namespace) == (JOBFLOW, "ml")
    assert said == f"Started run: ml/{run['metadata']['name']} (JobFlowTemplate nightly)"
    assert run["metadata"]["name"].startswith("nightly-m")
    assert run["metadata"]["labels"]["flow.volcano.sh/jobflow-template"] == "nightly"
    assert run["metadata"]["ownerReferences"][0]["uid"] == "uid-nightly"
    assert run["spec"]["parameters"] == [{"name": "lr", "value": "0.1"}, {"name": "epochs", "value": "10"}]
    assert act("resume", "ml", "nightly", {}, None).startswith("Resumed JobFlowTemplate: ml/nightly")
    assert cluster.patched == [(JOBFLOWTEMPLATE, "ml", "nightly", {"spec": {"suspend": False}})]
    for call, why in ((("run", "ml", "nightly", {"momentum": "0.9"}, None), "declares no parameter momentum"),
                      (("run", "ml", "gone", {}, None), 'JobFlowTemplate "ml/gone" not found')):
        with pytest.raises(ActionError) as refused:
            act(*call)
        assert refused.value.status == 409 and why in str(refused.value)
    assert len(cluster.created) == 1
