"""Child JobFlows through the shell (``handlers``), on the in-memory API server: the parent creates its child, the
child's event reconciles the parent, outputs pass up, a stop and a suspend pass down, and a child whose parent went is
let go of its finalizer."""

from __future__ import annotations

import pytest
import yaml

from handlers.dispatch import Dispatcher
from handlers.jobflows import Reconciler
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, RECORD_FINALIZER, VCJOB
from memory_kube import MemoryKube
from scenario import TEMPLATE_SPEC

NS = "default"

PARENT = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: p, namespace: default}
spec:
  flows:
    - name: prep
      jobFlow: {template: prepare, parameters: [{name: dataset, value: a}]}
    - name: train
      dependsOn: {targets: [prep]}
      patch:
        jobSpec:
          tasks:
            - name: nginx
              template:
                spec:
                  containers: [{name: nginx, env: [{name: DATA, value: "{{targets.prep.result.path}}"}]}]
"""

PREPARE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: prepare, namespace: default}
spec:
  jobFlow:
    spec:
      parameters: [{name: dataset, value: none}]
      outputs: [{name: path, value: "/data/{{params.dataset}}/{{targets.fetch.result.file}}"}]
      flows: [{name: fetch}]
"""


def template(name: str) -> dict:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": {"name": name,
            "namespace": NS}, "spec": yaml.safe_load(TEMPLATE_SPEC)}


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    for name in ("fetch", "train"):
        kube.put(template(name))
    kube.put(yaml.safe_load(PREPARE))
    kube.put(yaml.safe_load(PARENT))
    return kube


def dispatcher(kube: MemoryKube) -> Dispatcher:
    return Dispatcher(Reconciler(kube, clock=lambda: kube.now))


def stored(kube: MemoryKube, name: str) -> dict:
    return kube.stored(JOBFLOW, NS, name) or {}


def finish_fetch(kube: MemoryKube, handler: Dispatcher):
    kube.move(NS, "p-prep-fetch", "Completed")
    kube.pods[NS] = [{"metadata": {"name": "p-prep-fetch-0", "labels": {"volcano.sh/job-name": "p-prep-fetch"}},
                      "status": {"containerStatuses": [{"state": {"terminated": {"message": "file=x.csv"}}}]}}]
    return handler.vcjob(NS, "p-prep-fetch", controller="p-prep", deleted=False)


