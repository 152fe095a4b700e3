"""``status`` of a JobFlow whose flows make child JobFlows (``flows[].jobFlow``): each child nested as a tree under
the flow that made it, at every level, found with one LIST of the namespace's child JobFlows (kept by owner UID)
and one of their vcjobs; ``-o json`` holds each child's own view; ``-w`` follows the children too.

The command line runs in-process against an API server held in memory (:class:`Family`), which answers the
``Cluster`` calls ``status`` makes with kubectl's label selectors and records each one; the objects are
``tests/child_jobflows.py``'s (train -> its child train-prep -> its child train-prep-fetch).
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest
import yaml

from child_jobflows import child, family, left_over, prep, train
from jobflow_core.vocabulary import label_selectors
from jobflow_core.vocabulary.api import VCJOB, ApiType
from kubectl_jobflow import cli, context, status

NOW = datetime(2026, 1, 2, 3, 10, 0, tzinfo=UTC)
PLAIN = yaml.safe_load("""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: plain, namespace: default, uid: u-plain, resourceVersion: "40",
           creationTimestamp: "2026-01-02T03:04:00Z"}
spec: {flows: [{name: a}]}
status: {state: {phase: Running}, progress: 0/1}
""")
"""A JobFlow none of whose flows makes a child JobFlow."""


class Family:
    """An API server holding JobFlows and vcjobs, answering ``get`` and ``list`` (label selectors matched as the
    API server matches them), and recording each request."""

    def __init__(self, *objects: dict) -> None:
        self.objects = list(objects)
        self.requests: list[tuple[str, str, str | None]] = []

    def _of(self, api_type: ApiType) -> list[dict]:
        return [obj for obj in self.objects if (obj["apiVersion"], obj["kind"]) == (api_type.api_version,
                                                                                      api_type.kind)]

    def get(self, api_type: ApiType, namespace: str, name: str) -> dict:
        from apiclient.cluster import KubeError

        self.requests.append(("GET", api_type.plural, name))
        for obj in self._of(api_type):
            if obj["metadata"]["name"] == name and obj["metadata"]["namespace"] == namespace:
                return obj
        raise KubeError(f'{api_type.plural}.{api_type.group} "{name}" not found', status=404)

    def list(self, api_type: ApiType, namespace: str | None, *, label_selector: str | None = None,
             limit: int | None = None) -> dict:
        self.requests.append(("LIST", api_type.plural, label_selector))
        selector = label_selectors.parse(label_selector or "")
        return {"metadata": {"resourceVersion": "50"},
                "items": [obj for obj in self._of(api_type) if namespace in (None, obj["metadata"]["namespace"])
                          and selector.matches(obj["metadata"].get("labels") or {})]}

    def jobs_of(self, jobflow: dict) -> list[dict]:
        meta = jobflow["metadata"]
        return self.list(VCJOB, meta["namespace"],
                         label_selector=f"volcano.sh/createdByJobFlow={meta['namespace']}.{meta['name']}")["items"]

    def close(self) -> None:
        pass


def status_of(monkeypatch, cluster: Family, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(context.Context, "cluster", property(lambda ctx: cluster))
    monkeypatch.setattr(status, "utc_now", lambda: NOW)
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")  # the namespace: default
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["status", *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_a_child_jobflows_flows_are_nested_under_the_flow_that_made_it_at_every_level(monkeypatch):
    code, out, err = status_of(monkeypatch, Family(*family()), "train")
    assert (code, err) == (0, "")
    assert [line.rstrip() for line in out.splitlines()] == [
        "JobFlow default/train   Running   0/2   age 6m",
        "FLOW          AFTER   JOB                    PHASE       AGE     RESTARTS   DETAIL",
        "prep                  train-prep             Running     5m59s   -          "
        "child JobFlow from prepare: Running 1/2",
        "┆  fetch              train-prep-fetch       Completed   5m59s   -          "
        "child JobFlow from download: Succeed 1/1",
        "┆  ┆  get             train-prep-fetch-get   Completed   5m57s   0          pods: 1/1 Succeeded",
        "┆  └─ clean   fetch   train-prep-clean       Running     4m      0          main: 1/1 Running",
        "└─ fit        prep    train-fit              Waiting     -       -          "
        'waiting for "prep" to be Completed',
    ]


def test_a_childs_own_status_says_whose_child_it_is_and_a_jobflow_without_a_parent_says_nothing(monkeypatch):
    _, out, _ = status_of(monkeypatch, Family(*family()), "train-prep")
    assert out.splitlines()[:3] == [
        "JobFlow default/train-prep   Running   1/2   age 5m59s", "Child of JobFlow train, flow prep",
        "FLOW       AFTER   JOB                    PHASE       AGE     RESTARTS   DETAIL"]
    _, data, _ = status_of(monkeypatch, Family(*family()), "train-prep", "-o", "json")
    assert json.loads(data)["parent"] == {"name": "train", "flow": "prep"}
    _, data, _ = status_of(monkeypatch, Family(*family()), "train", "-o", "json")
    assert "parent" not in json.loads(data) and "Child of" not in status_of(monkeypatch, Family(*family()), "train")[1]


def test_a_jobflow_labelled_as_a_child_but_controlled_by_another_jobflow_is_not_shown(monkeypatch):
    _, out, _ = status_of(monkeypatch, Family(train(), left_over()), "train")
    assert "train-old" not in out
    assert out.splitlines()[2].split()[-4:] == ["child", "JobFlow", "from", "prepare"]  # known, but not listed


def test_children_at_every_level_cost_two_lists_and_a_jobflow_without_child_flows_none(monkeypatch):
    cluster = Family(*family(), PLAIN)
    status_of(monkeypatch, cluster, "train")
    assert cluster.requests == [
        ("GET", "jobflows", "train"),
        ("LIST", "jobs", "volcano.sh/createdByJobFlow=default.train"),
        ("LIST", "jobflows", "flow.volcano.sh/parent"),
        ("LIST", "jobs", "volcano.sh/createdByJobFlow in (default.train-prep,default.train-prep-fetch)"),
    ]
    cluster.requests.clear()
    status_of(monkeypatch, cluster, "plain")
    assert cluster.requests == [("GET", "jobflows", "plain"),
                                ("LIST", "jobs", "volcano.sh/createdByJobFlow=default.plain")]


def test_many_children_are_asked_for_their_vcjobs_a_hundred_at_a_time(monkeypatch):
    items = [child(f"train-prep-{i}", parent="train", flow="prep", template="prepare", depth=1,
                   flows=[{"name": "x"}], status={"state": {"phase": "Running"}}) for i in range(150)]
    fanned = train()
    fanned["spec"]["flows"][0]["forEach"] = {"items": [str(i) for i in range(150)]}
    cluster = Family(fanned, *items)
    code, out, _ = status_of(monkeypatch, cluster, "train")
    lists = [selector for _, plural, selector in cluster.requests if plural == "jobs" and "in (" in selector]
    assert [selector.count(",") + 1 for selector in lists] == [100, 50]
    assert code == 0 and "items: 150/150 Running" in out.splitlines()[2]  # a fan-out of children stays one line


def test_a_child_flow_not_started_yet_waits_like_any_flow(monkeypatch):
    waiting = train()
    waiting["status"] = {"state": {"phase": "Pending"}, "waitingFlows": [
        {"name": "prep", "jobName": "train-prep", "message": 'waiting for room in Volcano queue "gpu"'}]}
    _, out, _ = status_of(monkeypatch, Family(waiting), "train")
    assert out.splitlines()[2].split(None, 4) == ["prep", "train-prep", "Waiting", "-",
                                                  '-          waiting for room in Volcano queue "gpu"']


def test_the_data_view_holds_each_childs_own_view_and_its_jobflowtemplate(monkeypatch):
    code, out, _ = status_of(monkeypatch, Family(*family()), "train", "-o", "json")
    data = json.loads(out)
    prep, fit = data["flows"]
    assert (prep["childTemplate"], prep["child"]["name"], prep["child"]["phase"], prep["child"]["progress"]) == \
        ("prepare", "train-prep", "Running", "1/2")
    grandchild = prep["child"]["flows"][0]
    assert (grandchild["childTemplate"], grandchild["child"]["name"], grandchild["child"]["flows"][0]["job"]) == \
        ("download", "train-prep-fetch", "train-prep-fetch-get")
    assert "child" not in fit and "childTemplate" not in fit


def test_json_of_a_fan_out_of_children_lists_each_childs_view(monkeypatch):
    items = [child(f"train-prep-{i}", parent="train", flow="prep", template="prepare", depth=1,
                   flows=[{"name": "x"}], status={"state": {"phase": "Running"}, "progress": f"{i}/1"})
             for i in range(2)]
    fanned = train()
    fanned["spec"]["flows"][0]["forEach"] = {"items": ["a", "b"]}
    _, out, _ = status_of(monkeypatch, Family(fanned, *items), "train", "-o", "json")
    prep = json.loads(out)["flows"][0]
    assert [(child["name"], child["progress"]) for child in prep["children"]] == \
        [("train-prep-0", "0/1"), ("train-prep-1", "1/1")]


@pytest.fixture
def scripted(monkeypatch):
    """``status -w``'s watches, played from a script: each event is (which follow, kind, object)."""
    import apiclient.follow

    opened: list[tuple[str, str | None]] = []
    script: list = []

    def follow(cluster, api_type, namespace, *, label_selector=None, field_selector=None, **_):
        opened.append((api_type.plural, label_selector or field_selector))
        return iter(())

    def merged(*streams, timeout, stop):
        yield from script

    monkeypatch.setattr(apiclient.follow, "follow", follow)
    monkeypatch.setattr(apiclient.follow, "merged", merged)
    return opened, script


