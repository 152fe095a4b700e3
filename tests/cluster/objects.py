"""Test helpers that act like a user with kubectl: apply YAML, read JobFlows and vcjobs, wait for phases."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster.testing import LocalCluster
from seeds import diamond_yaml

PLURALS = {
    ("flow.volcano.sh/v1alpha1", "JobFlow"): "jobflows",
    ("flow.volcano.sh/v1alpha1", "JobTemplate"): "jobtemplates",
    ("flow.volcano.sh/v1alpha1", "JobFlowTemplate"): "jobflowtemplates",
    ("batch.volcano.sh/v1alpha1", "Job"): "jobs",
}

SHORT_TEMPLATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {{name: {name}}}
spec:
  minAvailable: 1
  schedulerName: volcano
  queue: default
  tasks:
  - name: main
    replicas: 1
    template:
      metadata:
        annotations: {{kwok.jobflow.dev/run-for: "{run_for}"{extra}}}
      spec:
        restartPolicy: Never
        containers: [{{name: main, image: busybox}}]
"""


def template(name: str, *, run_for: str = "300ms", fail: bool = False, keep_running: bool = False,
             fail_attempts: int = 0, message: str | None = None, messages: tuple[str, ...] = ()) -> str:
    """A one-pod JobTemplate whose pod runs ``run_for`` on a kwok node, then succeeds (or fails; or fails in the
    first ``fail_attempts`` attempts of a flow with ``retry``); its result is ``message``, or in iteration ``i`` of
    a ``repeat`` flow ``messages[i]``."""
    extra = ", kwok.jobflow.dev/fail: 'true'" if fail else ""
    extra += ", kwok.jobflow.dev/keep-running: 'true'" if keep_running else ""
    extra += f", kwok.jobflow.dev/fail-attempts: '{fail_attempts}'" if fail_attempts else ""
    extra += f", kwok.jobflow.dev/message: '{message}'" if message else ""
    extra += "".join(f", kwok.jobflow.dev/message-{i}: '{text}'" for i, text in enumerate(messages))
    text = SHORT_TEMPLATE.format(name=name, run_for=run_for, extra=extra)
    if fail or fail_attempts:
        text += "  policies: [{event: PodFailed, action: TerminateJob}]\n"
    return text


