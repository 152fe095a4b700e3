"""How every program here finds its cluster: the one way to connect to the Kubernetes API server.

The handler, the event source, the command line, the dashboard, the demo and the tests all call :func:`connect`,
and so find their cluster by the same rules, kubectl's:

1. the kubeconfig file(s) passed in, else ``$KUBECONFIG`` (a list of files separated by ``:``, merged: the first
   file to set a value wins), else ``~/.kube/config``; only files that exist count;
2. with none of those, inside a pod (``KUBERNETES_SERVICE_HOST`` set) and no kubeconfig asked for explicitly: the
   pod's service account, as Knative Serving and a Deployment run the handler and the event source;
3. otherwise :class:`ConnectError`, saying what was tried.

``context`` picks a kubeconfig context other than the current one, ``server`` overrides the server URL (vcctl's
``--master``), ``retries`` bounds urllib3's retries (a command line should say "unreachable" within seconds), and
``program`` names the sender in each request's ``User-Agent`` (:func:`apiclient.version.user_agent`).

:func:`contexts` and :func:`default_namespace` read the kubeconfig files without the Kubernetes client, so a
command that works offline never imports it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from apiclient.version import user_agent
from jobflow_core.models import DEFAULT_NAMESPACE

if TYPE_CHECKING:
    from kubernetes import client
    from kubernetes.client import ApiClient as Connection  # noqa: F401  (what the other programs name it)

DEFAULT_KUBECONFIG = "~/.kube/config"


class ConnectError(RuntimeError):
    """No usable configuration: the message names the kubeconfig files and context tried, and what to do.

    ``problem`` is what was wrong with the kubeconfig that was found, or None when none was found at all."""

    def __init__(self, message: str, *, problem: str | None = None) -> None:
        super().__init__(message)
        self.problem = problem


def kubeconfig_files(kubeconfig: str | os.PathLike[str] | None = None) -> list[Path]:
    """The kubeconfig files to read, in kubectl's order (rule 1 of the module docstring), existing or not."""
    listed = str(kubeconfig or os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG)
    return [Path(part).expanduser() for part in listed.split(os.pathsep) if part]


def contexts(kubeconfig: str | os.PathLike[str] | None = None) -> tuple[str | None, dict[str, dict]]:
    """The current context's name and every context, merged from the kubeconfig files as kubectl merges them (the
    first file to set a value wins)."""
    current, found = None, {}
    for path in kubeconfig_files(kubeconfig):
        try:
            config = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        if not isinstance(config, dict):
            continue
        current = current or config.get("current-context")
        for entry in config.get("contexts") or ():
            if isinstance(entry, dict) and entry.get("name") not in found:
                found[entry.get("name")] = entry.get("context") or {}
    return current, found


def default_namespace(kubeconfig: str | os.PathLike[str] | None = None, *, context: str | None = None) -> str:
    """The namespace of ``context`` (else the current context), else ``default``, as kubectl picks it."""
    current, found = contexts(kubeconfig)
    chosen = found.get(context or current)
    namespace = chosen.get("namespace") if isinstance(chosen, dict) else None
    return namespace or DEFAULT_NAMESPACE


def connect(kubeconfig: str | os.PathLike[str] | None = None, *, context: str | None = None,
            server: str | None = None, retries: int | None = None, program: str = "client") -> client.ApiClient:
    """An API client configured by the rules of the module docstring."""
    from kubernetes import client, config  # here, so that kubeconfig_files alone never loads the client

    configuration = client.Configuration()
    files = [path for path in kubeconfig_files(kubeconfig) if path.exists()]
    tried = f"kubeconfig {os.pathsep.join(map(str, kubeconfig_files(kubeconfig)))}"
    try:
        if files:
            config.load_kube_config(config_file=os.pathsep.join(map(str, files)), context=context,
                                    client_configuration=configuration, persist_config=False)
        elif os.environ.get("KUBERNETES_SERVICE_HOST") and kubeconfig is None:
            config.load_incluster_config(client_configuration=configuration)
        else:
            raise ConnectError(
                f"no kubeconfig found ({tried}) and not running in a pod: pass a kubeconfig or set KUBECONFIG "
                "(for the local cluster of this repository: export KUBECONFIG=$PWD/.devcluster/kubeconfig)")
    except config.ConfigException as error:
        where = f"{tried}, context {context}" if context else tried
        raise ConnectError(f"cannot use {where}: {error} (fix the file, or pick another context)",
                           problem=str(error)) from error
    if server:
        configuration.host = server
    if retries is not None:
        configuration.retries = retries
    api = client.ApiClient(configuration)
    api.user_agent = user_agent(program)
    return api
