"""Every way a user's kubeconfig (or a pod) proves who it is, against the real kube-apiserver.

The programs connect through :func:`apiclient.kubeconfig.connect` alone (no Kubernetes client package): a static
token and a token file, a client certificate (files and inline data, signed by the CA the local API server trusts
for clients), an exec credential plugin (run once while its credential is unexpired, again after), an OIDC
``auth-provider``'s id-token, impersonation (``as``), and a pod's service account (a token from the TokenRequest API,
read again when it is rotated). Each test reads JobFlows as that identity; the command line is run with the exec
plugin, as an EKS or GKE user runs it.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from apiclient import connection as connection_module
from apiclient import kubeconfig as kubeconfig_module
from apiclient.kubeconfig import connect
from apiclient.rest import ApiError, Rest
from devcluster import pki
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW

JOBFLOWS = f"/apis/{JOBFLOW.group}/{JOBFLOW.version}/namespaces/{{namespace}}/{JOBFLOW.plural}"


def kubeconfig_with(cluster: LocalCluster, path: Path, user: dict) -> Path:
    """The local cluster's kubeconfig with its user entry replaced by ``user``."""
    config = yaml.safe_load(cluster.state.kubeconfig.read_text())
    config["users"] = [{"name": "someone", "user": user}]
    config["contexts"][0]["context"]["user"] = "someone"
    path.write_text(yaml.safe_dump(config))
    return path


def list_jobflows(kubeconfig: Path | None, namespace: str) -> list[dict]:
    """The JobFlows of ``namespace``, read through a fresh connection made by the programs' rules."""
    return Rest(connect(kubeconfig)).request("GET", JOBFLOWS, {"namespace": namespace})["items"]


def make_jobflow(cluster: LocalCluster, namespace: str) -> None:
    cluster.custom.create_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, namespace, JOBFLOW.plural, {
        "apiVersion": JOBFLOW.api_version, "kind": "JobFlow", "metadata": {"name": "seen"},
        "spec": {"flows": [{"name": "a"}]}})


def test_a_static_token_and_a_token_file(cluster: LocalCluster, namespace: str, tmp_path: Path) -> None:
    make_jobflow(cluster, namespace)
    token = cluster.state.token
    assert [f["metadata"]["name"] for f in list_jobflows(
        kubeconfig_with(cluster, tmp_path / "token", {"token": token}), namespace)] == ["seen"]
    (tmp_path / "token-file").write_text(token + "\n")
    assert list_jobflows(kubeconfig_with(cluster, tmp_path / "file", {"tokenFile": "token-file"}), namespace)
    with pytest.raises(ApiError) as refused:
        list_jobflows(kubeconfig_with(cluster, tmp_path / "wrong", {"token": "not-a-token"}), namespace)
    assert refused.value.status == 401


def test_a_client_certificate_in_files_and_inline(cluster: LocalCluster, namespace: str, tmp_path: Path) -> None:
    make_jobflow(cluster, namespace)
    cert, key = pki.client_certificate(tmp_path, Path(cluster.state.root) / "data" / "pki",
                                       user="jobflow-cert-user", group="system:masters")
    in_files = kubeconfig_with(cluster, tmp_path / "files", {"client-certificate": str(cert),
                                                             "client-key": key.name})  # relative to the file
    assert [f["metadata"]["name"] for f in list_jobflows(in_files, namespace)] == ["seen"]
    inline = kubeconfig_with(cluster, tmp_path / "inline", {
        "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
        "client-key-data": base64.b64encode(key.read_bytes()).decode()})
    assert list_jobflows(inline, namespace)
    review = Rest(connect(inline)).request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                           body={"apiVersion": "authentication.k8s.io/v1",
                                                 "kind": "SelfSubjectReview"})
    assert review["status"]["userInfo"]["username"] == "jobflow-cert-user"


PLUGIN = """\
import json, pathlib, sys
calls = pathlib.Path(sys.argv[1])
count = int(calls.read_text()) + 1 if calls.exists() else 1
calls.write_text(str(count))
token = sys.argv[2] if count > int(sys.argv[4]) else "revoked-" + sys.argv[2]
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": token, "expirationTimestamp": sys.argv[3]}}))
"""


def exec_user(tmp_path: Path, token: str, expires: datetime, *, revoked_first: int = 0) -> dict:
    """A user entry whose plugin hands out ``token`` until ``expires`` (the first ``revoked_first`` times, a token
    the API server refuses, as one revoked before its expiry)."""
    (tmp_path / "plugin.py").write_text(PLUGIN)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
                     "args": [str(tmp_path / "plugin.py"), str(tmp_path / "calls"), token,
                              expires.strftime("%Y-%m-%dT%H:%M:%SZ"), str(revoked_first)],
                     "interactiveMode": "Never"}}


