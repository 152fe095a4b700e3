"""The handler's only door to the API server: every read and write it makes, by name, over the client layer.

Requests and their errors are :mod:`apiclient.rest`'s: plain dicts in and out, and one table (``API_ERRORS``) that
says what an error means for the caller (``Conflict``, ``Exists``, ``Gone``, ``Rejected``, ``Unavailable``, or the
``ApiError`` itself). Each request is counted in ``jobflow_handler_api_requests_total``.

Reads are bounded by the flow: one GET of the JobFlow, one labelled LIST of its vcjobs, and GETs of only the
templates the planner needs right now (one LIST of the namespace's when it needs three or more); none of these
when the event carries a signed snapshot (:mod:`jobflow_core.routing.snapshots`).
"""

from __future__ import annotations

import os
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any

from apiclient.kubeconfig import connect
from apiclient.rest import STRICT, Exists, Rest
from handlers import metrics
from jobflow_core.vocabulary.api import COMMAND, JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, QUEUE, VCJOB, ApiType

if TYPE_CHECKING:
    from apiclient.connection import Connection

COMPONENT = "volcano-jobflow-handler"


class KubeApi:
    """Typed-by-convention access to the objects the reconciler reads and writes."""

    def __init__(self, api: Connection) -> None:
        self.api = api
        self.rest = Rest(api, answered=lambda verb, outcome: metrics.API_REQUESTS.labels(verb, outcome).inc())

    @property
    def requests(self) -> int:
        """API requests made, for the benchmark's "requests per event"."""
        return self.rest.requests

    def _call(self, verb: str, method: str, path: str, path_params: dict[str, str], **kwargs: Any) -> Any:
        return self.rest.call(verb, method, path, path_params, **kwargs)

    def _custom(self, verb: str, api_type: ApiType, namespace: str | None, name: str | None = None,
                body: Any = None, **kwargs: Any) -> Any:
        return self.rest.custom(verb, api_type, namespace, name, body, **kwargs)

    # JobFlows
    def get_jobflow(self, namespace: str, name: str) -> dict | None:
        return self._custom("get", JOBFLOW, namespace, name, missing_ok=True)

    def list_jobflows(self, namespace: str | None = None) -> list[dict]:
        """The JobFlows of ``namespace``, or of every namespace when it is None."""
        return self._custom("list", JOBFLOW, namespace or None).get("items", [])

    def replace_jobflow_status(self, flow: dict) -> dict:
        """PUT status with the read resourceVersion: a concurrent writer makes this fail with Conflict."""
        meta = flow["metadata"]
        return self._custom("replace", JOBFLOW, meta["namespace"], meta["name"], flow, status=True)

    def list_runs(self, namespace: str, label_selector: str) -> list[dict]:
        """The JobFlows of ``namespace`` that match ``label_selector`` (a JobFlowTemplate's runs, a JobFlow's
        children)."""
        return self._custom("list", JOBFLOW, namespace, query=[("labelSelector", label_selector)]).get("items", [])

    def create_jobflow(self, body: dict) -> dict:
        """Create a JobFlow (a run); raises Exists when one of that name is there already, Rejected when it holds a
        field the CRD does not have (strict field validation: refused, never silently dropped)."""
        return self._custom("create", JOBFLOW, body["metadata"]["namespace"], body=body, query=STRICT)

    def patch_jobflow(self, namespace: str, name: str, patch: dict) -> None:
        """Merge-patch a JobFlow (a child its parent stops, suspends, resumes or asks to rerun); gone already is as
        good (its parent records what became of it)."""
        self._custom("patch", JOBFLOW, namespace, name, patch, missing_ok=True,
                     content_type="application/merge-patch+json")

    def label_jobflow(self, namespace: str, name: str, labels: dict[str, str | None], *,
                      resource_version: str) -> dict:
        """Merge-patch a JobFlow's labels (None removes one) if it is still at ``resource_version`` (else Conflict):
        the labels by which another JobFlow's end finds it (:mod:`jobflow_core.dag.awaits`). Returns it as patched."""
        patch = {"metadata": {"resourceVersion": resource_version, "labels": labels}}
        return self._custom("patch", JOBFLOW, namespace, name, patch, content_type="application/merge-patch+json")

    def delete_jobflow(self, namespace: str, name: str) -> None:
        """Delete a JobFlow and, through their owner references, its vcjobs; gone already is as good."""
        self._custom("delete", JOBFLOW, namespace, name, missing_ok=True, query=[("propagationPolicy", "Background")])

    # JobFlowTemplates
    def get_jobflowtemplate(self, namespace: str, name: str) -> dict | None:
        return self._custom("get", JOBFLOWTEMPLATE, namespace, name, missing_ok=True)

    def list_jobflowtemplates(self, namespace: str | None = None) -> list[dict]:
        """The JobFlowTemplates of ``namespace``, or of every namespace when it is None."""
        return self._custom("list", JOBFLOWTEMPLATE, namespace or None).get("items", [])

    def replace_jobflowtemplate_status(self, template: dict) -> dict:
        """PUT status with the read resourceVersion: a concurrent writer makes this fail with Conflict."""
        meta = template["metadata"]
        return self._custom("replace", JOBFLOWTEMPLATE, meta["namespace"], meta["name"], template, status=True)

    # JobTemplates
    def get_jobtemplate(self, namespace: str, name: str) -> dict | None:
        return self._custom("get", JOBTEMPLATE, namespace, name, missing_ok=True)

    def list_jobtemplates(self, namespace: str) -> list[dict]:
        return self._custom("list", JOBTEMPLATE, namespace).get("items", [])

    def replace_jobtemplate_status(self, template: dict) -> dict:
        meta = template["metadata"]
        return self._custom("replace", JOBTEMPLATE, meta["namespace"], meta["name"], template, status=True)

    # vcjobs
    def list_vcjobs(self, namespace: str | None, label_selector: str) -> list[dict]:
        """The vcjobs of ``namespace`` (every namespace when None) that match ``label_selector``."""
        return self._custom("list", VCJOB, namespace, query=[("labelSelector", label_selector)]).get("items", [])

    def get_vcjob(self, namespace: str, name: str) -> dict | None:
        return self._custom("get", VCJOB, namespace, name, missing_ok=True)

    def create_vcjob(self, body: dict) -> None:
        """Create a vcjob; raises Exists when one of that name is there already (the caller checks whose it is),
        Rejected with the API server's message when it is refused (a field Volcano's CRD does not have included:
        strict field validation)."""
        self._custom("create", VCJOB, body["metadata"]["namespace"], body=body, query=STRICT)

    def create_command(self, body: dict) -> None:
        """Create a Volcano Command; one of that name existing already is as good (its name says what it does)."""
        try:
            self._custom("create", COMMAND, body["metadata"]["namespace"], body=body)
        except Exists:
            return

    def remove_finalizer(self, job: dict, finalizer: str) -> None:
        """Take ``finalizer`` off a vcjob (or a child JobFlow, by its ``kind``), as a JSON patch that first tests the
        list is still what we read (else Conflict)."""
        meta = job["metadata"]
        current = meta.get("finalizers") or []
        if finalizer not in current:
            return
        patch = [{"op": "test", "path": "/metadata/finalizers", "value": current},
                 {"op": "replace", "path": "/metadata/finalizers", "value": [f for f in current if f != finalizer]}]
        api_type = JOBFLOW if job.get("kind") == JOBFLOW.kind else VCJOB
        self._custom("patch", api_type, meta["namespace"], meta["name"], patch, missing_ok=True,
                     content_type="application/json-patch+json")

    def delete_vcjob(self, namespace: str, name: str) -> None:
        self._custom("delete", VCJOB, namespace, name, missing_ok=True, query=[("propagationPolicy", "Background")])

    # What a queue can hold (jobflow_core.queueing.line): reads only, each None when missing
    def get_queue(self, name: str) -> dict | None:
        return self._custom("get", QUEUE, None, name, missing_ok=True)

    def list_nodes(self) -> list[dict]:
        return self._call("list", "GET", "/api/v1/nodes", {}).get("items", [])

    def get_priority_class(self, name: str) -> dict | None:
        return self._call("get", "GET", "/apis/scheduling.k8s.io/v1/priorityclasses/{name}", {"name": name},
                          missing_ok=True)

    # The memoization cache: one ConfigMap per namespace (jobflow_core.flows.memo)
    def get_configmap(self, namespace: str, name: str) -> dict | None:
        return self._call("get", "GET", "/api/v1/namespaces/{namespace}/configmaps/{name}",
                          {"namespace": namespace, "name": name}, missing_ok=True)

    def create_configmap(self, body: dict) -> None:
        """Create a ConfigMap; raises Exists when one of that name is there already."""
        self._call("create", "POST", "/api/v1/namespaces/{namespace}/configmaps",
                   {"namespace": body["metadata"]["namespace"]}, body=body)

    def replace_configmap(self, body: dict) -> None:
        """PUT with the read resourceVersion: a concurrent writer makes this fail with Conflict."""
        meta = body["metadata"]
        self._call("replace", "PUT", "/api/v1/namespaces/{namespace}/configmaps/{name}",
                   {"namespace": meta["namespace"], "name": meta["name"]}, body=body)

    # Pods (for the HTTP and TCP probes)
    def list_pods(self, namespace: str, label_selector: str) -> list[dict]:
        listing = self._call("list", "GET", "/api/v1/namespaces/{namespace}/pods", {"namespace": namespace},
                             query=[("labelSelector", label_selector)])
        return listing.get("items", [])

    # Kubernetes Events
    def record_event(self, involved: dict, *, type_: str, reason: str, message: str, now: datetime) -> None:
        meta = involved["metadata"]
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": involved.get("apiVersion", JOBFLOW.api_version),
                               "kind": involved.get("kind", JOBFLOW.kind), "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "type": type_, "reason": reason, "message": message[:1024],
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT, "reportingInstance": os.environ.get("HOSTNAME", COMPONENT),
        }
        self._call("record", "POST", "/api/v1/namespaces/{namespace}/events", {"namespace": meta["namespace"]},
                   body=body)


class WebhookApi(KubeApi):
    """The validating webhook's reads beyond the handler's (ClusterRole ``jobflow-admission``, not the handler's)."""

    def get_crd(self, name: str) -> dict | None:
        """The CustomResourceDefinition ``name`` (Volcano's vcjob CRD, for its schema), None when there is none."""
        return self._call("get", "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
                          {"name": name}, missing_ok=True)


_shared: Connection | None = None
_shared_lock = threading.Lock()


def shared_client() -> Connection:
    """One API client per process, made on first use (not at import: that would slow the cold start)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = connect(program="handler")
        return _shared
