"""kubectl's conventions in the command line, each flag and rule on its own: ``-o`` parsing, durations, the exit
code of each cause, usage errors, empty input and kustomizations, one line per cause, and the watch that follows
through 410 Gone and gives up (exit 5) when the API server stays away. The watch runs against a real HTTP server
that answers as the API server's watch endpoint does."""

from __future__ import annotations

import argparse
import io
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

from api_standin import send_json, serving
from apiclient.cluster import Cluster, KubeError, Target
from apiclient.follow import WatchLost, follow
from jobflow_core.vocabulary.api import JOBFLOW
from kubectl_jobflow import exits
from kubectl_jobflow.cli import _duration, run
from kubectl_jobflow.documents import DocumentError, read
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.formats import OBJECTS, Output, output_type


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return run(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


@pytest.mark.parametrize(("given", "read_as"), [
    ("wide", Output("wide")), ("name", Output("name")), ("json", Output("json")),
    ("jsonpath={.a}", Output("jsonpath", "{.a}")), ("custom-columns=N:.a", Output("custom-columns", "N:.a")),
])
def test_each_kubectl_output_format_is_read(given, read_as):
    assert output_type(OBJECTS)(given) == read_as


@pytest.mark.parametrize(("given", "said"), [
    ("xml", "the allowed formats are: wide, name, json, yaml, jsonpath=..., custom-columns=..."),
    ("jsonpath", "jsonpath needs a template: -o 'jsonpath=...'"),
    ("jsonpath=", "jsonpath= needs a template"),
])
def test_a_format_that_is_not_one_says_which_are(given, said):
    with pytest.raises(argparse.ArgumentTypeError, match=said.replace(".", r"\.").replace("(", r"\(")):
        output_type(OBJECTS)(given)


@pytest.mark.parametrize(("given", "seconds"), [("30", 30), ("30s", 30), ("5m", 300), ("1h30m", 5400),
                                                ("1.5s", 1.5), ("500ms", 0.5), ("-1s", -1), ("0", 0)])
def test_timeouts_read_as_go_durations(given, seconds):
    assert _duration(given) == seconds


@pytest.mark.parametrize("given", ["", "5x", "m5", "1h 2m"])
def test_a_timeout_that_is_no_duration_is_refused(given):
    with pytest.raises(argparse.ArgumentTypeError, match="expected a duration"):
        _duration(given)


@pytest.mark.parametrize(("error", "code"), [
    (CommandError("x"), exits.FAILED), (CommandError("x", code=exits.USAGE), exits.USAGE),
    (KubeError("cannot reach"), exits.UNREACHABLE), (KubeError("refused", status=401), exits.UNREACHABLE),
    (KubeError("forbidden", status=403), exits.UNREACHABLE),
    (KubeError('admission webhook "validate.jobflow" denied the request', status=403), exits.USAGE),
    (KubeError("invalid", status=422), exits.USAGE), (KubeError("strict decoding", status=400), exits.USAGE),
    (KubeError("not found", status=404), exits.FAILED), (KubeError("exists", status=409), exits.FAILED),
    (KubeError("etcd", status=500), exits.FAILED), (DocumentError("bad yaml"), exits.USAGE),
    (WatchLost("gone"), exits.WATCH_LOST), (ValueError("a bug"), None),
])
def test_each_cause_has_its_exit_code(error, code):
    assert exits.code_of(error) == code


def test_a_mistyped_command_gets_did_you_mean_and_exit_2():
    code, out, err = cli("stauts")
    assert (code, out) == (2, "")
    assert "unknown command 'stauts' for 'kubectl jobflow'\n\nDid you mean this?\n\tstatus\n" in err


def test_a_flag_a_command_does_not_know_gets_that_commands_usage():
    code, _, err = cli("wait", "x", "--four=phase=Succeed")
    assert code == 2
    assert err.startswith("usage: kubectl jobflow wait ")
    assert err.endswith("kubectl jobflow wait: error: unrecognized arguments: --four=phase=Succeed\n")


def test_an_empty_file_is_invalid_input(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("---\n# nothing\n")
    assert cli("validate", "-f", str(empty)) == (
        2, "", f"Failed to validate: {empty} holds no object: give a file with at least one JobFlow or JobTemplate\n")


def test_a_kustomization_given_as_a_file_or_a_kubeconfig_points_to_kustomize(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("resources: [flow.yaml]\n")
    (tmp_path / "flow.yaml").write_text("kind: JobFlow\nmetadata: {name: x}\n")
    with pytest.raises(DocumentError, match=f"{tmp_path} is a kustomization: build it with --kustomize {tmp_path}"):
        read([str(tmp_path)])
    code, _, err = cli("create", "-k", str(tmp_path))
    assert code == 2
    assert err.endswith(f"holds a kustomization: did you mean --kustomize {tmp_path}?\n")


def test_a_cluster_nobody_can_reach_is_reported_once_not_once_per_object(tmp_path):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text('apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\n'
                          "users: [{name: u, user: {token: t}}]\ncontexts: [{name: far, context: {cluster: c, user: u}}]\n"
                          "current-context: far\n")
    objects = tmp_path / "three.yaml"
    objects.write_text("---\n".join(f"kind: JobTemplate\nmetadata: {{name: t{n}}}\nspec: {{tasks: []}}\n"
                                    for n in range(3)))
    code, out, err = cli("create", "-f", str(objects), "--kubeconfig", str(kubeconfig), "--validate=false")
    assert (code, out, len(err.splitlines())) == (3, "", 1)
    assert err.startswith("Failed to create jobflow: cannot reach the API server https://127.0.0.1:1 ")


class WatchEndpoint(BaseHTTPRequestHandler):
    """The JobFlow list and watch of one namespace, as the API server answers them: the first watch says 410 Gone,
    the list then shows the object changed; the second watch streams one MODIFIED event and ends."""

    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        WatchEndpoint.requests.append(self.path)
        flow = {"metadata": {"name": "f", "namespace": "ns", "resourceVersion": "5"}}
        watches = sum("watch=true" in path for path in WatchEndpoint.requests)
        if "watch=true" not in self.path:
            lists = len(WatchEndpoint.requests) - watches
            flow["metadata"]["resourceVersion"] = "5" if lists == 1 else "8"
            lines = [{"metadata": {"resourceVersion": flow["metadata"]["resourceVersion"]}, "items": [flow]}]
        elif watches == 1:
            lines = [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}]
        else:
            lines = [{"type": "MODIFIED", "object": {"metadata": {**flow["metadata"], "resourceVersion": "9"}}}]
        send_json(self, *lines)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def endpoint(tmp_path):
    WatchEndpoint.requests = []
    with serving(WatchEndpoint, tmp_path / "config") as httpd:
        cluster = Cluster(Target(kubeconfig=str(tmp_path / "config")))
        yield httpd, cluster
        cluster.close()


def test_a_watch_that_gets_410_gone_lists_again_and_reports_only_what_changed(endpoint):
    _, cluster = endpoint
    changes = follow(cluster, JOBFLOW, "ns")
    seen = [(kind, obj["metadata"]["resourceVersion"]) for kind, obj in (next(changes) for _ in range(3))]
    # the first list (ADDED), the re-list after 410 (the object changed meanwhile: MODIFIED), then the watch
    assert seen == [("ADDED", "5"), ("MODIFIED", "8"), ("MODIFIED", "9")]
    assert [path.split("?")[0] for path in WatchEndpoint.requests] == [
        "/apis/flow.volcano.sh/v1alpha1/namespaces/ns/jobflows"] * 4
    assert ["watch=true" in path for path in WatchEndpoint.requests] == [False, True, False, True]


def test_a_watch_whose_api_server_stays_away_is_lost(endpoint):
    httpd, cluster = endpoint
    httpd.shutdown()
    httpd.server_close()
    with pytest.raises(WatchLost, match=r"lost the watch: the API server http://127\.0\.0\.1:\d+ did not answer for "
                                        r"0\.5s"):
        list(follow(cluster, JOBFLOW, "ns", patience=0.5))


def test_the_dashboard_on_an_unreachable_cluster_says_so_in_one_line():
    code, out, err = cli("dashboard", "--port", "0")
    assert (code, out, len(err.splitlines())) == (3, "", 1)
    assert err.startswith("Failed to serve the dashboard: no kubeconfig found: ")


def test_get_watch_prints_a_row_per_change_in_the_columns_of_the_list(endpoint, tmp_path):
    import subprocess
    import sys

    kubeconfig = tmp_path / "config"  # the endpoint fixture's
    watch = subprocess.Popen([sys.executable, "-m", "kubectl_jobflow", "get", "-w", "-n", "ns", "--kubeconfig",
                              str(kubeconfig)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [watch.stdout.readline() for _ in range(4)]
    finally:
        watch.kill()
        watch.communicate(timeout=10)
    # the list (header and row), then one row per change: the re-list after 410, then the watch's event
    assert [line.split() for line in lines] == [["Name", "Namespace", "Phase", "Age", "Progress"],
                                                ["f", "ns", "<unknown>", "0/0"], ["f", "ns", "<unknown>", "0/0"],
                                                ["f", "ns", "<unknown>", "0/0"]]
    assert len({len(line) for line in lines}) == 1  # every line as wide as the list's
