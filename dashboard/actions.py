"""The dashboard's doors to the API server: the actions (as the command line does them) and a JobFlow's events.

An action runs with the dashboard's credentials, the user's own kubeconfig in local mode; behind an authenticating
proxy, it impersonates the user the proxy names (``Impersonate-User``), so the API server applies that user's RBAC,
and the dashboard's ServiceAccount needs only ``impersonate`` on the users (or groups) an admin allows
(docs/dashboard.md).
"""

from __future__ import annotations

import copy
from typing import Any

from dashboard.app import Act, ActionError
from dashboard.pages import EventsReader
from kubectl_jobflow import control
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.kube import Cluster, KubeError

EVENTS_TIMEOUT = 5


def actor(cluster: Cluster) -> Act:
    def act(action: str, namespace: str, name: str, flows: list[str], user: str | None) -> str:
        acting = cluster if user is None else _impersonating(cluster, user)
        try:
            if action == "retry":
                return control.request_retry(acting, namespace, name, flows)
            return control.set_suspend(acting, namespace, name, action == "suspend")
        except CommandError as error:
            raise ActionError(str(error), status=409) from error
        except KubeError as error:
            raise ActionError(str(error), status=error.status if 400 <= error.status < 500 else 502) from error
    return act


def _impersonating(cluster: Cluster, user: str) -> Cluster:
    from kubernetes import client

    acting = copy.copy(cluster)
    acting.api = client.ApiClient(cluster.api.configuration, header_name="Impersonate-User", header_value=user)
    acting.custom = client.CustomObjectsApi(acting.api)
    return acting


def events_reader(api) -> EventsReader:
    """Reads the Kubernetes events about one JobFlow (``involvedObject``), as plain dicts."""
    from kubernetes import client

    core = client.CoreV1Api(api)

    def read(namespace: str, name: str, uid: str) -> list[dict[str, Any]]:
        # By UID: a JobFlow deleted and created again under the same name starts with no events.
        listing = core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.kind=JobFlow,involvedObject.name={name},"
                                      f"involvedObject.uid={uid}",
            _request_timeout=EVENTS_TIMEOUT)
        return [api.sanitize_for_serialization(event) for event in listing.items]
    return read
