"""The command line's only door to the API server: connect as kubectl would, speak plain dicts, explain failures.

The connection is :func:`apiclient.connect`'s, so kubectl's rules: ``--kubeconfig``, else ``$KUBECONFIG`` (a list
of files, merged), else ``~/.kube/config``; ``--context``, else the current context; ``-s/--master`` overrides the
server (vcctl's flag); inside a pod without a kubeconfig, the pod's service account. The namespace is ``-n``, else
the context's, else ``default``. Reading the context's namespace needs no Kubernetes client, so offline commands
never import it. Objects are named by their :class:`~jobflow_core.vocabulary.api.ApiType` (``JOBFLOW``, ``JOBTEMPLATE``,
``VCJOB`` of :mod:`jobflow_core.vocabulary.api`).

Every failure becomes a :class:`KubeError` whose message says what was tried and what to do: which server,
kubeconfig and context could not be reached; that the JobFlow CRDs are missing; the API server's own message
(``jobflows.flow.volcano.sh "x" not found``, an admission webhook's denial) otherwise.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from apiclient import ConnectError, connect, kubeconfig_files
from jobflow_core.models import DEFAULT_NAMESPACE
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
        context = self.context or _contexts(self)[0]
        return f"kubeconfig {files}, context {context or '(none: the kubeconfig has no current-context)'}"


def _contexts(target: Target) -> tuple[str | None, dict[str, dict]]:
    """The current context's name and every context, merged from the kubeconfig files as kubectl merges them
    (the first file to set a value wins); read without the Kubernetes client."""
    current, contexts = None, {}
    for path in target.kubeconfig_files():
        try:
            config = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(config, dict):
            continue
        current = current or config.get("current-context")
        for entry in config.get("contexts") or ():
            if isinstance(entry, dict) and entry.get("name") not in contexts:
                contexts[entry.get("name")] = entry.get("context") or {}
    return current, contexts


def default_namespace(target: Target) -> str:
    """The namespace of the chosen context, else ``default``."""
    current, contexts = _contexts(target)
    chosen = contexts.get(target.context or current)
    namespace = chosen.get("namespace") if isinstance(chosen, dict) else None
    return namespace or DEFAULT_NAMESPACE


class Cluster:
    """A connection to one API server; every method returns the API server's JSON as dicts."""

    def __init__(self, target: Target) -> None:
        from kubernetes import client

        self.target = target
        try:
            # One quick retry, not urllib3's default three: a command line should say "unreachable" within seconds.
            self.api = connect(target.kubeconfig, context=target.context, server=target.master, retries=1)
        except ConnectError as error:
            if error.problem is None:
                raise KubeError(
                    f"no kubeconfig found ({target.describe()}): pass --kubeconfig FILE or set KUBECONFIG "
                    "(for the local cluster of this repository: export KUBECONFIG=$PWD/.devcluster/kubeconfig)"
                ) from error
            raise KubeError(f"cannot use {target.describe()}: {error.problem} (fix the file, or pick another "
                            "context with --context)") from error
        self.server = self.api.configuration.host
        self.custom = client.CustomObjectsApi(self.api)

    def _call(self, fn, *args, **kwargs) -> Any:
        from kubernetes.client.rest import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, _request_timeout=(CONNECT_TIMEOUT, READ_TIMEOUT), **kwargs)
        except ApiException as error:
            raise self._api_error(error) from error
        except (HTTPError, OSError) as error:
            reason = getattr(error, "reason", None) or error
            raise KubeError(
                f"cannot reach the API server {self.server} ({self.target.describe()}): {reason}. "
                "Is the cluster running? Otherwise choose another one with --kubeconfig or --context."
            ) from error

    def _api_error(self, error) -> KubeError:
        try:
            body = json.loads(error.body or "{}")
        except ValueError:
            body = {}
        message = body.get("message") if isinstance(body, dict) else None
        message = message or f"{error.status} {error.reason}"
        if error.status == 404 and (not isinstance(body, dict) or not body.get("details")):
            message = (f"{message}: the API server {self.server} does not serve {JOBFLOW.group} (install the "
                       "JobFlow CRDs: kubectl apply -k manifests/) or the namespace does not exist")
        elif error.status == 401:
            message = f"{message}: the credentials of {self.target.describe()} were refused by {self.server}"
        elif error.status == 403:
            message = f"{message} (ask your cluster admin for this permission, or use another --context)"
        return KubeError(message, status=error.status)

    def get(self, api_type: ApiType, namespace: str, name: str) -> dict:
        return self._call(self.custom.get_namespaced_custom_object, api_type.group, api_type.version, namespace,
                          api_type.plural, name)

    def find(self, api_type: ApiType, namespace: str, name: str) -> dict | None:
        """Like :meth:`get`, but None when the object does not exist."""
        try:
            return self.get(api_type, namespace, name)
        except KubeError as error:
            if error.status == 404 and "not found" in str(error) and f'"{name}"' in str(error):
                return None
            raise

    def list(self, api_type: ApiType, namespace: str | None, *, label_selector: str | None = None) -> dict:
        """The list object (``items`` and all); every namespace when ``namespace`` is None."""
        selector = {"label_selector": label_selector} if label_selector else {}
        if namespace is None:
            return self._call(self.custom.list_cluster_custom_object, api_type.group, api_type.version,
                              api_type.plural, **selector)
        return self._call(self.custom.list_namespaced_custom_object, api_type.group, api_type.version, namespace,
                          api_type.plural, **selector)

    def create(self, api_type: ApiType, namespace: str, body: dict) -> dict:
        return self._call(self.custom.create_namespaced_custom_object, api_type.group, api_type.version, namespace,
                          api_type.plural, body)

    def merge_patch(self, api_type: ApiType, namespace: str, name: str, patch: dict) -> dict:
        """Apply a JSON merge patch (RFC 7386), as ``kubectl patch --type=merge`` does."""
        return self._call(self.custom.patch_namespaced_custom_object, api_type.group, api_type.version, namespace,
                          api_type.plural, name, patch, _content_type="application/merge-patch+json")

    def delete(self, api_type: ApiType, namespace: str, name: str) -> dict:
        return self._call(self.custom.delete_namespaced_custom_object, api_type.group, api_type.version, namespace,
                          api_type.plural, name)

    def jobs_of(self, jobflow: dict) -> list[dict]:
        """The vcjobs a JobFlow created, found by upstream's label (the core then checks ownership by UID)."""
        meta = jobflow["metadata"]
        selector = jobs_of_jobflow_selector(namespace=meta["namespace"], jobflow=meta["name"])
        return self.list(VCJOB, meta["namespace"], label_selector=selector)["items"]

    def close(self) -> None:
        self.api.close()
