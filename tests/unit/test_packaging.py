"""Dependencies you can reproduce: the command line installs alone from its lock, and the lowest versions
pyproject.toml allows (its floors) install and run every program, so a floor the code cannot work with fails here.

Each test makes a throwaway environment with uv (from PyPI, as CI reaches it; uv's cache under ~/.cache/uv keeps a
second run quick) and installs this tree as a wheel, without dependencies, on top of what it tests.
"""

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UV = str(Path(sys.executable).with_name("uv"))
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]

SMOKE = """
import json
from handlers import create_app
from apiclient import cloudevents
from apiclient.watch import Change
from jobflow_core.flows.conditions import evaluate
from jobflow_core.vocabulary.api import JOBFLOW
import eventsource, dashboard.app, kubectl_jobflow.cli, display.facts

client = create_app({"TESTING": True}).test_client()
assert client.get("/version").json == {"version": %r}
assert client.post("/", data=b"{}").status_code == 400
headers, body = cloudevents.encode(cloudevents.Envelope(JOBFLOW, Change.ADD, {"metadata": {"name": "a"}}),
                                   mode=cloudevents.Mode.REFERENCE, source="https://k", overrides={})
assert headers["ce-type"] == "dev.knative.apiserver.ref.add", headers
assert evaluate('"Ab".lowerAscii() == "ab" && "a1b2".findAll("[0-9]") == ["1", "2"]', variables={}).holds
print("ok")
""" % VERSION


def environment(tmp_path: Path, requirements: Path) -> Path:
    """A new environment with ``requirements`` (hashes required when they have them) and this tree; its python."""
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    hashes = ["--require-hashes"] if "--hash=" in requirements.read_text() else []
    for args in ([*hashes, "-r", str(requirements)], ["--no-deps", str(REPO)]):
        subprocess.run([UV, "pip", "install", "--quiet", "--python", str(python), *args], check=True,
                       capture_output=True)
    return python


def test_the_command_line_installs_alone_from_its_lock_and_says_its_version(tmp_path: Path):
    python = environment(tmp_path, REPO / "requirements" / "cli.txt")
    command = python.with_name("kubectl-jobflow")

    said = subprocess.run([str(command), "--version"], capture_output=True, text=True, check=True)
    assert said.stdout == f"kubectl-jobflow {VERSION}\n"
    for server in ("gunicorn", "flask", "cloudevents", "prometheus_client", "gevent", "kubernetes"):
        assert subprocess.run([str(python), "-c", f"import {server}"], capture_output=True).returncode != 0, server
    dashboard = subprocess.run([str(command), "dashboard"], capture_output=True, text=True)
    assert dashboard.returncode == 1
    assert "pip install 'volcano-jobflow-serverless[dashboard]'" in dashboard.stderr
    valid = subprocess.run([str(command), "validate", "-f", str(REPO / "examples" / "diamond" / "jobflow.yaml")],
                           capture_output=True, text=True, env={"KUBECONFIG": str(tmp_path / "none")})
    assert (valid.returncode, valid.stdout.split(": ", 1)[-1]) == (0, "JobFlow default/test is valid\n")


def test_the_floors_of_every_dependency_install_and_run_every_program(tmp_path: Path):
    floors = tmp_path / "floors.txt"
    subprocess.run([UV, "pip", "compile", "--quiet", str(REPO / "pyproject.toml"), "--extra", "server", "--extra",
                    "dashboard", "--resolution", "lowest-direct", "--python-version", "3.11", "-o", str(floors)],
                   check=True)
    python = environment(tmp_path, floors)

    ran = subprocess.run([str(python), "-c", SMOKE], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0 and ran.stdout.strip().endswith("ok"), ran.stderr[-3000:]
