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

:func:`contexts` and :func:`default_namespace` read the kubeconfig files without :mod:`apiclient.connection`, so a
command that works offline never loads an HTTP client.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

import yaml

from apiclient.version import user_agent
from jobflow_core.models import DEFAULT_NAMESPACE

if TYPE_CHECKING:
    from apiclient.connection import Connection

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
    first file to set a value wins); a file that cannot be read or is no kubeconfig is passed over."""
    config = merged(kubeconfig, lenient=True)
    return config["current-context"], config["contexts"]


def default_namespace(kubeconfig: str | os.PathLike[str] | None = None, *, context: str | None = None) -> str:
    """The namespace of ``context`` (else the current context), else ``default``, as kubectl picks it."""
    current, found = contexts(kubeconfig)
    chosen = found.get(context or current)
    namespace = chosen.get("namespace") if isinstance(chosen, dict) else None
    return namespace or DEFAULT_NAMESPACE


IN_CLUSTER: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
"""Where a pod finds its service account's token and the cluster's CA."""


def merged(kubeconfig: str | os.PathLike[str] | None = None, *, lenient: bool = False) -> dict[str, Any]:
    """The kubeconfig files merged as kubectl merges them: each named cluster, user and context from the first file
    that has it, the first ``current-context``; paths made absolute against the file that names them. A file that
    cannot be read, or is no kubeconfig, is a :class:`ConnectError`, or passed over when ``lenient``."""
    result: dict[str, Any] = {"current-context": None, "clusters": {}, "users": {}, "contexts": {}}
    for path in kubeconfig_files(kubeconfig):
        if not path.exists():
            continue
        try:
            config = _load(path)
        except ConnectError:
            if lenient:
                continue
            raise
        result["current-context"] = result["current-context"] or config.get("current-context")
        for section, key in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for entry in config.get(section) or ():
                if isinstance(entry, dict) and entry.get("name") not in result[section]:
                    result[section][entry.get("name")] = _absolute(entry.get(key) or {}, path.parent)
    return result


def _load(path: Path) -> dict[str, Any]:
    """One kubeconfig file; a :class:`ConnectError` saying why when it cannot be read or is no kubeconfig."""
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise ConnectError(f"cannot use kubeconfig {path}: {error}", problem=f"{path} is not YAML") from error
    except (OSError, UnicodeDecodeError) as error:  # a directory, no permission, not text
        raise ConnectError(f"cannot read kubeconfig {path}: {error}",
                           problem=f"{path} cannot be read: {error}") from error
    if not isinstance(config, dict):
        raise ConnectError(f"cannot use kubeconfig {path}: not a kubeconfig", problem=f"{path} is not a mapping")
    return config


def _absolute(entry: dict[str, Any], base: Path) -> dict[str, Any]:
    """Paths relative to the kubeconfig's folder, as kubectl reads them: files, and an exec plugin's command when it
    names a path (``./bin/token``; a bare name is looked up on PATH)."""
    fixed = dict(entry)
    for key in ("certificate-authority", "client-certificate", "client-key", "tokenFile"):
        if fixed.get(key):
            fixed[key] = str((base / Path(fixed[key]).expanduser()).resolve())
    plugin = fixed.get("exec")
    if isinstance(plugin, dict) and isinstance(plugin.get("command"), str) and "/" in plugin["command"]:
        fixed["exec"] = {**plugin, "command": str((base / Path(plugin["command"]).expanduser()).resolve())}
    return fixed


def proxy_for(server: str, proxy_url: str | None) -> str | None:
    """The proxy to reach ``server`` through: the kubeconfig's ``proxy-url``, else ``HTTPS_PROXY``/``HTTP_PROXY``
    unless ``NO_PROXY`` names the host (as kubectl); SOCKS proxies are not supported, and said so."""
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    split = urlsplit(server)
    proxy = proxy_url or (None if proxy_bypass(split.hostname or "") else getproxies().get(split.scheme))
    if proxy and proxy.lower().startswith("socks"):
        problem = f"the proxy {proxy} is a SOCKS proxy, which is not supported (use an HTTP proxy, or none)"
        raise ConnectError(f"cannot reach {server}: {problem}", problem=problem)
    return proxy or None


def _data(entry: dict[str, Any], key: str) -> bytes | None:
    """``key-data`` (base64) or the file ``key`` names."""
    if entry.get(f"{key}-data"):
        return base64.b64decode(entry[f"{key}-data"])
    if entry.get(key):
        return Path(entry[key]).read_bytes()
    return None


def connect(kubeconfig: str | os.PathLike[str] | None = None, *, context: str | None = None,
            server: str | None = None, retries: int | None = None, program: str = "client") -> Connection:
    """A connection configured by the rules of the module docstring."""
    from apiclient.connection import Connection, Credentials  # here: reading contexts offline needs no HTTP
    tried = f"kubeconfig {os.pathsep.join(map(str, kubeconfig_files(kubeconfig)))}"
    where = f"{tried}, context {context}" if context else tried
    if not any(path.exists() for path in kubeconfig_files(kubeconfig)):
        if os.environ.get("KUBERNETES_SERVICE_HOST") and kubeconfig is None:
            return _in_cluster(server=server, retries=retries, program=program)
        raise ConnectError(
            f"no kubeconfig found ({tried}) and not running in a pod: pass a kubeconfig or set KUBECONFIG "
            "(for the local cluster of this repository: export KUBECONFIG=$PWD/.devcluster/kubeconfig)")
    config = merged(kubeconfig)
    name = context or config["current-context"]
    chosen = config["contexts"].get(name)
    if chosen is None:
        problem = f"context {name!r} is not in the kubeconfig" if name else "the kubeconfig has no current-context"
        raise ConnectError(f"cannot use {where}: {problem} (fix the file, or pick another context)", problem=problem)
    cluster, user = config["clusters"].get(chosen.get("cluster")), config["users"].get(chosen.get("user"), {})
    if not cluster or not (server or cluster.get("server")):
        problem = f"context {name!r} names cluster {chosen.get('cluster')!r}, which has no server"
        raise ConnectError(f"cannot use {where}: {problem} (fix the file, or pick another context)", problem=problem)
    try:
        credentials = Credentials(
            token=user.get("token") or ((user.get("auth-provider") or {}).get("config") or {}).get("id-token"),
            token_file=Path(user["tokenFile"]) if user.get("tokenFile") else None,
            basic=(user["username"], user.get("password") or "") if user.get("username") else None,
            exec_plugin=user.get("exec"), client_certificate=_data(user, "client-certificate"),
            client_key=_data(user, "client-key"))
        ca = _data(cluster, "certificate-authority")
    except (OSError, ValueError) as error:
        problem = f"a file or data it names cannot be read: {error}"
        raise ConnectError(f"cannot use {where}: {problem} (fix the file, or pick another context)",
                           problem=problem) from error
    return Connection(server or cluster["server"], credentials=credentials, ca=ca,
                      verify=not cluster.get("insecure-skip-tls-verify"), server_name=cluster.get("tls-server-name"),
                      proxy=proxy_for(server or cluster["server"], cluster.get("proxy-url")), retries=retries,
                      user_agent=user_agent(program),
                      headers=impersonation(user))


def impersonation(user: dict[str, Any]) -> list[tuple[str, str]]:
    """The headers of a user entry's ``as``, ``as-groups`` and ``as-user-extra`` (kubectl's ``--as``)."""
    headers = [("Impersonate-User", user["as"])] if user.get("as") else []
    headers += [("Impersonate-Group", group) for group in user.get("as-groups") or ()]
    for key, values in (user.get("as-user-extra") or {}).items():  # the key percent-encoded, as client-go does
        headers += [(f"Impersonate-Extra-{quote(str(key), safe='')}", value) for value in values]
    return headers


def _in_cluster(*, server: str | None, retries: int | None, program: str) -> Connection:
    """The pod's service account: its token (read again as it is rotated) and the cluster's CA."""
    from apiclient.connection import Connection, Credentials
    host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    try:
        ca = (IN_CLUSTER / "ca.crt").read_bytes()
        (IN_CLUSTER / "token").read_text()
    except OSError as error:
        raise ConnectError(f"running in a pod, but its service account's files cannot be read: {error} (mount the "
                           "ServiceAccount token: automountServiceAccountToken)", problem=str(error)) from error
    server = server or f"https://{host}:{port}"
    return Connection(server, credentials=Credentials(token_file=IN_CLUSTER / "token"), ca=ca,
                      proxy=proxy_for(server, None), retries=retries, user_agent=user_agent(program))
