"""The dashboard's doors to the API server: the actions (:mod:`apiclient.steering`, as the command line makes them)
and a JobFlow's events.

An action runs with the dashboard's credentials, the user's own kubeconfig in local mode; behind an authenticating
proxy, it impersonates the user the proxy names (``Impersonate-User``), so the API server applies that user's RBAC,
and the dashboard's ServiceAccount needs only ``impersonate`` on the users (or groups) an admin allows
(docs/dashboard.md).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from apiclient.cluster import Cluster, KubeError
from apiclient.steering import (Refused, answer_gate, request_retry, set_shutdown, set_suspend, set_template_suspend,
                                start_run)
from dashboard.app import Act, ActionError, TemplateAct
from dashboard.pages import EventsReader
from jobflow_core.models import ApprovalDecision, Shutdown

EVENTS_TIMEOUT = 5
SHUTDOWNS = {"stop": Shutdown.STOP, "terminate": Shutdown.TERMINATE}
DECISIONS = {"approve": ApprovalDecision.APPROVED, "reject": ApprovalDecision.REJECTED}


def actor(cluster: Cluster) -> Act:
    def act(action: str, namespace: str, name: str, flows: list[str], user: str | None, message: str | None) -> str:
        # Impersonated, the user's own answer: a SelfSubjectReview names the impersonated user, whom the admission
        # webhook then sees as the request's user.
        acting = cluster if user is None else cluster.impersonating(user)
        try:
            if action == "retry":
                return request_retry(acting, namespace, name, flows)
            if action in SHUTDOWNS:
                return set_shutdown(acting, namespace, name, SHUTDOWNS[action])
            if action in DECISIONS:
                return answer_gate(acting, namespace, name, flows[0], DECISIONS[action], message)
            return set_suspend(acting, namespace, name, action == "suspend")
        except Refused as error:
            raise ActionError(str(error), status=409) from error
        except KubeError as error:
            raise ActionError(str(error), status=error.status if 400 <= error.status < 500 else 502) from error
    return act


def template_actor(cluster: Cluster) -> TemplateAct:
    """Run now, suspend and resume a JobFlowTemplate, as ``kubectl jobflow run NAME`` and ``suspend|resume
    jft/NAME`` do."""
    def act(action: str, namespace: str, name: str, parameters: dict[str, str], user: str | None) -> str:
        acting = cluster if user is None else cluster.impersonating(user)
        now = datetime.now(UTC)
        try:
            if action == "run":
                started = start_run(acting, namespace, name, parameters, now=now)
                return f"Started run: {namespace}/{started} (JobFlowTemplate {name})"
            return set_template_suspend(acting, namespace, name, action == "suspend", now=now)
        except Refused as error:
            raise ActionError(str(error), status=409) from error
        except KubeError as error:
            raise ActionError(str(error), status=error.status if 400 <= error.status < 500 else 502) from error
    return act


def events_reader(cluster: Cluster) -> EventsReader:
    """Reads the Kubernetes events about one JobFlow (``involvedObject``), as plain dicts."""

    def read(namespace: str, name: str, uid: str) -> list[dict[str, Any]]:
        # By UID: a JobFlow deleted and created again under the same name starts with no events.
        return cluster.events(namespace, field_selector=f"involvedObject.kind=JobFlow,involvedObject.name={name},"
                                                        f"involvedObject.uid={uid}", timeout=EVENTS_TIMEOUT)
    return read
