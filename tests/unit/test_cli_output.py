"""vcctl's table layout, kubectl's ages, and the command line's exit codes and messages without a cluster."""

import io
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from display.times import age, human_duration
from kubectl_jobflow.cli import run
from kubectl_jobflow.output import columns, vcctl_table


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch, tmp_path):
    """Any attempt to reach a cluster fails: these commands must not need one."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


def test_the_table_is_vcctls_each_column_four_wider_than_its_longest_cell_every_line_padded():
    # reference D: the upstream test's table, trailing spaces included.
    assert vcctl_table(["Name", "Namespace", "Phase", "Age"], [["test-jobflow", "default", "Succeed", "3d"]]) == (
        "Name            Namespace    Phase      Age    \n"
        "test-jobflow    default      Succeed    3d     \n"
    )


def test_the_jobtemplate_table_has_name_and_namespace_only():
    assert vcctl_table(["Name", "Namespace"], [["test-jobtemplate", "default"]]) == (
        "Name                Namespace    \n"
        "test-jobtemplate    default      \n"
    )


def test_the_new_views_use_kubectls_columns_without_trailing_spaces():
    assert columns(["FLOW", "JOB"], [["a", "test-a"], ["└─ b", ""]]) == (
        "FLOW   JOB\n"
        "a      test-a\n"
        "└─ b\n"
    )


@pytest.mark.parametrize(("seconds", "shown"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (125, "2m5s"), (600, "10m"),
    (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 60, "3h1m"), (8 * 3600, "8h"), (47 * 3600, "47h"),
    (48 * 3600, "2d"), (49 * 3600, "2d1h"), (8 * 86400, "8d"), (730 * 86400, "2y"), (731 * 86400, "2y1d"),
    (8 * 365 * 86400, "8y"),
])
def test_ages_read_as_kubernetes_human_duration(seconds, shown):
    assert human_duration(seconds) == shown


def test_an_object_without_creation_time_has_an_unknown_age():
    now = datetime(2026, 1, 2, tzinfo=UTC)
    assert age(None, now=now) == "<unknown>"
    assert age("2026-01-01T23:59:00Z", now=now) == "60s"
    assert age(now - timedelta(days=3), now=now) == "3d"


def test_template_delete_without_a_name_uses_vcctls_job_template_wording_and_exits_2():
    assert cli("jt", "delete") == (2, "", "Failed to delete jobtemplate: job template name must be specified\n")


def test_delete_without_a_name_or_file_says_what_is_missing():
    assert cli("delete") == (2, "", "Failed to delete jobflow: jobflow name must be specified\n")


def test_an_unsupported_output_format_is_refused_with_exit_2(capsys):
    code, out, err = cli("describe", "x", "-o", "xml")
    assert (code, out) == (2, "")
    assert err.startswith("usage: kubectl jobflow describe ")
    assert "the allowed formats are: json, yaml" in err


def test_no_command_prints_the_usage_and_exits_2():
    code, out, _ = cli()
    assert code == 2
    assert "create" in out and "status" in out and "template" in out


def test_without_a_kubeconfig_the_error_names_what_was_tried_and_what_to_do(tmp_path):
    code, out, err = cli("get")
    assert (code, out) == (3, "")
    assert err == (f"Failed to get jobflow: no kubeconfig found: {tmp_path / 'no-kubeconfig'} does not exist, and "
                   "this is not a pod. Pass --kubeconfig FILE or set KUBECONFIG to the file your cluster's admin gave "
                   "you (kubectl config view shows the one kubectl uses)\n")


def test_an_unreachable_cluster_is_reported_with_the_server_kubeconfig_and_context(tmp_path):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text("""
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: far, context: {cluster: c, user: u, namespace: team}}]
current-context: far
""")
    code, out, err = cli("list", "--kubeconfig", str(kubeconfig))
    assert (code, out) == (3, "")
    assert err.startswith(f"Failed to list jobflow: cannot reach the API server https://127.0.0.1:1 (kubeconfig "
                          f"{kubeconfig}, context far): ")
    assert err.endswith("Is the cluster running? Otherwise choose another one with --kubeconfig or --context.\n")


def test_an_unknown_context_is_reported_with_the_file(tmp_path):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncontexts: []\nclusters: []\nusers: []\n")
    code, _, err = cli("-k", str(kubeconfig), "--context", "nope", "get", "x")
    assert code == 3
    assert err.startswith(f"Failed to get jobflow: cannot use kubeconfig {kubeconfig}, context nope: ")
    assert "pick another context with --context" in err


def test_offline_commands_never_import_the_api_client(tmp_path):
    example = Path(__file__).resolve().parents[2] / "examples" / "diamond"
    code = ("import sys; from kubectl_jobflow.cli import run; "
            f"codes = [run(['validate', '-f', {str(example)!r}]), run(['plan', '--local', '-f', {str(example)!r}]), "
            f"run(['graph', '-f', {str(example / 'jobflow.yaml')!r}, '--format', 'svg']), "
            f"run(['convert', '-f', {str(example / 'jobtemplates.yaml')!r}])]; "
            "assert codes == [0, 0, 0, 0], codes; "
            "assert not {'kubernetes', 'urllib3', 'apiclient.connection'} & set(sys.modules), 'the client was imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "KUBECONFIG": str(tmp_path / "none")})
    assert result.returncode == 0, result.stderr