def test_an_exec_plugin_runs_once_while_its_credential_lasts(cluster: LocalCluster, namespace: str,
                                                             tmp_path: Path) -> None:
    make_jobflow(cluster, namespace)
    calls = tmp_path / "calls"
    lasting = kubeconfig_with(cluster, tmp_path / "lasting",
                              exec_user(tmp_path, cluster.state.token, datetime.now(UTC) + timedelta(hours=1)))
    rest = Rest(connect(lasting))
    for _ in range(3):
        assert rest.request("GET", JOBFLOWS, {"namespace": namespace})["items"]
    assert calls.read_text() == "1"
    expired = kubeconfig_with(cluster, tmp_path / "expired",
                              exec_user(tmp_path, cluster.state.token, datetime.now(UTC) - timedelta(minutes=1)))
    rest = Rest(connect(expired))
    for _ in range(2):
        assert rest.request("GET", JOBFLOWS, {"namespace": namespace})["items"]
    assert calls.read_text() == "3", "an expired credential is asked for again on the next request"


def test_a_refused_plugin_token_is_asked_for_again_once(cluster: LocalCluster, namespace: str,
                                                        tmp_path: Path) -> None:
    make_jobflow(cluster, namespace)
    revoked = kubeconfig_with(cluster, tmp_path / "revoked", exec_user(
        tmp_path, cluster.state.token, datetime.now(UTC) + timedelta(hours=1), revoked_first=1))
    assert list_jobflows(revoked, namespace)
    assert (tmp_path / "calls").read_text() == "2", "a 401 runs the plugin again, and the request is repeated"
    (tmp_path / "calls").unlink()
    always = kubeconfig_with(cluster, tmp_path / "always", exec_user(
        tmp_path, cluster.state.token, datetime.now(UTC) + timedelta(hours=1), revoked_first=99))
    with pytest.raises(ApiError) as refused:
        list_jobflows(always, namespace)
    assert refused.value.status == 401
    assert (tmp_path / "calls").read_text() == "2", "only once"


def test_the_command_line_with_an_exec_plugin(cluster: LocalCluster, namespace: str, tmp_path: Path) -> None:
    make_jobflow(cluster, namespace)
    kubeconfig = kubeconfig_with(cluster, tmp_path / "config",
                                 exec_user(tmp_path, cluster.state.token, datetime.now(UTC) + timedelta(hours=1)))
    listed = subprocess.run([sys.executable, "-m", "kubectl_jobflow", "--kubeconfig", str(kubeconfig), "list",
                             "-n", namespace], capture_output=True, text=True, timeout=60, check=False)
    assert listed.returncode == 0, listed.stderr
    assert "seen" in listed.stdout
    failing = kubeconfig_with(cluster, tmp_path / "failing", {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": "jobflow-no-such-plugin",
        "installHint": "install jobflow-no-such-plugin from your cloud's docs"}})
    refused = subprocess.run([sys.executable, "-m", "kubectl_jobflow", "--kubeconfig", str(failing), "list",
                              "-n", namespace], capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 3  # cannot authenticate: not allowed
    assert "jobflow-no-such-plugin could not run" in refused.stderr
    assert "install jobflow-no-such-plugin from your cloud's docs" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_an_oidc_id_token_and_impersonation(cluster: LocalCluster, namespace: str, tmp_path: Path) -> None:
    make_jobflow(cluster, namespace)
    oidc = kubeconfig_with(cluster, tmp_path / "oidc", {"auth-provider": {
        "name": "oidc", "config": {"id-token": cluster.state.token, "idp-issuer-url": "https://issuer.invalid"}}})
    assert list_jobflows(oidc, namespace)
    acting = kubeconfig_with(cluster, tmp_path / "as", {"token": cluster.state.token, "as": "nobody-in-particular"})
    with pytest.raises(ApiError) as refused:
        list_jobflows(acting, namespace)
    assert refused.value.status == 403 and "nobody-in-particular" in refused.value.message


def service_account_token(cluster: LocalCluster, namespace: str, name: str) -> str:
    cluster.core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    requested = cluster.core.create_namespaced_service_account_token(
        name, namespace, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])))
    return requested.status.token


def test_a_pods_service_account_and_its_rotated_token(cluster: LocalCluster, namespace: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    make_jobflow(cluster, namespace)
    reader, nobody = (service_account_token(cluster, namespace, name) for name in ("reader", "nobody"))
    client.RbacAuthorizationV1Api(cluster.api).create_namespaced_role_binding(namespace, {
        "metadata": {"name": "reader"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                   "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}]})
    mounted = tmp_path / "serviceaccount"
    mounted.mkdir()
    (mounted / "ca.crt").write_bytes((Path(cluster.state.root) / "data" / "pki" / "apiserver.crt").read_bytes())
    (mounted / "token").write_text(nobody)
    port = cluster.state.server.rsplit(":", 1)[1]
    monkeypatch.setattr(kubeconfig_module, "IN_CLUSTER", mounted)
    monkeypatch.setattr(connection_module, "TOKEN_FILE_SECONDS", 0.0)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-such-kubeconfig"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)

    rest = Rest(connect())
    assert rest.host == f"https://127.0.0.1:{port}"
    with pytest.raises(ApiError) as refused:
        rest.request("GET", JOBFLOWS, {"namespace": namespace})
    assert refused.value.status == 403 and f"system:serviceaccount:{namespace}:nobody" in refused.value.message
    rotated = mounted / "token.new"  # as the kubelet rotates it: a new file renamed over the old
    rotated.write_text(reader)
    rotated.replace(mounted / "token")
    cluster.wait_until("the rotated token to be read", lambda: rest.request(
        "GET", JOBFLOWS, {"namespace": namespace})["items"], timeout=10)

