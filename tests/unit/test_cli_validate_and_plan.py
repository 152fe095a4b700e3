"""``validate`` gives the validating webhook's verdict offline; ``plan --local`` the planner's, creating nothing."""

import io
import json
from pathlib import Path

import pytest
import yaml

from jobflow_core.validation.review import JOBFLOW, JOBTEMPLATE, decide
from kubectl_jobflow.cli import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "diamond"

CYCLE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: loop}
spec:
  flows:
  - {name: a, dependsOn: {targets: [b]}}
  - {name: b, dependsOn: {targets: [a]}}
  - {name: c, dependsOn: {targets: [x]}}
"""

BAD_TEMPLATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {name: big}
spec:
  minAvailable: 3
  tasks: [{name: main, replicas: 1}]
"""

TEMPLATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata: {{name: {name}}}
spec:
  minAvailable: 1
  tasks: [{{name: main, replicas: 1, template: {{spec: {{containers: [{{name: main, image: busybox}}]}}}}}}]
"""


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


def write(tmp_path: Path, text: str, name: str = "objects.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def webhook_message(kind, obj: dict, namespace: str = "default") -> str:
    request = {"uid": "u", "operation": "CREATE", "namespace": namespace, "object": obj,
               "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": obj["kind"]}}
    return decide(request, kind=kind).message


def test_the_seed_example_is_valid_and_exits_0(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    code, out, err = cli("validate", "-f", str(EXAMPLE))
    assert code == 0
    assert err == ("note: vcjob specs are not checked for unknown fields, Volcano's schema of them could not be read: "
                   "no kubeconfig (pass --kubeconfig, or set KUBECONFIG, to check them against a cluster's Volcano)\n")
    assert out.splitlines() == [f"{EXAMPLE}/jobflow.yaml#1: JobFlow default/test is valid"] + [
        f"{EXAMPLE}/jobtemplates.yaml#{i}: JobTemplate default/{name} is valid" for i, name in enumerate("abcde", 1)]


def test_each_problem_is_listed_in_the_webhooks_words_and_the_exit_is_2(tmp_path):
    path = write(tmp_path, CYCLE + "---" + BAD_TEMPLATE)
    code, out, _ = cli("validate", "-f", path, "-n", "team")
    assert code == 2
    assert out.splitlines() == [
        f"{path}#1: JobFlow team/loop is invalid:",
        '  - jobflow Flow is not DAG: vertex is not defined: x (flow "c" depends on "x", which is not a flow of this '
        'JobFlow: add a flow named "x" or remove it from dependsOn.targets)',
        "  - jobflow Flow is not DAG: a -> b -> a (a flow must not depend on itself, directly or through other "
        "flows: remove one of these dependencies)",
        f"{path}#2: JobTemplate team/big is invalid:",
        "  - job 'minAvailable' should not be greater than total replicas in tasks (spec.minAvailable is 3 but the "
        "tasks have 1 replicas in all: lower minAvailable or add replicas)",
    ]


def test_the_json_verdict_carries_the_webhooks_exact_denial_message(tmp_path):
    path = write(tmp_path, CYCLE + "---" + BAD_TEMPLATE)
    code, out, _ = cli("validate", "-f", path, "-o", "json")
    flow, template = json.loads(out)
    assert code == 2
    assert flow["message"] == webhook_message(JOBFLOW, yaml.safe_load(CYCLE))
    assert template["message"] == webhook_message(JOBTEMPLATE, yaml.safe_load(BAD_TEMPLATE))
    assert (flow["valid"], template["valid"]) == (False, False)


def test_the_namespace_counts_as_it_does_for_the_webhook_label_lengths(tmp_path):
    path = write(tmp_path, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                           "spec: {flows: [{name: a}]}\n")
    assert cli("validate", "-f", path, "-n", "short")[0] == 0
    code, out, _ = cli("validate", "-f", path, "-n", "n" * 62)
    assert code == 2
    assert "label volcano.sh/createdByJobFlow value" in out


def test_an_object_the_webhook_cannot_read_gets_its_message(tmp_path):
    path = write(tmp_path, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                           "spec: {flows: [{dependsOn: {targets: [a]}}]}\n")
    code, out, _ = cli("validate", "-f", path)
    assert code == 2
    assert "this object cannot be read as a JobFlow: spec.flows.0.name: Field required (fix these fields)" in out


def test_other_kinds_are_not_checked_and_say_so(tmp_path):
    path = write(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    code, out, err = cli("validate", "-f", path)
    assert (code, out) == (0, "")
    assert err == (f"{path}#1: a ConfigMap is not checked: validate takes JobFlows, JobTemplates and "
                   "JobFlowTemplates (add kind: JobFlow, JobTemplate or JobFlowTemplate if this is one)\n")


def test_plan_local_starts_the_roots_and_says_what_each_other_flow_waits_for():
    code, out, err = cli("plan", "-f", str(EXAMPLE), "--local")
    assert (code, err) == (0, "")
    assert out == (
        f"JobFlow default/test ({EXAMPLE}/jobflow.yaml#1): would be Pending\n"
        "  start now:\n"
        f"    a   vcjob test-a from JobTemplate default/a ({EXAMPLE}/jobtemplates.yaml#1)\n"
        "  wait:\n"
        '    b   waiting for "a" to be Completed\n'
        '    c   waiting for "b" to be Completed\n'
        '    d   waiting for "b" to be Completed\n'
        '    e   waiting for "c", "d" to be Completed\n'
    )


def test_plan_yaml_has_the_vcjob_manifests_that_would_be_created():
    code, out, _ = cli("plan", "-f", str(EXAMPLE), "--local", "-o", "yaml", "-n", "team")
    result = yaml.safe_load(out)
    assert code == 0
    assert [start["flow"] for start in result["start"]] == ["a"]
    [job] = result["jobs"]
    assert job["metadata"]["name"] == "test-a"
    assert job["metadata"]["namespace"] == "team"
    assert job["metadata"]["labels"] == {"volcano.sh/createdByJobFlow": "team.test",
                                         "volcano.sh/createdByJobTemplate": "team.a"}
    assert job["spec"]["tasks"][0]["name"] == "nginx"


def test_plan_blocks_on_a_missing_jobtemplate_and_exits_1(tmp_path):
    path = write(tmp_path, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                           "spec: {flows: [{name: a}, {name: b}]}\n---" + TEMPLATE.format(name="a"))
    code, out, _ = cli("plan", "-f", path, "--local")
    assert code == 1
    assert out.splitlines() == [
        f"JobFlow default/f ({path}#1): would be Pending",
        '  blocked, TemplateNotFound: JobTemplate "default/b" not found: create it (kubectl apply -f ...) and the '
        "flow will continue",
        "  start now:",
        f"    a   vcjob f-a from JobTemplate default/a ({path}#2)",
        "  wait:",
        '    b   JobTemplate "default/b" not found: create it (kubectl apply -f ...) and the flow will continue',
    ]


def test_plan_of_an_invalid_spec_starts_nothing(tmp_path):
    code, out, _ = cli("plan", "-f", write(tmp_path, CYCLE), "--local")
    assert code == 2
    assert "would be Failed" in out
    assert "blocked, InvalidSpec: jobflow Flow is not DAG" in out
    assert "start now: nothing" in out


def test_plan_of_a_probe_waits_for_the_probe(tmp_path):
    path = write(tmp_path, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: p}
spec:
  flows:
  - name: a
  - name: b
    dependsOn: {targets: [a], probe: {taskStatusList: [{taskName: main, phase: Running}]}}
---""" + TEMPLATE.format(name="a") + "---" + TEMPLATE.format(name="b"))
    code, out, _ = cli("plan", "-f", path, "--local", "-o", "json")
    result = json.loads(out)
    assert code == 0
    assert [start["flow"] for start in result["start"]] == ["a"]
    [wait] = result["wait"]
    assert (wait["flow"], wait["waitingFor"]) == ("b", ["a"])
    assert wait["message"].startswith("waiting for probes: ")


def test_plan_needs_a_jobflow(tmp_path):
    path = write(tmp_path, TEMPLATE.format(name="a"))
    assert cli("plan", "-f", path, "--local") == (
        2, "", f"Failed to plan: no JobFlow in {path}: plan needs one (kind: JobFlow)\n")
