"""Which cluster a dashboard shows, as every page's header says it: the kubeconfig context and the API server's
host (or ``in-cluster`` and the ServiceAccount it reads as), and the namespaces it serves.

Someone with several contexts (a dev cluster, staging, production) keeps dashboards open side by side; a Stop
pressed in the wrong one stops the wrong JobFlow. So the header names the cluster in words, on every page, and the
server prints the same words when it starts. What it says is decided once, when the server starts
(:func:`describe`), from the connection the watches and the actions use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from apiclient.cluster import KubeError
from apiclient.kubeconfig import contexts

if TYPE_CHECKING:
    from apiclient.cluster import Cluster

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class Header:
    """What the header says; empty (the tests' in-memory apps) when nothing is known."""

    context: str = ""
    """The kubeconfig context, or ``in-cluster (ServiceAccount NS/NAME)``."""
    server: str = ""
    """The API server's host and port."""
    user: str = ""
    """Who the API server takes the dashboard for (empty when it would not say)."""
    namespaces: str = ""
    """``namespace NS`` or ``all namespaces``."""
    in_cluster: bool = False
    """Read as a pod's ServiceAccount (no person's kubeconfig): the logs pane is then off unless turned on."""

    @property
    def line(self) -> str:
        """The header in one line, as the server prints it when it starts."""
        parts = [self.context, f"server {self.server}" if self.server else "", self.namespaces]
        return "; ".join(part for part in parts if part)


def header(*, context: str | None, server: str, user: str | None, namespace: str | None,
           in_cluster: bool) -> Header:
    """The header of a dashboard connected to ``server`` (a URL) as ``user``, serving ``namespace`` (None: all)."""
    if in_cluster:
        account = _service_account(user)
        shown = f"in-cluster ({account})" if account else "in-cluster"
    else:
        shown = context or "(no context)"
    host = urlsplit(server).netloc or server
    return Header(context=shown, server=host, user=user or "",
                  namespaces=f"namespace {namespace}" if namespace else "all namespaces", in_cluster=in_cluster)


def describe(cluster: Cluster, namespace: str | None) -> Header:
    """The header of a dashboard using ``cluster``: one SelfSubjectReview says whom it reads (and acts) as."""
    try:
        user = cluster.whoami().get("username")
    except KubeError:
        user = None  # a cluster that would not say: the header names the context and the server still
    target = cluster.target
    # As apiclient.kubeconfig.connect decides it: no kubeconfig file, and a pod's environment.
    in_cluster = (target.kubeconfig is None and not any(path.exists() for path in target.kubeconfig_files())
                  and bool(os.environ.get("KUBERNETES_SERVICE_HOST")))
    return header(context=target.context or contexts(target.kubeconfig)[0], server=cluster.server, user=user,
                  namespace=namespace, in_cluster=in_cluster)


def _service_account(user: str | None) -> str | None:
    """``ServiceAccount NS/NAME`` for ``system:serviceaccount:NS:NAME``."""
    if not user or not user.startswith(SERVICE_ACCOUNT_PREFIX):
        return user
    namespace, _, name = user.removeprefix(SERVICE_ACCOUNT_PREFIX).partition(":")
    return f"ServiceAccount {namespace}/{name}"
