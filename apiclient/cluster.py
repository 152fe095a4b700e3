"""A connection as a person's command makes it (``kubectl jobflow``, the dashboard): kubectl's flags, plain dicts,
and failures that say what to do.

The connection is :func:`apiclient.kubeconfig.connect`'s, so kubectl's rules: ``--kubeconfig``, else
``$KUBECONFIG`` (a list of files, merged), else ``~/.kube/config``; ``--context``, else the current context;
``-s/--master`` overrides the server (vcctl's flag); inside a pod without a kubeconfig, the pod's service account.
The namespace is ``-n``, else the context's, else ``default`` (:func:`apiclient.kubeconfig.default_namespace`,
read without an HTTP client, so offline commands never load one). Objects are named by their
:class:`~jobflow_core.vocabulary.api.ApiType`.

Every failure becomes a :class:`KubeError` whose message says what was tried and what to do: which server,
kubeconfig and context could not be reached; that the JobFlow CRDs are missing; the API server's own message
(``jobflows.flow.volcano.sh "x" not found``, an admission webhook's denial) otherwise.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apiclient.kubeconfig import ConnectError, connect, contexts, kubeconfig_files
from apiclient.rest import STRICT, ApiError, Rest
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB, ApiType
from jobflow_core.vocabulary.naming import jobs_of_jobflow_selector

CONNECT_TIMEOUT = 5
READ_TIMEOUT = 30


class KubeError(RuntimeError):
    """A request failed; ``status`` is the HTTP status (0 when the server was not reached)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Target:
    """Where to connect, as the user asked: each is None when not given."""

    kubeconfig: str | None = None
    context: str | None = None
    master: str | None = None

    def kubeconfig_files(self) -> list[Path]:
        return kubeconfig_files(self.kubeconfig)

    def describe(self) -> str:
        """``kubeconfig /x/config, context dev``, naming what was tried (for error messages)."""
        files = os.pathsep.join(str(path) for path in self.kubeconfig_files())
        context = self.context or contexts(self.kubeconfig)[0]
        return f"kubeconfig {files}, context {context or '(none: the kubeconfig has no current-context)'}"


