"""The objects the logs tests read: a JobFlow ``test`` (flow ``a``, then ``b`` over three items), its vcjobs as
Volcano writes them, and their pods as the kubelet reports them (``running``, ``terminated``, ``waiting``)."""

from __future__ import annotations

from typing import Any

import yaml

JOBFLOW_UID = "uid-test"

TEST = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: test, namespace: ns, uid: uid-test, resourceVersion: "1"}
spec:
  flows:
  - name: a
  - name: b
    dependsOn: {targets: [a]}
    forEach: {items: [x, y, z]}
status: {state: {phase: Running}}
"""


def jobflow(**status: Any) -> dict[str, Any]:
    """JobFlow ``test``; ``status`` replaces parts of its status (``state={"phase": "Succeed"}``)."""
    obj = yaml.safe_load(TEST)
    obj["status"].update(status)
    return obj


def vcjob(name: str, *, phase: str = "Running", tasks: tuple[str, ...] = ("main",), owner: str = JOBFLOW_UID,
          uid: str | None = None) -> dict[str, Any]:
    """A vcjob JobFlow ``test`` created (its owner reference), in ``phase``."""
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}", "resourceVersion": "1",
                         "labels": {"volcano.sh/createdByJobFlow": "ns.test"},
                         "ownerReferences": [{"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
                                              "name": "test", "uid": owner, "controller": True}]},
            "spec": {"tasks": [{"name": task, "replicas": 1} for task in tasks]},
            "status": {"state": {"phase": phase}}}


def pod(job: str, *, task: str = "main", replica: int = 0, containers: dict[str, str] | None = None,
        init: dict[str, str] | None = None, owner: str | None = None, restarts: int = 0) -> dict[str, Any]:
    """Volcano's pod ``<job>-<task>-<replica>``; each container ``running``, ``terminated`` or ``waiting`` (never
    started), its instance ``<pod>/<container>/<restarts>``."""
    name = f"{job}-{task}-{replica}"

    def status(container: str, state: str) -> dict[str, Any]:
        instance = f"containerd://{name}/{container}/{restarts}"
        states = {"running": {"running": {"startedAt": "2026-11-25T09:00:00Z"}},
                  "terminated": {"terminated": {"exitCode": 0, "containerID": instance}},
                  "waiting": {"waiting": {"reason": "ContainerCreating"}}}
        return {"name": container, "state": states[state], "restartCount": restarts,
                **({"containerID": instance} if state != "waiting" else {})}

    containers = containers or {"main": "running"}
    init = init or {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "1",
                         "labels": {"volcano.sh/job-name": job, "volcano.sh/task-spec": task},
                         "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job,
                                              "uid": owner or f"uid-{job}", "controller": True}]},
            "spec": {"initContainers": [{"name": c} for c in init], "containers": [{"name": c} for c in containers]},
            "status": {"initContainerStatuses": [status(c, s) for c, s in init.items()],
                       "containerStatuses": [status(c, s) for c, s in containers.items()]}}
