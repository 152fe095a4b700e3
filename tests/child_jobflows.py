"""A JobFlow whose flow makes a child JobFlow that makes one of its own, as the API server would hold them: the
family ``kubectl jobflow status`` and the dashboard show, defined once for the unit tier and the browser tier.

``train``: ``prep`` (a child JobFlow from JobFlowTemplate ``prepare``) -> ``fit``. Its child ``train-prep``:
``fetch`` (a child JobFlow from ``download``) -> ``clean``. Its child ``train-prep-fetch``: ``get``, Succeed. The
children carry what :func:`jobflow_core.flows.children.child_manifest` gives them (the parent labels, a controller
owner reference with the parent's UID); :func:`left_over` is labelled as ``train``'s child but controlled by another
JobFlow (a ``train`` deleted since), so it is nobody's child here. Each function answers a fresh copy.
"""

from __future__ import annotations

from typing import Any

import yaml

NAMESPACE = "default"
CREATED = "2026-01-02T03:04:00Z"


def train() -> dict[str, Any]:
    return yaml.safe_load(f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: train, namespace: {NAMESPACE}, uid: u-train, resourceVersion: "30", creationTimestamp: "{CREATED}"}}
spec:
  flows:
  - {{name: prep, jobFlow: {{template: prepare, parameters: [{{name: dataset, value: a}}]}}}}
  - {{name: fit, dependsOn: {{targets: [prep]}}}}
status:
  state: {{phase: Running}}
  progress: 0/2
  jobStatusList:
  - {{name: train-prep, state: Running, startTimestamp: "2026-01-02T03:04:01Z"}}
  waitingFlows:
  - {{name: fit, jobName: train-fit, waitingFor: [prep], message: 'waiting for "prep" to be Completed'}}
""")


def child(name: str, *, parent: str, flow: str, template: str, depth: int, flows: list[dict[str, Any]],
          status: dict[str, Any], parent_uid: str | None = None) -> dict[str, Any]:
    """A child JobFlow ``name`` of JobFlow ``parent`` (controlled by UID ``u-<parent>`` unless ``parent_uid``)."""
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
        "metadata": {
            "name": name, "namespace": NAMESPACE, "uid": f"u-{name}", "resourceVersion": "31",
            "creationTimestamp": "2026-01-02T03:04:01Z",
            "labels": {"flow.volcano.sh/parent": parent, "flow.volcano.sh/parent-flow": flow,
                       "flow.volcano.sh/child-template": template, "flow.volcano.sh/depth": str(depth)},
            "ownerReferences": [{"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "name": parent,
                                 "uid": parent_uid or f"u-{parent}", "controller": True,
                                 "blockOwnerDeletion": True}]},
        "spec": {"flows": flows},
        "status": status,
    }


def prep() -> dict[str, Any]:
    return child("train-prep", parent="train", flow="prep", template="prepare", depth=1,
                 flows=[{"name": "fetch", "jobFlow": {"template": "download"}},
                        {"name": "clean", "dependsOn": {"targets": ["fetch"]}}],
                 status={"state": {"phase": "Running"}, "progress": "1/2", "completedJobs": ["train-prep-fetch"],
                         "jobStatusList": [{"name": "train-prep-fetch", "state": "Completed",
                                            "startTimestamp": "2026-01-02T03:04:02Z",
                                            "endTimestamp": "2026-01-02T03:05:00Z"}]})


def fetch() -> dict[str, Any]:
    return child("train-prep-fetch", parent="train-prep", flow="fetch", template="download", depth=2,
                 flows=[{"name": "get"}],
                 status={"state": {"phase": "Succeed"}, "progress": "1/1", "outputs": {"path": "/data/a"},
                         "jobStatusList": [{"name": "train-prep-fetch-get", "state": "Completed",
                                            "startTimestamp": "2026-01-02T03:04:03Z",
                                            "endTimestamp": "2026-01-02T03:04:50Z", "restartCount": 0}]})


def left_over() -> dict[str, Any]:
    return child("train-old", parent="train", parent_uid="u-an-earlier-train", flow="prep", template="prepare",
                 depth=1, flows=[{"name": "x"}], status={"state": {"phase": "Failed"}})


def vcjob(name: str, *, owner: str, phase: str, created: str) -> dict[str, Any]:
    """A vcjob of JobFlow ``owner``, in ``phase`` (one pod of task ``main`` in it)."""
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "resourceVersion": "32", "creationTimestamp": created,
                     "labels": {"volcano.sh/createdByJobFlow": f"{NAMESPACE}.{owner}"},
                     "ownerReferences": [{"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "name": owner,
                                          "uid": f"u-{owner}", "controller": True}]},
        "spec": {"tasks": [{"name": "main", "replicas": 1}]},
        "status": {"state": {"phase": phase}, "taskStatusCount": {"main": {"phase": {phase: 1}}}},
    }


def clean() -> dict[str, Any]:
    return vcjob("train-prep-clean", owner="train-prep", phase="Running", created="2026-01-02T03:06:00Z")


def get() -> dict[str, Any]:
    job = vcjob("train-prep-fetch-get", owner="train-prep-fetch", phase="Completed", created="2026-01-02T03:04:03Z")
    job["status"] = {"state": {"phase": "Completed"}, "succeeded": 1, "runningDuration": "47s"}  # as Volcano ends it
    return job


def family() -> list[dict[str, Any]]:
    """Every object above: the three JobFlows of the family, the left-over child, and the children's vcjobs."""
    return [train(), prep(), fetch(), left_over(), clean(), get()]