class Cluster:
    """A connection to one API server; every method returns the API server's JSON as dicts."""

    def __init__(self, target: Target, *, program: str = "cli") -> None:
        self.target = target
        try:
            # One quick retry, not urllib3's default three: a command line should say "unreachable" within seconds.
            api = connect(target.kubeconfig, context=target.context, server=target.master, retries=1, program=program)
        except ConnectError as error:
            if error.problem is None:
                files = os.pathsep.join(str(path) for path in target.kubeconfig_files())
                raise KubeError(f"no kubeconfig found: {files} does not exist, and this is not a pod. Pass "
                                "--kubeconfig FILE or set KUBECONFIG to the file your cluster's admin gave you "
                                "(kubectl config view shows the one kubectl uses)") from error
            raise KubeError(f"cannot use {target.describe()}: {error.problem} (fix the file, or pick another "
                            "context with --context)") from error
        self.rest = Rest(api, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT))
        self.server = self.rest.host
        self.headers: dict[str, str] = {}

    def impersonating(self, user: str) -> Cluster:
        """The same connection, each request made as ``user`` (``Impersonate-User``): the API server applies that
        user's RBAC, and this connection's account needs only ``impersonate`` on them."""
        acting = copy.copy(self)
        # On the connection, not only on this class's requests: a watch and a container's log (Rest.lines,
        # text_lines) are made as the user too. The copy shares the pools and the credentials.
        connection = copy.copy(self.rest.api)
        connection.headers = [*self.rest.api.headers, ("Impersonate-User", user)]
        acting.rest = copy.copy(self.rest)
        acting.rest.api = connection
        return acting

    def _call(self, method: str, path: str, *, query: list[tuple[str, Any]] | None = None, body: Any = None,
              content_type: str = "application/json", timeout: float | tuple[float, float] | None = None) -> Any:
        from urllib3.exceptions import HTTPError

        from apiclient.connection import CredentialError

        try:
            return self.rest.request(method, path, query=query, body=body, content_type=content_type,
                                     headers=self.headers, timeout=timeout)
        except ApiError as error:
            raise self._api_error(error) from error
        except CredentialError as error:
            raise KubeError(f"cannot authenticate to the API server {self.server} ({self.target.describe()}): "
                            f"{error}") from error
        except (HTTPError, OSError) as error:
            reason = getattr(error, "reason", None) or error
            raise KubeError(
                f"cannot reach the API server {self.server} ({self.target.describe()}): {reason}. "
                "Is the cluster running? Otherwise choose another one with --kubeconfig or --context."
            ) from error

    def _api_error(self, error: ApiError) -> KubeError:
        body = error.status_object() or {}
        message = body.get("message") or f"{error.status} {error.reason}"
        if error.status == 404 and not body.get("details"):
            message = (f"{message}: the API server {self.server} does not serve {JOBFLOW.group} (install the "
                       "JobFlow CRDs: kubectl apply -k manifests/) or the namespace does not exist")
        elif error.status == 401:
            message = f"{message}: the credentials of {self.target.describe()} were refused by {self.server}"
        elif error.status == 403:
            message = f"{message} (ask your cluster admin for this permission, or use another --context)"
        return KubeError(message, status=error.status)

    @staticmethod
    def _path(api_type: ApiType, namespace: str | None, name: str | None = None) -> str:
        # The core group (pods) has no name and its own root, /api.
        path = f"/apis/{api_type.group}/{api_type.version}" if api_type.group else f"/api/{api_type.version}"
        if namespace is not None:
            path += f"/namespaces/{namespace}"
        return path + f"/{api_type.plural}" + (f"/{name}" if name is not None else "")

    def get(self, api_type: ApiType, namespace: str, name: str) -> dict:
        return self._call("GET", self._path(api_type, namespace, name))

    def find(self, api_type: ApiType, namespace: str, name: str) -> dict | None:
        """Like :meth:`get`, but None when the object does not exist."""
        try:
            return self.get(api_type, namespace, name)
        except KubeError as error:
            if error.status == 404 and "not found" in str(error) and f'"{name}"' in str(error):
                return None
            raise

    def list(self, api_type: ApiType, namespace: str | None, *, label_selector: str | None = None,
             limit: int | None = None) -> dict:
        """The list object (``items`` and all, or the first ``limit``); every namespace when ``namespace`` is
        None."""
        query = [*([("labelSelector", label_selector)] if label_selector else []),
                 *([("limit", limit)] if limit else [])]
        return self._call("GET", self._path(api_type, namespace), query=query or None)

    def create(self, api_type: ApiType, namespace: str, body: dict) -> dict:
        """Create an object, asking for strict field validation as kubectl does: a field the schema does not have
        is refused (``strict decoding error: unknown field ...``), never silently dropped."""
        return self._call("POST", self._path(api_type, namespace), body=body, query=STRICT)

    def merge_patch(self, api_type: ApiType, namespace: str, name: str, patch: dict) -> dict:
        """Apply a JSON merge patch (RFC 7386), as ``kubectl patch --type=merge`` does (strict, as :meth:`create`)."""
        return self._call("PATCH", self._path(api_type, namespace, name), body=patch,
                          content_type="application/merge-patch+json", query=STRICT)

    def whoami(self) -> dict:
        """Who the API server takes this connection for (a SelfSubjectReview, as ``kubectl auth whoami``): its
        ``userInfo`` (``username``, ``groups``), the impersonated user's when :meth:`impersonating`."""
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            answer = self._call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=review)
        except KubeError as error:
            if error.status != 404:
                raise
            raise KubeError(f"the API server {self.server} does not answer SelfSubjectReview "
                            "(authentication.k8s.io/v1, Kubernetes 1.28 and later), so who you are cannot be told: "
                            "use a newer cluster", status=404) from error
        return (answer.get("status") or {}).get("userInfo") or {}

    def crd(self, name: str, *, timeout: tuple[float, float] | None = None) -> dict | None:
        """The CustomResourceDefinition ``name``, or None when there is none."""
        try:
            return self._call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
                              timeout=timeout)
        except KubeError as error:
            if error.status == 404:
                return None
            raise

    def delete(self, api_type: ApiType, namespace: str, name: str) -> dict:
        return self._call("DELETE", self._path(api_type, namespace, name))

    def jobs_of(self, jobflow: dict) -> list[dict]:
        """The vcjobs a JobFlow created, found by upstream's label (the core then checks ownership by UID)."""
        meta = jobflow["metadata"]
        selector = jobs_of_jobflow_selector(namespace=meta["namespace"], jobflow=meta["name"])
        return self.list(VCJOB, meta["namespace"], label_selector=selector)["items"]

    def events(self, namespace: str, *, field_selector: str, timeout: float | None = None) -> list[dict]:
        """The Kubernetes Events of ``namespace`` that match ``field_selector`` (within ``timeout`` seconds)."""
        return self._call("GET", f"/api/v1/namespaces/{namespace}/events",
                          query=[("fieldSelector", field_selector)], timeout=timeout).get("items", [])

    def close(self) -> None:
        self.rest.api.close()
