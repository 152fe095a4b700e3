"""Golden output: what each command prints, in each format, byte for byte, so output never drifts unnoticed.

Each case runs the command line in-process (``run(argv)``, as the console script does) against an API server held
in memory (:class:`Stored`: a few JobFlows, JobTemplates, a JobFlowTemplate and vcjobs, read through the same
``Cluster`` methods the real one answers) at a fixed time, and compares the exit code, standard output and standard
error with ``tests/unit/golden/<case>.txt``. The real API server's answers are ``tests/cluster/test_cli*.py``'s.

After a deliberate change of output: ``JOBFLOW_UPDATE_GOLDEN=1 .venv/bin/python -m pytest
tests/unit/test_cli_golden.py`` rewrites the files; review them with ``git diff`` before committing.
"""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from jobflow_core.vocabulary.api import VCJOB, ApiType
from kubectl_jobflow import cli, context, resources, runs, status, timeline

GOLDEN = Path(__file__).parent / "golden"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "diamond"
NOW = datetime(2026, 1, 2, 3, 10, 0, tzinfo=UTC)
UID = "4e96c682"

OBJECTS = f"""
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: test, namespace: default, uid: {UID}, resourceVersion: "12", creationTimestamp: "2026-01-02T03:04:00Z",
           labels: {{team: vision}}, managedFields: [{{manager: engine}}]}}
spec:
  flows:
  - name: a
  - {{name: b, dependsOn: {{targets: [a]}}}}
  - {{name: c, dependsOn: {{targets: [b]}}}}
status:
  state: {{phase: Running}}
  progress: 1/3
  queue: {{name: default, state: Admitted}}
  jobStatusList:
  - {{name: test-a, state: Completed, startTimestamp: "2026-01-02T03:04:01Z", endTimestamp: "2026-01-02T03:05:31Z",
     restartCount: 0}}
  - {{name: test-b, state: Running, startTimestamp: "2026-01-02T03:06:00Z", restartCount: 1}}
  waitingFlows:
  - {{name: c, jobName: test-c, waitingFor: [b], message: 'waiting for "b" to be Completed'}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {{name: nightly-1, namespace: team-b, uid: u2, resourceVersion: "15", creationTimestamp: "2026-01-01T03:00:00Z",
           labels: {{flow.volcano.sh/jobflow-template: nightly}}}}
spec:
  flows: [{{name: a}}]
status:
  state: {{phase: Failed, reason: JobFailed, message: 'vcjob "nightly-1-a" is Failed'}}
  progress: 0/1
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {{name: a, namespace: default, resourceVersion: "3", creationTimestamp: "2026-01-01T00:00:00Z"}}
spec: {{minAvailable: 1, tasks: [{{name: main, replicas: 1}}]}}
status: {{jobDependsOnList: [test-a], runs: 4, failureRate: 0.25}}
---
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {{name: nightly, namespace: team-b, resourceVersion: "9", creationTimestamp: "2025-12-01T00:00:00Z"}}
spec: {{schedule: "0 3 * * *", jobFlow: {{spec: {{flows: [{{name: a}}]}}}}}}
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: test-b
  namespace: default
  resourceVersion: "11"
  creationTimestamp: "2026-01-02T03:06:00Z"
  labels: {{volcano.sh/createdByJobFlow: default.test}}
  ownerReferences: [{{apiVersion: flow.volcano.sh/v1alpha1, kind: JobFlow, name: test, uid: {UID}, controller: true}}]
spec:
  tasks: [{{name: main, replicas: 2}}]
status:
  state: {{phase: Running}}
  retryCount: 1
  taskStatusCount: {{main: {{phase: {{Running: 2}}}}}}
"""