def one_pod_vcjob(name: str, *, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The vcjob ``template(name)`` stands for (a JobTemplate's spec is a vcjob spec), to create directly."""
    job = yaml.safe_load(template(name))
    job.update(apiVersion="batch.volcano.sh/v1alpha1", kind="Job")
    job["metadata"] = {"name": name, "namespace": namespace, **({"labels": labels} if labels else {})}
    return job


def apply(cluster: LocalCluster, namespace: str, text: str) -> list[dict[str, Any]]:
    created = []
    for doc in yaml.safe_load_all(text):
        if not doc:
            continue
        group, version = doc["apiVersion"].split("/")
        plural = PLURALS[(doc["apiVersion"], doc["kind"])]
        created.append(cluster.custom.create_namespaced_custom_object(group, version, namespace, plural, doc))
    return created


def jobflow(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any] | None:
    from kubernetes.client.rest import ApiException

    try:
        return cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                                          name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _phase(flow: dict[str, Any]) -> str | None:
    return ((flow.get("status") or {}).get("state") or {}).get("phase")


def flow_phase(cluster: LocalCluster, namespace: str, name: str) -> str | None:
    return _phase(jobflow(cluster, namespace, name) or {})


def phases(cluster: LocalCluster, namespace: str) -> dict[str, str | None]:
    """Every JobFlow of ``namespace`` by name, with the phase its status shows (None before the first)."""
    listing = cluster.custom.list_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows")
    return {item["metadata"]["name"]: _phase(item) for item in listing["items"]}


def wait_for_phase(cluster: LocalCluster, namespace: str, name: str, phase: str, *, timeout: float = 60) -> dict:
    cluster.wait_until(f"JobFlow {name} to be {phase}", lambda: flow_phase(cluster, namespace, name) == phase,
                       timeout=timeout)
    return jobflow(cluster, namespace, name)


def vcjobs(cluster: LocalCluster, namespace: str) -> dict[str, dict[str, Any]]:
    listing = cluster.custom.list_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs")
    return {job["metadata"]["name"]: job for job in listing["items"]}


def events_of(cluster: LocalCluster, namespace: str, name: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the Kubernetes Events recorded on an object, oldest first."""
    items = cluster.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    items.sort(key=lambda e: (e.first_timestamp or e.event_time or 0, e.metadata.creation_timestamp))
    return [(e.type, e.reason, e.message) for e in items]


DIAMOND = diamond_yaml("diamond")
"""The seed diamond (``seeds.py``) named ``diamond``; it keeps its vcjobs."""


def diamond_templates(*, run_for: str) -> str:
    """JobTemplates a..e for :data:`DIAMOND` (which keeps its vcjobs, so they can be counted afterwards)."""
    return "---\n".join(template(name, run_for=run_for) for name in "abcde")


class VcjobUids:
    """Every vcjob UID seen in a namespace, per name, polled in the background (API errors during an outage are
    skipped): a name with two UIDs was created twice."""

    def __init__(self, cluster: LocalCluster, namespace: str) -> None:
        self.cluster, self.namespace = cluster, namespace
        self.seen: dict[str, set[str]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.3):
            try:
                for name, job in vcjobs(self.cluster, self.namespace).items():
                    self.seen.setdefault(name, set()).add(job["metadata"]["uid"])
            except Exception:  # the API server is down: nothing can be created meanwhile either
                pass

    def stop(self) -> dict[str, set[str]]:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.seen


class History:
    """Every vcjob ADDED to a namespace and every phase each JobFlow's status showed, from two watches (so a vcjob
    that lives only a moment, as with ``jobRetainPolicy: delete`` or a zero TTL, is still seen). ``uids``: vcjob
    name -> the UIDs it was created with (two: created twice); ``phases``: JobFlow name -> the phases its status
    went through, in order. A watch cut resumes from the last resourceVersion seen; one that the API server answers
410 Gone (restarted, its watch cache begins anew) lists again, counted in ``gaps`` (what was created and
deleted within one gap is not seen)."""

    def __init__(self, cluster: LocalCluster, namespace: str) -> None:
        self.cluster, self.namespace = cluster, namespace
        self.uids: dict[str, set[str]] = {}
        self.flow_uids: dict[str, set[str]] = {}
        """JobFlow name -> the UIDs it was created with (a child JobFlow created twice has two)."""
        self.phases: dict[str, list[str]] = {}
        self.gaps = 0
        self.ended: dict[str, list[int]] = {}
        """JobFlow name -> the numbers of ended flows (``status.flowsEnded``) its status went through."""
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._watch, args=(plural, note), daemon=True)
                         for plural, note in ((("batch.volcano.sh", "jobs"), self._vcjob),
                                              (("flow.volcano.sh", "jobflows"), self._jobflow))]
        self._ready = threading.Barrier(len(self._threads) + 1)
        for thread in self._threads:
            thread.start()
        self._ready.wait(timeout=30)

    def _vcjob(self, kind: str, job: dict[str, Any]) -> None:
        if kind == "ADDED":
            self.uids.setdefault(job["metadata"]["name"], set()).add(job["metadata"]["uid"])

    def _jobflow(self, kind: str, flow: dict[str, Any]) -> None:
        if kind == "ADDED":
            self.flow_uids.setdefault(flow["metadata"]["name"], set()).add(flow["metadata"]["uid"])
        phase = ((flow.get("status") or {}).get("state") or {}).get("phase")
        seen = self.phases.setdefault(flow["metadata"]["name"], [])
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
        count = (flow.get("status") or {}).get("flowsEnded")
        counts = self.ended.setdefault(flow["metadata"]["name"], [])
        if count is not None and (not counts or counts[-1] != count):
            counts.append(count)

    def _watch(self, plural: tuple[str, str], note) -> None:
        from kubernetes import watch
        from kubernetes.client.rest import ApiException

        group, resource = plural
        version_seen = self._list(group, resource, note)
        self._ready.wait(timeout=30)
        while not self._stop.is_set():
            try:
                for event in watch.Watch().stream(self.cluster.custom.list_namespaced_custom_object, group,
                                                  "v1alpha1", self.namespace, resource, resource_version=version_seen,
                                                  timeout_seconds=2, allow_watch_bookmarks=True):
                    version_seen = event["object"]["metadata"].get("resourceVersion") or version_seen
                    if event["type"] in ("ADDED", "MODIFIED"):
                        note(event["type"], event["object"])
            except ApiException as error:
                if error.status == 410:  # a restarted API server's watch cache starts anew: list again
                    self.gaps += 1
                    version_seen = self._list(group, resource, note)
                else:
                    time.sleep(0.5)
            except Exception:  # the API server is down: nothing changes meanwhile; resume from where it stopped
                time.sleep(0.5)

    def _list(self, group: str, resource: str, note) -> str:
        while True:
            try:
                listing = self.cluster.custom.list_namespaced_custom_object(group, "v1alpha1", self.namespace,
                                                                            resource)
                break
            except Exception:
                if self._stop.wait(0.5):
                    return "0"
        for item in listing["items"]:
            note("ADDED", item)
        return listing["metadata"]["resourceVersion"]

    def stop(self) -> "History":
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)
        return self

    def created_twice(self) -> dict[str, int]:
        return {name: len(uids) for name, uids in self.uids.items() if len(uids) > 1}

    def regressions(self) -> dict[str, list[str]]:
        """JobFlows whose status showed another phase after Succeed or Failed."""
        return {name: seen for name, seen in self.phases.items()
                if any(phase in ("Succeed", "Failed") and later != phase
                       for i, phase in enumerate(seen) for later in seen[i + 1:])}


@contextmanager
def served_crd(cluster: LocalCluster, crd: dict[str, Any]) -> Iterator[None]:
    """A throwaway CustomResourceDefinition, created (the API server compiles its CEL rules then), waited for until
    its objects can be listed, and deleted afterwards."""
    spec = crd["spec"]
    extensions = client.ApiextensionsV1Api(cluster.api)
    extensions.create_custom_resource_definition(crd)
    try:
        def served() -> bool:
            try:
                cluster.custom.list_namespaced_custom_object(spec["group"], spec["versions"][0]["name"], "default",
                                                             spec["names"]["plural"])
            except ApiException:
                return False
            return True

        cluster.wait_until(f"CRD {crd['metadata']['name']} to be served", served, timeout=30)
        yield
    finally:
        extensions.delete_custom_resource_definition(crd["metadata"]["name"])