def test_the_parent_creates_its_child_which_runs_and_hands_its_outputs_up(kube):
    handler = dispatcher(kube)
    assert handler.jobflow(NS, "p").outcomes[0].created == ["p-prep"]
    child = stored(kube, "p-prep")
    assert child["metadata"]["labels"]["flow.volcano.sh/parent"] == "p"
    assert child["spec"]["parameters"] == [{"name": "dataset", "value": "a"}]
    result = handler.jobflow(NS, "p-prep", controller="p")  # the child's own event: it plans, then its parent
    assert [o.jobflow for o in result.outcomes] == ["default/p-prep", "default/p"]
    assert result.outcomes[0].created == ["p-prep-fetch"] and kube.names(VCJOB, NS) == ["p-prep-fetch"]
    result = finish_fetch(kube, handler)  # the vcjob's event: the child succeeds, and its parent goes on at once
    assert stored(kube, "p-prep")["status"]["state"]["phase"] == "Succeed"
    assert stored(kube, "p-prep")["status"]["outputs"] == {"path": "/data/a/x.csv"}
    assert [(o.jobflow, o.created) for o in result.outcomes] == [("default/p-prep", []), ("default/p", ["p-train"])]
    train = kube.stored(VCJOB, NS, "p-train")
    assert train["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "DATA", "value": "/data/a/x.csv"}]
    record = next(r for r in stored(kube, "p")["status"]["jobStatusList"] if r["name"] == "p-prep")
    assert record["state"] == "Completed"
    assert RECORD_FINALIZER not in (stored(kube, "p-prep")["metadata"].get("finalizers") or [])  # released


def test_a_child_deleted_after_it_succeeded_and_was_recorded_is_never_made_again(kube):
    handler = dispatcher(kube)
    handler.jobflow(NS, "p")
    handler.jobflow(NS, "p-prep", controller="p")
    finish_fetch(kube, handler)
    handler.jobflow(NS, "p-prep", controller="p")
    kube.remove(JOBFLOW, NS, "p-prep")
    assert stored(kube, "p-prep") == {}
    result = handler.jobflow(NS, "p-prep", controller="p")
    assert all(not o.created for o in result.outcomes) and stored(kube, "p-prep") == {}


def test_a_stop_of_the_parent_stops_the_child_which_aborts_its_vcjob(kube):
    handler = dispatcher(kube)
    handler.jobflow(NS, "p")
    handler.jobflow(NS, "p-prep", controller="p")
    kube.objects[(JOBFLOW.kind, NS, "p")]["spec"]["shutdown"] = "Stop"
    handler.jobflow(NS, "p")
    assert stored(kube, "p-prep")["spec"]["shutdown"] == "Stop"
    handler.jobflow(NS, "p-prep", controller="p")
    assert kube.carry_out_commands() == ["p-prep-fetch"]
    handler.vcjob(NS, "p-prep-fetch", controller="p-prep", deleted=False)
    assert stored(kube, "p-prep")["status"]["state"] == {"phase": "Failed", "reason": "Stopped",
                                                         "message": stored(kube, "p-prep")["status"]["state"][
                                                             "message"]}
    handler.jobflow(NS, "p-prep", controller="p")
    assert stored(kube, "p")["status"]["state"]["phase"] == "Failed"


def test_suspend_passes_down_and_resume_takes_it_back(kube):
    handler = dispatcher(kube)
    handler.jobflow(NS, "p")
    handler.jobflow(NS, "p-prep", controller="p")
    kube.objects[(JOBFLOW.kind, NS, "p")]["spec"]["suspend"] = True
    handler.jobflow(NS, "p")
    child = stored(kube, "p-prep")
    assert child["spec"]["suspend"] is True
    assert child["metadata"]["annotations"]["flow.volcano.sh/suspended-by-parent"] == "true"
    del kube.objects[(JOBFLOW.kind, NS, "p")]["spec"]["suspend"]
    handler.jobflow(NS, "p")
    child = stored(kube, "p-prep")
    assert "suspend" not in child["spec"] and "flow.volcano.sh/suspended-by-parent" not in child["metadata"][
        "annotations"]


def test_a_child_whose_parent_went_is_let_go_by_its_event_and_by_a_resync(kube):
    handler = dispatcher(kube)
    handler.jobflow(NS, "p")
    del kube.objects[(JOBFLOW.kind, NS, "p")]  # the parent went (the garbage collector deletes the child next)
    kube.remove(JOBFLOW, NS, "p-prep")
    assert stored(kube, "p-prep")["metadata"]["deletionTimestamp"]
    handler.jobflow(NS, "p-prep", controller="p")
    assert stored(kube, "p-prep") == {}
    handler.jobflow(NS, "p")
    kube.put(yaml.safe_load(PARENT))
    handler.jobflow(NS, "p")
    del kube.objects[(JOBFLOW.kind, NS, "p")]
    kube.remove(JOBFLOW, NS, "p-prep")
    handler.resync()
    assert stored(kube, "p-prep") == {}


def test_a_missing_jobflowtemplate_blocks_the_flow_with_a_message_until_it_is_created(kube):
    del kube.objects[(JOBFLOWTEMPLATE.kind, NS, "prepare")]
    handler = dispatcher(kube)
    assert handler.jobflow(NS, "p").outcomes[0].created == []
    state = stored(kube, "p")["status"]["state"]
    assert state["reason"] == "TemplateNotFound" and 'JobFlowTemplate "default/prepare" not found' in state["message"]
    kube.put(yaml.safe_load(PREPARE))
    assert handler.jobflow(NS, "p").outcomes[0].created == ["p-prep"]


def test_a_child_whose_parent_went_is_let_go_by_its_vcjobs_event_too(kube):
    handler = dispatcher(kube)
    handler.jobflow(NS, "p")
    handler.jobflow(NS, "p-prep", controller="p")
    del kube.objects[(JOBFLOW.kind, NS, "p")]
    kube.remove(JOBFLOW, NS, "p-prep")  # the garbage collector, after the parent went
    kube.move(NS, "p-prep-fetch", "Running")
    handler.vcjob(NS, "p-prep-fetch", controller="p-prep", deleted=False)  # no event of the child itself
    assert stored(kube, "p-prep") == {}


def test_a_running_child_deleted_is_made_again_by_the_event_that_lets_it_go_without_naming_its_parent(kube):
    handler = dispatcher(kube)
    handler.jobflow(NS, "p")
    handler.jobflow(NS, "p-prep", controller="p")
    first = stored(kube, "p-prep")["metadata"]["uid"]
    kube.remove(JOBFLOW, NS, "p-prep")  # held by our finalizer
    handler.jobflow(NS, "p-prep")  # Reference mode: the event names no controller; the child's own read does
    assert stored(kube, "p-prep")["metadata"]["uid"] != first  # let go, gone, and made again in the same request


def test_one_event_reconciles_a_parent_once_after_its_child(kube):
    handler = dispatcher(kube)
    handler.jobflow(NS, "p")
    handler.jobflow(NS, "p-prep", controller="p")
    kube.move(NS, "p-prep-fetch", "Running")
    result = handler.vcjob(NS, "p-prep-fetch", controller="p-prep", deleted=False)
    assert [o.jobflow for o in result.outcomes].count("default/p") == 1
    result = handler.jobflow(NS, "p-prep", controller="p")
    assert [o.jobflow for o in result.outcomes].count("default/p") == 1