class Stored:
    """An API server holding :data:`OBJECTS`, answering the ``Cluster`` calls the read commands make."""

    def __init__(self) -> None:
        self.objects = [obj for obj in yaml.safe_load_all(OBJECTS)]

    def _of(self, api_type: ApiType, namespace: str | None) -> list[dict]:
        return [obj for obj in self.objects if obj["kind"] == api_type.kind
                and obj["apiVersion"] == api_type.api_version
                and namespace in (None, obj["metadata"]["namespace"])]

    def get(self, api_type: ApiType, namespace: str, name: str) -> dict:
        from apiclient.cluster import KubeError

        for obj in self._of(api_type, namespace):
            if obj["metadata"]["name"] == name:
                return obj
        raise KubeError(f'{api_type.plural}.{api_type.group} "{name}" not found', status=404)

    def find(self, api_type: ApiType, namespace: str, name: str) -> dict | None:
        return next((obj for obj in self._of(api_type, namespace) if obj["metadata"]["name"] == name), None)

    def list(self, api_type: ApiType, namespace: str | None, *, label_selector: str | None = None,
             limit: int | None = None) -> dict:
        wanted = dict(term.split("=", 1) for term in label_selector.split(",")) if label_selector else {}
        items = [{key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
                 for obj in self._of(api_type, namespace)
                 if wanted.items() <= (obj["metadata"].get("labels") or {}).items()]
        return {"apiVersion": api_type.api_version, "kind": f"{api_type.kind}List",
                "metadata": {"resourceVersion": "20"}, "items": items}

    def create(self, api_type: ApiType, namespace: str, body: dict) -> dict:
        if self.find(api_type, namespace, body["metadata"]["name"]) is not None:
            from apiclient.cluster import KubeError

            raise KubeError(f'{api_type.plural}.{api_type.group} "{body["metadata"]["name"]}" already exists',
                            status=409)
        return body

    def delete(self, api_type: ApiType, namespace: str, name: str) -> dict:
        return self.get(api_type, namespace, name)

    def merge_patch(self, api_type: ApiType, namespace: str, name: str, patch: dict) -> dict:
        obj = self.get(api_type, namespace, name)
        return {**obj, "spec": {**obj["spec"], **patch.get("spec", {})}}

    def jobs_of(self, jobflow: dict) -> list[dict]:
        return self._of(VCJOB, jobflow["metadata"]["namespace"])

    def close(self) -> None:
        pass


CASES = {
    "get": ["get"],
    "get-all-namespaces": ["get", "-A"],
    "get-no-headers": ["get", "-A", "--no-headers"],
    "get-selector": ["get", "-A", "-l", "team=vision"],
    "get-wide": ["get", "-o", "wide"],
    "get-name": ["get", "-A", "-o", "name"],
    "get-one-json": ["get", "test", "-o", "json"],
    "get-yaml": ["get", "-o", "yaml"],
    "get-jsonpath": ["get", "-A", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.state.phase}{'\\n'}{end}"],
    "get-custom-columns": ["get", "-A", "-o", "custom-columns=NAME:.metadata.name,QUEUE:.status.queue.state"],
    "get-missing": ["get", "nope"],
    "get-name-and-all": ["get", "test", "-A"],
    "get-empty": ["get", "-n", "empty"],
    "list": ["list", "-A"],
    "template-get": ["jt", "get"],
    "template-get-wide": ["jt", "get", "-o", "wide"],
    "template-get-name": ["template", "get", "-o", "name"],
    "create": ["create", "-f", str(EXAMPLE)],
    "create-existing": ["jt", "create", "-f", str(EXAMPLE / "jobtemplates.yaml")],
    "delete": ["delete", "test"],
    "delete-missing": ["jt", "delete", "nope"],
    "suspend": ["suspend", "test"],
    "retry-not-failed": ["retry", "test"],
    "stop": ["stop", "test"],
    "approve-not-a-gate": ["approve", "test", "b"],
    "describe": ["describe", "test"],
    "describe-json": ["describe", "test", "-o", "json"],
    "status": ["status", "test"],
    "status-json": ["status", "test", "-o", "json"],
    "status-name": ["status", "test", "-o", "name"],
    "status-jsonpath": ["status", "test", "-o", "jsonpath={.flows[*].phase}"],
    "history": ["history", "nightly", "-n", "team-b"],
    "history-name": ["history", "nightly", "-n", "team-b", "-o", "name"],
    "graph": ["graph", "test"],
    "graph-dot": ["graph", "test", "-o", "dot"],
    "graph-mermaid": ["graph", "test", "--format", "mermaid"],
    "timeline": ["timeline", "test"],
    "validate": ["validate", "-f", str(EXAMPLE)],
    "validate-json": ["validate", "-f", str(EXAMPLE / "jobflow.yaml"), "-o", "json"],
    "plan": ["plan", "--local", "-f", str(EXAMPLE)],
    "plan-jsonpath": ["plan", "--local", "-f", str(EXAMPLE), "-o", "jsonpath={.start[*].job}"],
    "convert": ["convert", "-f", str(EXAMPLE / "jobtemplates.yaml")],
    "convert-json": ["convert", "-f", str(EXAMPLE / "jobtemplates.yaml"), "-o", "json"],
    "usage-mistyped-command": ["gte"],
    "usage-unknown-flag": ["status", "test", "--bogus"],
    "usage-bad-output": ["get", "-o", "xml"],
    "usage-group-alone": ["jt"],
    "usage-kubeconfig-is-a-kustomization": ["create", "-k", str(GOLDEN / "kustomized")],
    "usage-create-without-file": ["create"],
    "completion-bash": ["completion", "bash"],
    "completion-zsh": ["completion", "zsh"],
}


@pytest.fixture
def stored(monkeypatch, tmp_path) -> Stored:
    cluster = Stored()
    monkeypatch.setattr(context.Context, "cluster", property(lambda ctx: cluster))
    for module in (resources, status, runs, timeline):
        monkeypatch.setattr(module, "utc_now", lambda: NOW)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))  # the namespace: default; validate: no cluster
    monkeypatch.setenv("COLUMNS", "120")  # argparse wraps usage to the terminal
    return cluster


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_output_is_the_golden_one(stored, case):
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(CASES[case], out=out, err=err)
    shown = f"exit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}".replace(str(EXAMPLE), "EXAMPLE")
    shown = shown.replace(str(GOLDEN), "GOLDEN")
    golden = GOLDEN / f"{case}.txt"
    if os.environ.get("JOBFLOW_UPDATE_GOLDEN"):
        golden.write_text(shown)
    assert shown == golden.read_text(), f"{case}: output changed (JOBFLOW_UPDATE_GOLDEN=1 rewrites the file)"


def test_every_golden_file_has_its_case():
    assert {path.stem for path in GOLDEN.glob("*.txt")} == set(CASES)
