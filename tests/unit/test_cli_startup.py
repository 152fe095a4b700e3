"""What the command line costs before it does anything: the modules ``--help`` imports, and the API round trips a
read makes (counted on a real HTTP server, not timed)."""

from __future__ import annotations

import io
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest

from jobflow_core.vocabulary.api import JOBFLOW
from api_standin import send_json, serving
from kubectl_jobflow import cli

HEAVY = ("jobflow_core", "pydantic", "yaml", "apiclient", "urllib3", "display", "kubernetes", "celpy")
"""The core, its models, YAML, the API client, the views: what a command may load once it runs, never ``--help``."""


@pytest.mark.parametrize("argv", [["--help"], ["get", "--help"], ["status", "--help"], ["template", "create", "-h"],
                                  ["gte"]])
def test_help_and_usage_errors_import_nothing_of_the_core_the_client_or_yaml(argv):
    probe = ("import sys\nfrom kubectl_jobflow.__main__ import main\nsys.argv[1:] = " + repr(argv) + "\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted({name.split('.')[0] for name in sys.modules}), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    loaded = set(eval(result.stderr.strip().splitlines()[-1]))
    assert not loaded & set(HEAVY), f"{argv} imported {sorted(loaded & set(HEAVY))}"


def test_the_parsers_api_version_is_the_cores():
    assert cli.API_VERSION == JOBFLOW.api_version


class Answers(BaseHTTPRequestHandler):
    """An HTTP server that answers a JobFlow GET and LIST and counts every request."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Answers.seen.append(self.path)
        flow = {"apiVersion": JOBFLOW.api_version, "kind": "JobFlow", "spec": {"flows": [{"name": "a"}]},
                "metadata": {"name": "test", "namespace": "default", "creationTimestamp": "2026-01-02T03:04:00Z",
                             "resourceVersion": "7"}}
        if self.path.split("?")[0].endswith("/jobflows"):
            body = {"kind": "JobFlowList", "metadata": {"resourceVersion": "7"}, "items": [flow]}
        else:
            body = flow
        send_json(self, body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def server(tmp_path):
    Answers.seen = []
    with serving(Answers, tmp_path / "config"):
        yield tmp_path / "config"


@pytest.mark.parametrize(("argv", "requests"), [
    (["get", "test"], ["/apis/flow.volcano.sh/v1alpha1/namespaces/default/jobflows/test"]),
    (["get"], ["/apis/flow.volcano.sh/v1alpha1/namespaces/default/jobflows"]),
    (["get", "-A", "-l", "team=x"], ["/apis/flow.volcano.sh/v1alpha1/jobflows?labelSelector=team%3Dx"]),
])
def test_a_get_costs_one_api_round_trip(server: Path, argv, requests):
    out = io.StringIO()
    assert cli.run([*argv, "--kubeconfig", str(server)], out=out, err=io.StringIO()) == 0
    assert "test" in out.getvalue()
    assert Answers.seen == requests
