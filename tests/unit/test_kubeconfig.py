"""kubectl's rules for kubeconfig files, read without an API server: merging, relative paths, what each user entry
turns into, and failures that say which file and what to fix. The forms against the real API server are in
tests/cluster/test_kubeconfig_forms.py."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from apiclient import connection
from apiclient.kubeconfig import ConnectError, connect, default_namespace, merged


def write(path: Path, *, context: str | None, clusters=(), users=(), contexts=()) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": name, "cluster": cluster} for name, cluster in clusters],
        "users": [{"name": name, "user": user} for name, user in users],
        "contexts": [{"name": name, "context": entry} for name, entry in contexts]}))
    return path


def test_files_merge_as_kubectl_merges_them_the_first_to_name_an_entry_wins(tmp_path: Path, monkeypatch) -> None:
    first = write(tmp_path / "a", context="prod", clusters=[("k", {"server": "https://first"})],
                  contexts=[("prod", {"cluster": "k", "user": "u", "namespace": "team"})])
    second = write(tmp_path / "b", context="dev", clusters=[("k", {"server": "https://second"}),
                                                           ("other", {"server": "https://other"})],
                   users=[("u", {"token": "t"})])
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")
    config = merged()
    assert config["current-context"] == "prod"
    assert config["clusters"]["k"]["server"] == "https://first"
    assert set(config["clusters"]) == {"k", "other"}
    assert default_namespace() == "team"
    api = connect()
    assert api.host == "https://first" and api.credentials.current() == ({"Authorization": "Bearer t"}, None)


def test_paths_are_relative_to_the_file_that_names_them(tmp_path: Path) -> None:
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "token").write_text("from-file\n")
    config = write(tmp_path / "config", context="c", clusters=[("k", {"server": "https://k",
                                                                     "certificate-authority": "pki/ca.crt"})],
                   users=[("u", {"tokenFile": "token"})], contexts=[("c", {"cluster": "k", "user": "u"})])
    api = connect(config)
    assert api.ca == b"CA"
    assert api.credentials.current()[0] == {"Authorization": "Bearer from-file"}


@pytest.mark.parametrize("user, header", [
    ({"token": "abc"}, "Bearer abc"),
    ({"username": "ann", "password": "secret"}, "Basic " + base64.b64encode(b"ann:secret").decode()),
    ({"auth-provider": {"name": "oidc", "config": {"id-token": "jwt"}}}, "Bearer jwt"),
    ({"client-certificate-data": base64.b64encode(b"C").decode(),
      "client-key-data": base64.b64encode(b"K").decode()}, None),
])
def test_each_user_entry_proves_who_sends_the_requests(tmp_path: Path, user: dict, header: str | None) -> None:
    config = write(tmp_path / "config", context="c", clusters=[("k", {"server": "https://k"})],
                   users=[("u", user)], contexts=[("c", {"cluster": "k", "user": "u"})])
    headers, certificate = connect(config).credentials.current()
    assert headers.get("Authorization") == header
    assert certificate == (None if header else (b"C", b"K"))


def test_impersonation_and_the_servers_tls_settings(tmp_path: Path) -> None:
    config = write(tmp_path / "config", context="c",
                   clusters=[("k", {"server": "https://k/", "insecure-skip-tls-verify": True,
                                    "tls-server-name": "api.internal", "proxy-url": "http://proxy:3128"})],
                   users=[("u", {"token": "t", "as": "jane", "as-groups": ["ops", "dev"],
                                 "as-user-extra": {"scopes": ["a"]}})],
                   contexts=[("c", {"cluster": "k", "user": "u"})])
    api = connect(config, server="https://override")
    assert api.host == "https://override"
    assert (api.verify, api.server_name, api.proxy) == (False, "api.internal", "http://proxy:3128")
    assert api.headers == [("Impersonate-User", "jane"), ("Impersonate-Group", "ops"), ("Impersonate-Group", "dev"),
                           ("Impersonate-Extra-scopes", "a")]


def test_a_credential_plugin_that_fails_says_which_and_why(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    plugin.write_text("#!/bin/sh\necho 'token expired, run: login' >&2\nexit 3\n")
    plugin.chmod(0o755)
    credentials = connection.Credentials(exec_plugin={"command": str(plugin)})
    with pytest.raises(connection.CredentialError, match="exited 3: token expired, run: login"):
        credentials.current()


@pytest.mark.parametrize("config, says", [
    (None, "no kubeconfig found"),
    ({"current-context": "c", "contexts": []}, "context 'c' is not in the kubeconfig"),
    ({"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k"}}], "clusters": []},
     "names cluster 'k', which has no server"),
    ({"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k"}}],
      "clusters": [{"name": "k", "cluster": {"server": "https://k", "certificate-authority": "missing.crt"}}]},
     "a file or data it names cannot be read"),
])
def test_a_kubeconfig_that_cannot_be_used_says_why(tmp_path: Path, monkeypatch, config: dict | None,
                                                   says: str) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = tmp_path / "config"
    if config is not None:
        path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConnectError, match=str(path)) as error:
        connect(path)
    assert says in str(error.value)


def test_in_a_pod_without_its_service_account_files_says_what_to_mount(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setattr("apiclient.kubeconfig.IN_CLUSTER", tmp_path / "serviceaccount")
    with pytest.raises(ConnectError, match="automountServiceAccountToken"):
        connect()
