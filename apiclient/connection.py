"""A connection to one API server: where it is, how each request proves who sends it, and HTTP through urllib3.

This is all the engine needs of a Kubernetes client, in one place: every program sends plain JSON by path
(:mod:`apiclient.rest`) and streams watches (:mod:`apiclient.watch`) over it. What a kubeconfig user entry, or a
pod's service account, can say of its identity, each as kubectl takes it:

=========================================  ======================================================================
``token``, ``tokenFile``                   a bearer token; a file is read again when it changes (bound service
                                           account tokens are rotated while the pod runs)
``client-certificate(-data)``,             a client certificate for mutual TLS
``client-key(-data)``
``exec``                                   a credential plugin (``client.authentication.k8s.io`` v1 or v1beta1:
                                           EKS, GKE, AKS, OIDC login helpers): run when no unexpired credential is
                                           at hand; its token or certificate is used until ``expirationTimestamp``
``username``/``password``                  HTTP basic authentication
``as``, ``as-groups``, ``as-user-extra``   impersonation headers, as ``kubectl --as``
``auth-provider`` (``oidc``)               its ``id-token`` as a bearer token (no refresh: log in again)
=========================================  ======================================================================

and of the server: ``certificate-authority(-data)``, ``insecure-skip-tls-verify``, ``tls-server-name``,
``proxy-url``.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import urllib3

EXEC_TIMEOUT = 60
"""Seconds a credential plugin may take when it cannot ask anyone (no terminal); one that may ask takes its time."""
TOKEN_FILE_SECONDS = 60.0
"""How often a token file is looked at again."""
POOL_SIZE = 32
"""Connections kept open for reuse: the event source holds a watch per type and namespace, the handler one request
per thread (more are opened when needed, and closed after use)."""


class CredentialError(RuntimeError):
    """A credential plugin failed or said nothing usable; the message says which and why."""


@dataclass
class Credentials:
    """How requests prove who sends them (see the module docstring): at most one of a static token, a token file,
    basic authentication and an exec plugin; a client certificate besides, or from the plugin."""

    token: str | None = None
    token_file: Path | None = None
    basic: tuple[str, str] | None = None
    exec_plugin: Mapping[str, Any] | None = None
    client_certificate: bytes | None = None
    client_key: bytes | None = None
    _file_token: tuple[float, str] | None = field(default=None, repr=False)
    _file_checked: float = field(default=0.0, repr=False)
    _plugin: tuple[float | None, Mapping[str, Any]] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def current(self) -> tuple[dict[str, str], tuple[bytes, bytes] | None]:
        """The ``Authorization`` header of the next request (none with a client certificate alone), and the client
        certificate and key (PEM) to present, from one look at the credential (a plugin runs at most once)."""
        if self.exec_plugin is not None:
            status = self._from_plugin()
            token = status.get("token")
            certificate = (status["clientCertificateData"].encode(), status["clientKeyData"].encode()) \
                if status.get("clientCertificateData") and status.get("clientKeyData") else None
            return ({"Authorization": f"Bearer {token}"} if token else {}), certificate or self._static_certificate()
        headers: dict[str, str] = {}
        if self.token_file is not None:
            headers = {"Authorization": f"Bearer {self._read_token_file()}"}
        elif self.token:
            headers = {"Authorization": f"Bearer {self.token}"}
        elif self.basic is not None:
            encoded = base64.b64encode(f"{self.basic[0]}:{self.basic[1]}".encode()).decode()
            headers = {"Authorization": f"Basic {encoded}"}
        return headers, self._static_certificate()

    def _static_certificate(self) -> tuple[bytes, bytes] | None:
        return (self.client_certificate, self.client_key) if self.client_certificate and self.client_key else None

    def _read_token_file(self) -> str:
        assert self.token_file is not None
        with self._lock:
            now = time.monotonic()
            if self._file_token is None or now - self._file_checked >= TOKEN_FILE_SECONDS:
                self._file_checked = now
                mtime = self.token_file.stat().st_mtime
                if self._file_token is None or self._file_token[0] != mtime:
                    self._file_token = (mtime, self.token_file.read_text().strip())
            return self._file_token[1]

    def refused(self, used: dict[str, str]) -> bool:
        """The API server answered 401 to a request that carried ``used``: forget a plugin's credential if it is
        still the one sent (it was revoked or rotated before it said it would expire). Whether a new one may help."""
        with self._lock:
            if self.exec_plugin is None or self._plugin is None:
                return False
            if used.get("Authorization") == f"Bearer {self._plugin[1].get('token')}" or not used:
                self._plugin = None
            return True

    def _from_plugin(self) -> Mapping[str, Any]:
        with self._lock:
            if self._plugin is not None and (self._plugin[0] is None or self._plugin[0] > time.time() + 10):
                return self._plugin[1]
            status = run_plugin(self.exec_plugin or {})
            expires = status.get("expirationTimestamp")
            try:
                until = datetime.fromisoformat(expires.replace("Z", "+00:00")).timestamp() if expires else None
            except (AttributeError, ValueError) as error:
                raise CredentialError(f"the credential plugin {self.exec_plugin.get('command')} gave an "
                                      f"expirationTimestamp that is not a time: {expires!r}") from error
            self._plugin = (until, status)
            return status


def run_plugin(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """Run an ``exec`` credential plugin as kubectl does; the ``status`` of the ExecCredential it prints.

    Its messages (stderr) go where ours go, as it prints them: a login helper's "open this URL" reaches the person.
    With a terminal on stdin and ``interactiveMode`` not ``Never``, it may ask, and takes as long as it needs."""
    api_version = spec.get("apiVersion") or "client.authentication.k8s.io/v1"
    command = spec.get("command")
    if not command:
        raise CredentialError("the kubeconfig's exec entry has no command")
    interactive = spec.get("interactiveMode") != "Never" and sys.stdin is not None and sys.stdin.isatty()
    env = {**os.environ, **{item["name"]: str(item.get("value", "")) for item in spec.get("env") or ()
                            if isinstance(item, Mapping) and "name" in item},
           "KUBERNETES_EXEC_INFO": json.dumps({"apiVersion": api_version, "kind": "ExecCredential",
                                               "spec": {"interactive": interactive}})}
    try:
        ran = subprocess.run([command, *(spec.get("args") or ())], stdout=subprocess.PIPE, text=True, env=env,
                             stdin=None if interactive else subprocess.DEVNULL,
                             timeout=None if interactive else EXEC_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        hint = f" ({spec['installHint']})" if spec.get("installHint") else ""
        raise CredentialError(f"the credential plugin {command} could not run: {error}{hint}") from error
    if ran.returncode != 0:
        raise CredentialError(f"the credential plugin {command} exited {ran.returncode} (its own messages are "
                              "printed before this one)")
    try:
        credential = json.loads(ran.stdout)
    except ValueError as error:
        raise CredentialError(f"the credential plugin {command} printed no ExecCredential: {error}") from error
    status = credential.get("status") if isinstance(credential, dict) else None
    if not isinstance(status, dict) or not (status.get("token") or status.get("clientCertificateData")):
        raise CredentialError(f"the credential plugin {command} gave neither a token nor a client certificate")
    return status


class Connection:
    """One API server, and the pool of HTTPS connections to it (thread-safe, as urllib3's pools are)."""

    def __init__(self, host: str, *, credentials: Credentials | None = None, ca: bytes | None = None,
                 verify: bool = True, server_name: str | None = None, proxy: str | None = None,
                 retries: int | None = None, user_agent: str = "volcano-jobflow",
                 headers: list[tuple[str, str]] | None = None) -> None:
        self.host = host.rstrip("/")
        self.headers = list(headers or ())  # sent with every request: impersonation (a header may repeat)
        self.credentials = credentials or Credentials()
        self.ca, self.verify, self.server_name, self.proxy = ca, verify, server_name, proxy
        # Connection failures are retried (nothing was sent), and read failures of the methods that may be repeated
        # (urllib3's default: not POST or PATCH); never "other" errors, which may come after a create was sent.
        count = 3 if retries is None else retries
        self.retries = urllib3.Retry(total=count, connect=count, read=count, other=0, redirect=0, status=0)
        self.user_agent = user_agent
        self._pools: dict[tuple[bytes, bytes] | None, urllib3.PoolManager] = {}
        self._lock = threading.Lock()

    def _pool(self, certificate: tuple[bytes, bytes] | None) -> urllib3.PoolManager:
        """The pool for the current client certificate (a plugin may hand out a new one)."""
        with self._lock:
            pool = self._pools.get(certificate)
            if pool is None:
                context = ssl.create_default_context(cadata=self.ca.decode() if self.ca else None)
                if not self.verify:  # the kubeconfig says insecure-skip-tls-verify: no warning per request
                    context.check_hostname = False
                    context.verify_mode = ssl.CERT_NONE
                    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
                if certificate is not None:
                    _load_certificate(context, *certificate)
                options: dict[str, Any] = {"ssl_context": context, "maxsize": POOL_SIZE, "block": False}
                if self.server_name:
                    options["server_hostname"] = self.server_name
                pool = urllib3.ProxyManager(self.proxy, **options) if self.proxy else urllib3.PoolManager(**options)
                self._pools = {certificate: pool}  # an older certificate's pool goes
            return pool

    def request(self, method: str, path: str, *, body: bytes | None = None, headers: Mapping[str, str] | None = None,
                timeout: float | tuple[float, float] | None = None, stream: bool = False) -> urllib3.BaseHTTPResponse:
        """One request to ``path`` (with its query); the response, its body read unless ``stream``. Raises urllib3's
        errors (or OSError) when the server cannot be reached. A 401 to a credential plugin's token runs the plugin
        again and repeats the request once, as kubectl does."""
        if isinstance(timeout, tuple):
            timeout = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        sent, response = self._send(method, path, body, headers, timeout, stream)
        if response.status == 401 and self.credentials.refused(sent):
            response.drain_conn()
            response.release_conn()
            _, response = self._send(method, path, body, headers, timeout, stream)
        return response

    def _send(self, method: str, path: str, body: bytes | None, headers: Mapping[str, str] | None,
              timeout: float | urllib3.Timeout | None, stream: bool) -> tuple[dict[str, str], urllib3.BaseHTTPResponse]:
        """The request with the current credential: the ``Authorization`` it carried, and the response."""
        authorization, certificate = self.credentials.current()
        sent = urllib3.HTTPHeaderDict({"User-Agent": self.user_agent, "Accept": "application/json",
                                       **authorization, **(headers or {})})
        for name, value in self.headers:
            sent.add(name, value)
        return authorization, self._pool(certificate).request(
            method, self.host + path, body=body, headers=sent, timeout=timeout, retries=self.retries,
            preload_content=not stream, redirect=False)

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.clear()
            self._pools = {}


def _load_certificate(context: ssl.SSLContext, certificate: bytes, key: bytes) -> None:
    """``load_cert_chain`` reads files only: the PEMs go to a private temporary directory for the call."""
    with tempfile.TemporaryDirectory(prefix="jobflow-client-cert-") as directory:
        cert_path, key_path = Path(directory) / "tls.crt", Path(directory) / "tls.key"
        for path, data in ((cert_path, certificate), (key_path, key)):
            path.touch(mode=0o600)
            path.write_bytes(data)
        context.load_cert_chain(cert_path, key_path)
