"""The handler's only door to the API server: a thin adapter over the Kubernetes Python client.

It speaks plain dicts (the JSON the API server sends), so nothing is deserialised into the client's generated
models, and it turns the client's errors into a few outcomes by one table, :data:`API_ERRORS` (in the manner of
kopf's errors module: what a caller may do next, not which HTTP status came back):

=====================================================================  ===============  =========================
the API server answered                                                outcome          what the caller does
=====================================================================  ===============  =========================
409 to a create (AlreadyExists)                                        ``Exists``       reads the holder, re-plans
409 to an update (Conflict), or a JSON patch's test op failed (422)    ``Conflict``     re-plans (a JobFlow), or
                                                                                        re-applies its change on
                                                                                        a fresh read (the rest)
404, or 403 with the cause NamespaceTerminating                        ``Gone``         nothing: it went
400, 403 or 422 to a create (a webhook, an admission policy, RBAC)    ``Rejected``     tells the planner why
429, 5xx, no answer                                                    ``Unavailable``  answers 503: retry later
anything else                                                          the ApiException answers its 4xx (or 502)
=====================================================================  ===============  =========================

Reads are bounded by the flow: one GET of the JobFlow, one labelled LIST of its vcjobs, and GETs of only the
templates the planner needs right now (one LIST of the namespace's when it needs three or more); none of these
when the event carries a signed snapshot (:mod:`jobflow_core.routing.snapshots`).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from apiclient import connect
from handlers import metrics
from jobflow_core.vocabulary.api import COMMAND, JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, QUEUE, VCJOB, ApiType

COMPONENT = "volcano-jobflow-handler"


class Conflict(RuntimeError):
    """Someone else changed the object first: a lost write race (409, or a failed JSON patch test)."""


class Exists(RuntimeError):
    """An object of that name exists already (409 AlreadyExists to a create)."""


class Gone(RuntimeError):
    """The object, or its whole namespace, is gone or going: there is nothing left to do with it."""


class Rejected(RuntimeError):
    """The API server refused to create an object: invalid (400/422, e.g. Volcano's vcjob webhook said no) or
    forbidden (403, e.g. an admission policy or our RBAC); its message says why."""


class Unavailable(RuntimeError):
    """The API server could not be reached or is overloaded; the event bus should retry."""


def _causes(error: ApiException) -> list[dict]:
    try:
        causes = (json.loads(error.body or "{}").get("details") or {}).get("causes") or []
    except (ValueError, AttributeError):
        return []
    return [cause for cause in causes if isinstance(cause, dict)]


def _api_message(error: ApiException) -> str:
    try:
        return json.loads(error.body or "{}").get("message") or error.reason
    except ValueError:
        return str(error.body or error.reason)


@dataclass(frozen=True)
class ErrorRule:
    when: str
    holds: Callable[[ApiException, str], bool]
    """Given the error and the verb (get, list, create, replace, patch, delete)."""
    outcome: Callable[[ApiException], Exception] | None
    """The exception to raise; None: let the ApiException through."""


API_ERRORS: tuple[ErrorRule, ...] = (
    ErrorRule("409 to a create: a vcjob (or Command) of that name exists", lambda e, verb: e.status == 409
              and verb == "create", lambda e: Exists(f"already exists: {_api_message(e)}")),
    ErrorRule("409 to an update: someone wrote first", lambda e, verb: e.status == 409,
              lambda e: Conflict(f"conflict: {e.reason}")),
    ErrorRule("a JSON patch's test failed: the object changed since it was read", lambda e, verb: e.status == 422
              and verb == "patch", lambda e: Conflict(f"conflict: {_api_message(e)}")),
    ErrorRule("404: the object is gone", lambda e, verb: e.status == 404, lambda e: Gone(_api_message(e))),
    ErrorRule("403 NamespaceTerminating: its namespace is going", lambda e, verb: e.status == 403
              and any(c.get("reason") == "NamespaceTerminating" for c in _causes(e)), lambda e: Gone(_api_message(e))),
    ErrorRule("400, 403 or 422 to a create: refused (a webhook, an admission policy, RBAC)",
              lambda e, verb: verb == "create" and e.status in (400, 403, 422), lambda e: Rejected(_api_message(e))),
    ErrorRule("429 or 5xx: the API server is overloaded or failing", lambda e, verb: e.status in (0, 429)
              or 500 <= (e.status or 0) <= 599, lambda e: Unavailable(f"API server answered {e.status} {e.reason}")),
    ErrorRule("anything else (e.g. 403 to a read: our RBAC)", lambda e, verb: True, None),
)
"""The table of the module docstring, first rule that holds wins."""


def translate(error: ApiException, verb: str) -> Exception:
    """What the API server's ``error`` to a ``verb`` request means for the caller (:data:`API_ERRORS`)."""
    rule = next(rule for rule in API_ERRORS if rule.holds(error, verb))
    return rule.outcome(error) if rule.outcome else error


class KubeApi:
    """Typed-by-convention access to the objects the reconciler reads and writes."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.requests = 0  # API requests made, for the benchmark's "requests per event"

    def _request(self, method: str, path: str, path_params: dict[str, str], *,
                 query: list[tuple[str, Any]] | None = None, body: Any = None,
                 content_type: str = "application/json") -> dict:
        """One request by path, made the way ``kubernetes.dynamic`` makes its requests.

        Not ``CustomObjectsApi`` or ``CoreV1Api``: their first use imports modules and models of the client (about
        50 ms for the one, half a second for the other, of a cold start on Knative) that plain JSON in and out does
        not need. An answer outside 2xx raises the client's ApiException, as theirs do.
        """
        request = self.api.param_serialize(method, path, path_params=path_params, query_params=query or [],
                                           body=body, auth_settings=["BearerToken"],
                                           header_params={"Accept": "application/json",
                                                          "Content-Type": content_type})
        response = self.api.call_api(*request)
        response.read()
        if not 200 <= response.status <= 299:
            self.api.response_deserialize(response, {})  # raises the ApiException of that status
        return json.loads(response.data) if response.data else {}

    def _call(self, verb: str, method: str, path: str, path_params: dict[str, str], *, missing_ok: bool = False,
              **kwargs: Any) -> Any:
        """:meth:`_request`, counted, its errors translated by :data:`API_ERRORS`; ``verb`` is the table's (get,
        list, create, replace, patch, delete; ``record`` for a Kubernetes Event, which no row of a create concerns)."""
        self.requests += 1
        try:
            result = self._request(method, path, path_params, **kwargs)
        except ApiException as error:
            metrics.API_REQUESTS.labels(verb, str(error.status)).inc()
            outcome = translate(error, verb)
            if missing_ok and isinstance(outcome, Gone) and error.status == 404:
                return None
            raise outcome from error
        except (HTTPError, OSError) as error:
            metrics.API_REQUESTS.labels(verb, "unreachable").inc()
            raise Unavailable(f"API server unreachable: {error}") from error
        metrics.API_REQUESTS.labels(verb, "2xx").inc()
        return result

    def _custom(self, verb: str, api_type: ApiType, namespace: str | None, name: str | None = None,
                body: Any = None, *, missing_ok: bool = False, status: bool = False,
                query: list[tuple[str, Any]] | None = None, content_type: str = "application/json") -> Any:
        """A request about objects of ``api_type``: of ``namespace`` (every namespace when it is None), the one
        called ``name`` (its status subresource when ``status``)."""
        path, params = f"/apis/{api_type.group}/{api_type.version}", {}
        if namespace is not None:
            path, params["namespace"] = path + "/namespaces/{namespace}", namespace
        path += f"/{api_type.plural}"
        if name is not None:
            path, params["name"] = path + "/{name}" + ("/status" if status else ""), name
        return self._call(verb, _METHODS[verb], path, params, missing_ok=missing_ok, query=query, body=body,
                          content_type=content_type)

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
        """The JobFlows of ``namespace`` that match ``label_selector`` (a JobFlowTemplate's runs)."""
        return self._custom("list", JOBFLOW, namespace, query=[("labelSelector", label_selector)]).get("items", [])

    def create_jobflow(self, body: dict) -> dict:
        """Create a JobFlow (a run); raises Exists when one of that name is there already."""
        return self._custom("create", JOBFLOW, body["metadata"]["namespace"], body=body)

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
        Rejected with the API server's message when it is refused."""
        self._custom("create", VCJOB, body["metadata"]["namespace"], body=body)

    def create_command(self, body: dict) -> None:
        """Create a Volcano Command; one of that name existing already is as good (its name says what it does)."""
        try:
            self._custom("create", COMMAND, body["metadata"]["namespace"], body=body)
        except Exists:
            return

    def remove_finalizer(self, job: dict, finalizer: str) -> None:
        """Take ``finalizer`` off a vcjob, as a JSON patch that first tests the list is still what we read (else
        Conflict)."""
        meta = job["metadata"]
        current = meta.get("finalizers") or []
        if finalizer not in current:
            return
        patch = [{"op": "test", "path": "/metadata/finalizers", "value": current},
                 {"op": "replace", "path": "/metadata/finalizers", "value": [f for f in current if f != finalizer]}]
        self._custom("patch", VCJOB, meta["namespace"], meta["name"], patch, missing_ok=True,
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


_METHODS = {"get": "GET", "list": "GET", "create": "POST", "replace": "PUT", "patch": "PATCH",
            "delete": "DELETE"}
"""The HTTP method of each verb of :data:`API_ERRORS`."""

_shared: client.ApiClient | None = None
_shared_lock = threading.Lock()


def shared_client() -> client.ApiClient:
    """One API client per process, made on first use (not at import: that would slow the cold start)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = connect()
        return _shared
