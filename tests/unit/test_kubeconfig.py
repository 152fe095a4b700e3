"""kubectl's rules for kubeconfig files, read without an API server: merging, relative paths, what each user entry
turns into, and failures that say which file and what to fix. The forms against the real API server are in
tests/cluster/test_kubeconfig_forms.py."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from apiclient import connection
from apiclient.kubeconfig import ConnectError, connect, default_namespace, merged, proxy_for


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
                                 "as-user-extra": {"scopes": ["a"], "acme.com/team": ["ml"]}})],
                   contexts=[("c", {"cluster": "k", "user": "u"})])
    api = connect(config, server="https://override")
    assert api.host == "https://override"
    assert (api.verify, api.server_name, api.proxy) == (False, "api.internal", "http://proxy:3128")
    assert api.headers == [("Impersonate-User", "jane"), ("Impersonate-Group", "ops"), ("Impersonate-Group", "dev"),
                           ("Impersonate-Extra-acme.com%2Fteam", "ml"), ("Impersonate-Extra-scopes", "a")]


def test_a_credential_plugin_that_fails_says_which_and_its_messages_reach_the_person(tmp_path: Path, capfd) -> None:
    plugin = tmp_path / "plugin"
    plugin.write_text("#!/bin/sh\necho 'token expired, run: login' >&2\nexit 3\n")
    plugin.chmod(0o755)
    credentials = connection.Credentials(exec_plugin={"command": str(plugin), "env": [{"name": "ONLY_A_NAME"}]})
    with pytest.raises(connection.CredentialError, match=f"the credential plugin {plugin} exited 3"):
        credentials.current()
    assert "token expired, run: login" in capfd.readouterr().err


def test_a_plugins_expiry_that_is_not_a_time_is_its_error(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    plugin.write_text("#!/bin/sh\necho '{\"status\": {\"token\": \"t\", \"expirationTimestamp\": \"soon\"}}'\n")
    plugin.chmod(0o755)
    with pytest.raises(connection.CredentialError, match="expirationTimestamp that is not a time: 'soon'"):
        connection.Credentials(exec_plugin={"command": str(plugin)}).current()


def test_a_plugin_command_that_names_a_path_is_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    config = write(tmp_path / "config", context="c", clusters=[("k", {"server": "https://k"})],
                   users=[("u", {"exec": {"command": "./bin/token"}}), ("v", {"exec": {"command": "aws"}})],
                   contexts=[("c", {"cluster": "k", "user": "u"})])
    users = merged(config)["users"]
    assert users["u"]["exec"]["command"] == str(tmp_path / "bin" / "token")
    assert users["v"]["exec"]["command"] == "aws"  # looked up on PATH


def test_proxies_from_the_kubeconfig_else_the_environment_unless_no_proxy(monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://corporate:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert proxy_for("https://api.example:6443", None) == "http://corporate:3128"
    assert proxy_for("https://api.internal.example:6443", None) is None
    assert proxy_for("https://api.example:6443", "http://own:8080") == "http://own:8080"
    with pytest.raises(ConnectError, match="SOCKS proxy, which is not supported"):
        proxy_for("https://api.example:6443", "socks5://tunnel:1080")


def test_a_kubeconfig_path_that_is_a_folder_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path))
    with pytest.raises(ConnectError, match="cannot read kubeconfig .*Is a directory"):
        connect()


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
