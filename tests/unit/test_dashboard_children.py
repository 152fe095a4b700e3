"""Child JobFlows on the dashboard: a flow that made a child JobFlow is one node of its parent's DAG, marked as a
JobFlow, with the child's phase and progress, live, and a link to the child's own page; the child's page names its
parent and the flow that made it.

The views and the app run on a store filled by hand with ``tests/child_jobflows.py``'s family (train -> its child
train-prep -> its child train-prep-fetch); the page's script runs in node against a stand-in of the DOM
(tests/unit/page_in_node.js). The browser tier is tests/cluster/test_dashboard_children_in_browser.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from child_jobflows import child, clean, family, fetch, left_over, prep, train
from dashboard.app import Settings, create_app
from dashboard.pages import Pages
from dashboard.store import Store
from dashboard.views import items_view, jobflow_view
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB

NOW = datetime(2026, 1, 2, 3, 10, 0, tzinfo=UTC)
STATIC = Path(__file__).resolve().parents[2] / "dashboard" / "static"
HARNESS = Path(__file__).resolve().parent / "page_in_node.js"


def node_of(view: dict, flow: str) -> dict:
    return next(node for node in view["nodes"] if node["name"] == flow)


def served() -> tuple[Store, object]:
    store = Store()
    store.fill(JOBFLOW, [obj for obj in family() if obj["kind"] == "JobFlow"])
    store.fill(VCJOB, [obj for obj in family() if obj["kind"] == "Job"])
    return store, create_app(store, Pages(store, None, clock=lambda: NOW), Settings()).test_client()


def test_a_flow_that_made_a_child_jobflow_is_one_node_with_the_childs_phase_and_progress() -> None:
    view = jobflow_view(train(), [], [], now=NOW, children=[prep(), fetch(), left_over()])
    node = node_of(view, "prep")
    assert (node["state"], node["job"], node["childTemplate"], node["template"]) == \
        ("Running", "train-prep", "prepare", None)
    assert node["child"] == {"name": "train-prep", "phase": "Running", "progress": "1/2", "done": 0.0}
    assert node["detail"] == "JobFlow Running" and node["since"] is None
    assert [n["name"] for n in view["nodes"]] == ["prep", "fit"]  # the grandchild and the left-over are no nodes
    assert node_of(view, "fit")["child"] is None and node_of(view, "fit")["childTemplate"] is None


def test_a_child_flow_not_started_yet_is_marked_as_one_and_waits_like_any_flow() -> None:
    waiting = train()
    waiting["status"] = {"state": {"phase": "Pending"}}
    node = node_of(jobflow_view(waiting, [], [], now=NOW), "prep")
    assert (node["state"], node["childTemplate"], node["child"], node["job"]) == \
        ("Waiting", "prepare", None, "train-prep")


def test_a_jobflow_labelled_as_a_child_but_controlled_by_another_is_not_taken_for_the_child() -> None:
    stranger = left_over()
    stranger["metadata"]["name"] = "train-prep"
    node = node_of(jobflow_view(train(), [], [], now=NOW, children=[stranger]), "prep")
    assert node["child"] is None and node["detail"] != "JobFlow Failed"


def test_a_child_jobflows_page_names_its_parent_and_the_flow_that_made_it() -> None:
    view = jobflow_view(prep(), [clean()], [], now=NOW, children=[fetch()])
    assert view["parent"] == {"namespace": "default", "name": "train", "flow": "prep", "template": "prepare"}
    assert node_of(view, "fetch")["child"]["phase"] == "Succeed"  # and its own child is a node of its DAG
    assert jobflow_view(train(), [], [], now=NOW)["parent"] is None


def test_a_fan_out_of_child_jobflows_lists_its_items_as_jobflows() -> None:
    fanned = train()
    fanned["spec"]["flows"][0]["forEach"] = {"items": ["a", "b"]}
    items = [child(f"train-prep-{i}", parent="train", flow="prep", template="prepare", depth=1,
                   flows=[{"name": "x"}], status={"state": {"phase": phase}})
             for i, phase in enumerate(["Succeed", "Running"])]
    view = items_view(fanned, [], "prep", now=NOW, children=items)
    assert view["jobFlows"] is True
    assert [(item["job"], item["state"]) for item in view["items"]] == [("train-prep-0", "Completed"),
                                                                         ("train-prep-1", "Running")]
    node = node_of(jobflow_view(fanned, [], [], now=NOW, children=items), "prep")
    assert node["items"]["counts"] == {"Completed": 1, "Running": 1} and node["child"] is None


def test_the_parents_page_serves_the_child_node_and_the_childs_page_its_own_dag() -> None:
    _, web = served()
    parent = web.get("/api/jobflows/default/train").get_json()
    assert node_of(parent, "prep")["child"]["progress"] == "1/2"
    page = web.get("/api/jobflows/default/train-prep").get_json()
    assert [n["name"] for n in page["nodes"]] == ["fetch", "clean"]
    assert page["parent"]["name"] == "train" and node_of(page, "clean")["tasks"] == "main: 1/1 Running"


def test_the_parents_view_changes_when_its_child_moves_on() -> None:
    store, web = served()
    assert node_of(web.get("/api/jobflows/default/train").get_json(), "prep")["child"]["progress"] == "1/2"
    further = prep()
    further["metadata"]["resourceVersion"] = "33"
    further["status"].update({"state": {"phase": "Succeed"}, "progress": "2/2"})
    store.note(JOBFLOW, further, deleted=False)
    node = node_of(web.get("/api/jobflows/default/train").get_json(), "prep")
    assert (node["child"]["phase"], node["child"]["progress"], node["detail"]) == ("Succeed", "2/2", "JobFlow Succeed")


def test_the_store_finds_a_parents_children_by_label_and_forgets_them_when_gone_or_relabelled() -> None:
    store, _ = served()
    assert [c["metadata"]["name"] for c in store.children("default", "train")] == ["train-old", "train-prep"]
    assert [c["metadata"]["name"] for c in store.children("default", "train-prep")] == ["train-prep-fetch"]
    relabelled = left_over()
    relabelled["metadata"]["labels"]["flow.volcano.sh/parent"] = "other"
    store.note(JOBFLOW, relabelled, deleted=False)
    store.note(JOBFLOW, fetch(), deleted=True)
    assert [c["metadata"]["name"] for c in store.children("default", "train")] == ["train-prep"]
    assert store.children("default", "train-prep") == [] and store.children("other", "train") == []
    assert [c["metadata"]["name"] for c in store.children("default", "other")] == ["train-old"]


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="needs node (Debian's nodejs) to run the page's script")
def test_the_page_draws_the_child_as_a_jobflow_node_linking_to_its_page_and_its_panel_names_it() -> None:
    _, web = served()
    view = web.get("/api/jobflows/default/train").get_json()
    config = {"page": "jobflow", "namespace": "default", "name": "train", "token": "", "actions": False,
              "logs": True}
    scenario = f"""
        await view({json.dumps(view)});
        const dag = el("dag").innerHTML;
        await pick("prep");
        return {{dag, panel: el("panel").innerHTML, legend: el("legend").innerHTML}};
    """
    done = subprocess.run([NODE, str(HARNESS), str(STATIC), json.dumps(config)], input=scenario, text=True,
                          capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    drawn = json.loads(done.stdout)
    prep_node = drawn["dag"].split('id="node-prep"')[1].split("</g>")[0]
    assert 'class="behind"' in prep_node and "❐ prep" in prep_node and "▶ Running · 1/2" in prep_node
    assert 'href="/jobflows/default/train-prep"' in prep_node and "❐ JobFlow Running ↗" in prep_node
    assert 'data-child="train-prep"' in prep_node and 'data-progress="1/2"' in prep_node
    assert 'href="/jobflows/' not in drawn["dag"].split('id="node-fit"')[1]
    assert '<a id="child-link" href="/jobflows/default/train-prep">train-prep</a> (Running, 1/2)' in drawn["panel"]
    assert 'href="/jobflowtemplates/default/prepare"' in drawn["panel"]
    assert "show-logs" not in drawn["panel"] and ">vcjob<" not in drawn["panel"]
    assert "❐ a child JobFlow" in drawn["legend"]
