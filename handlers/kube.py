"""The handler's only door to the API server: a thin adapter over the Kubernetes Python client.

It speaks plain dicts (the JSON the API server sends), so nothing is deserialised into the client's generated
models, and it turns the client's errors into three exceptions the routes map to HTTP statuses for the event bus:
``Conflict`` (409, retried), ``Unavailable`` (503, retried), anything else is a bug (500).

Reads are bounded by the flow: one GET of the JobFlow, one labelled LIST of its vcjobs, and GETs of only the
templates the planner needs right now (one LIST of the namespace's when it needs three or more).
"""

from __future__ import annotations

import json
import os
import threading
from datetime import datetime
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from apiclient import connect
from handlers import metrics
from jobflow_core.api import COMMAND, JOBFLOW, JOBTEMPLATE, VCJOB, ApiType

COMPONENT = "volcano-jobflow-handler"


class Conflict(RuntimeError):
    """Someone else changed the object first (409); the event bus should deliver the event again."""


class Rejected(RuntimeError):
    """The API server refused to create an object: invalid (400/422, e.g. Volcano's vcjob webhook said no) or
    forbidden (403, e.g. an admission policy or a terminating namespace); its message says why."""


class Unavailable(RuntimeError):
    """The API server could not be reached or is overloaded; the event bus should retry."""


def _translate(error: Exception) -> Exception:
    if isinstance(error, ApiException):
        if error.status == 409:
            return Conflict(f"conflict: {error.reason}")
        if error.status in (429, 500, 502, 503, 504) or error.status == 0:
            return Unavailable(f"API server answered {error.status} {error.reason}")
        return error
    return Unavailable(f"API server unreachable: {error}")


def _api_message(error: ApiException) -> str:
    try:
        return json.loads(error.body or "{}").get("message") or error.reason
    except ValueError:
        return str(error.body or error.reason)