def test_watching_follows_the_children_and_redraws_when_a_child_moves_on(monkeypatch, scripted):
    opened, script = scripted
    prep_done = prep()
    prep_done["status"].update({"state": {"phase": "Succeed"}, "progress": "2/2"})
    train_done = train()
    train_done["status"] = {"state": {"phase": "Succeed"}, "progress": "2/2"}
    script += [(2, "MODIFIED", prep_done), (0, "MODIFIED", train_done)]
    code, out, _ = status_of(monkeypatch, Family(*family()), "train", "-w")
    assert opened == [("jobflows", "metadata.name=train"), ("jobs", "volcano.sh/createdByJobFlow"),
                      ("jobflows", "flow.volcano.sh/parent")]
    views = out.split("\n\n")
    assert "child JobFlow from prepare: Running 1/2" in views[0]
    assert "child JobFlow from prepare: Succeed 2/2" in views[1]
    assert code == 0 and views[-1].startswith("JobFlow default/train   Succeed")


def test_watching_a_jobflow_without_child_flows_follows_only_its_own_vcjobs(monkeypatch, scripted):
    opened, script = scripted
    done = yaml.safe_load(yaml.safe_dump(PLAIN))
    done["status"] = {"state": {"phase": "Succeed"}, "progress": "1/1"}
    script.append((0, "MODIFIED", done))
    code, _, _ = status_of(monkeypatch, Family(PLAIN), "plain", "-w")
    assert code == 0
    assert opened == [("jobflows", "metadata.name=plain"), ("jobs", "volcano.sh/createdByJobFlow=default.plain")]