class KubeApi:
    """Typed-by-convention access to the objects the reconciler reads and writes."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.custom = client.CustomObjectsApi(api)
        self.requests = 0  # API requests made, for the benchmark's "requests per event"

    def _core(self, method: str, path: str, *, namespace: str, query: list[tuple[str, str]] | None = None,
              body: dict | None = None) -> dict:
        """A core/v1 request by path, made the way ``kubernetes.dynamic`` makes its requests.

        Not ``CoreV1Api``: its first use imports some 250 pydantic models of the client (half a second of a
        cold start on Knative), and the two calls below need none of them: they send and read plain JSON.
        """
        request = self.api.param_serialize(method, path, path_params={"namespace": namespace},
                                           query_params=query or [], body=body, auth_settings=["BearerToken"],
                                           header_params={"Accept": "application/json",
                                                          "Content-Type": "application/json"})
        response = self.api.call_api(*request)
        response.read()
        metrics.API_REQUESTS.labels(method.lower(), "2xx" if 200 <= response.status <= 299
                                    else str(response.status)).inc()
        if not 200 <= response.status <= 299:
            self.api.response_deserialize(response, {})  # raises the ApiException of that status
        return json.loads(response.data)

    def _call(self, fn, *args, missing_ok: bool = False, **kwargs) -> Any:
        self.requests += 1
        verb = fn.__name__.split("_", 1)[0]  # get, list, create, replace, patch, delete
        try:
            result = fn(*args, **kwargs)
        except ApiException as error:
            metrics.API_REQUESTS.labels(verb, str(error.status)).inc()
            if missing_ok and error.status == 404:
                return None
            raise _translate(error) from error
        except (HTTPError, OSError) as error:
            metrics.API_REQUESTS.labels(verb, "unreachable").inc()
            raise _translate(error) from error
        metrics.API_REQUESTS.labels(verb, "2xx").inc()
        return result

    def _custom(self, verb: str, api_type: ApiType, namespace: str | None, *args: Any, missing_ok: bool = False,
                **kwargs: Any) -> Any:
        """``CustomObjectsApi.<verb>_namespaced_custom_object`` (or ``_cluster_`` when ``namespace`` is None)."""
        if namespace is None:
            fn = getattr(self.custom, f"{verb}_cluster_custom_object")
            return self._call(fn, api_type.group, api_type.version, api_type.plural, *args, missing_ok=missing_ok,
                              **kwargs)
        fn = getattr(self.custom, f"{verb}_namespaced_custom_object{'_status' if verb == 'replace' else ''}")
        return self._call(fn, api_type.group, api_type.version, namespace, api_type.plural, *args,
                          missing_ok=missing_ok, **kwargs)

    # JobFlows
    def get_jobflow(self, namespace: str, name: str) -> dict | None:
        return self._custom("get", JOBFLOW, namespace, name, missing_ok=True)

    def list_jobflows(self, namespace: str | None = None) -> list[dict]:
        """The JobFlows of ``namespace``, or of every namespace when it is None."""
        return self._custom("list", JOBFLOW, namespace or None).get("items", [])

    def replace_jobflow_status(self, flow: dict) -> dict:
        """PUT status with the read resourceVersion: a concurrent writer makes this fail with Conflict."""
        meta = flow["metadata"]
        return self._custom("replace", JOBFLOW, meta["namespace"], meta["name"], flow)

    # JobTemplates
    def get_jobtemplate(self, namespace: str, name: str) -> dict | None:
        return self._custom("get", JOBTEMPLATE, namespace, name, missing_ok=True)

    def list_jobtemplates(self, namespace: str) -> list[dict]:
        return self._custom("list", JOBTEMPLATE, namespace).get("items", [])

    def replace_jobtemplate_status(self, template: dict) -> dict:
        meta = template["metadata"]
        return self._custom("replace", JOBTEMPLATE, meta["namespace"], meta["name"], template)

    # vcjobs
    def list_vcjobs(self, namespace: str | None, label_selector: str) -> list[dict]:
        """The vcjobs of ``namespace`` (every namespace when None) that match ``label_selector``."""
        return self._custom("list", VCJOB, namespace, label_selector=label_selector).get("items", [])

    def get_vcjob(self, namespace: str, name: str) -> dict | None:
        return self._custom("get", VCJOB, namespace, name, missing_ok=True)

    def create_vcjob(self, body: dict) -> bool:
        """True when created, False when a vcjob of that name already exists (the caller checks whose it is).

        Raises Rejected with the API server's message when the vcjob is refused as invalid."""
        try:
            self._custom("create", VCJOB, body["metadata"]["namespace"], body)
        except Conflict:
            return False
        except ApiException as error:
            # 400/422: invalid (Volcano's webhook); 403: forbidden by an admission policy (a
            # ValidatingAdmissionPolicy, Gatekeeper, Kyverno), a quota, a terminating namespace, or our RBAC.
            if error.status in (400, 403, 422):
                raise Rejected(_api_message(error)) from error
            raise
        return True

    def create_command(self, body: dict) -> None:
        """Create a Volcano Command; one of that name existing already is as good (its name says what it does)."""
        try:
            self._custom("create", COMMAND, body["metadata"]["namespace"], body)
        except Conflict:
            return

    def remove_finalizer(self, job: dict, finalizer: str) -> None:
        """Take ``finalizer`` off a vcjob, as a JSON patch that first tests the list is still what we read."""
        meta = job["metadata"]
        current = meta.get("finalizers") or []
        if finalizer not in current:
            return
        patch = [{"op": "test", "path": "/metadata/finalizers", "value": current},
                 {"op": "replace", "path": "/metadata/finalizers", "value": [f for f in current if f != finalizer]}]
        try:
            self._custom("patch", VCJOB, meta["namespace"], meta["name"], patch, missing_ok=True,
                         _content_type="application/json-patch+json")
        except ApiException as error:
            if error.status == 422:  # the test op failed: someone changed the finalizers since we read them
                raise Conflict(f"finalizers of vcjob {meta['name']} changed") from error
            raise

    def delete_vcjob(self, namespace: str, name: str) -> None:
        self._custom("delete", VCJOB, namespace, name, propagation_policy="Background", missing_ok=True)

    # Pods (for the HTTP and TCP probes)
    def list_pods(self, namespace: str, label_selector: str) -> list[dict]:
        listing = self._call(self._core, "GET", "/api/v1/namespaces/{namespace}/pods", namespace=namespace,
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
        self._call(self._core, "POST", "/api/v1/namespaces/{namespace}/events", namespace=meta["namespace"],
                   body=body)


_shared: client.ApiClient | None = None
_shared_lock = threading.Lock()


def shared_client() -> client.ApiClient:
    """One API client per process, made on first use (not at import: that would slow the cold start)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = connect()
        return _shared
