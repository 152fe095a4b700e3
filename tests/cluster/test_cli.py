"""``kubectl jobflow`` against the real API server: vcctl's commands, their tables and exit codes, plan, convert.

Most tests run the command line in-process (``run(argv)``, as the console script does); one goes through kubectl's
own plugin mechanism, with ``.venv/bin`` on PATH, exactly as a user types it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from devcluster.testing import LocalCluster
from objects import apply, jobflow, template, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

BIN = Path(sys.executable).parent

FLOW_AB = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: ab}
spec:
  flows:
  - name: a
  - {name: b, dependsOn: {targets: [a]}}
"""

CYCLE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: loop}
spec:
  flows:
  - {name: a, dependsOn: {targets: [b]}}
  - {name: b, dependsOn: {targets: [a]}}
"""


def jobflow_yaml(name: str, flows: str) -> str:
    return f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {{name: {name}}}\nspec: {{flows: {flows}}}\n"


def write(tmp_path: Path, text: str, name: str = "objects.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def table_age(line: str) -> str:
    """The Age cell of a jobflow table line (ages of fresh objects: 0s..99s)."""
    return re.search(r"\s(\d{1,2}s)\s", line).group(1)


def test_create_prints_vcctls_lines_and_exits_1_when_anything_failed(cli, namespace: str, tmp_path) -> None:
    path = write(tmp_path, template("a") + "---\n" + template("b") + "---\n" + FLOW_AB)

    assert cli("create", "-f", path, "-n", namespace) == (
        0, f"Created JobTemplate: {namespace}/a\nCreated JobTemplate: {namespace}/b\nCreated JobFlow: {namespace}/ab\n",
        "")
    code, out, err = cli("create", "-f", path, "-n", namespace)

    assert (code, out) == (1, "")
    assert err.splitlines() == [
        'Failed to create JobTemplate: jobtemplates.flow.volcano.sh "a" already exists',
        'Failed to create JobTemplate: jobtemplates.flow.volcano.sh "b" already exists',
        'Failed to create JobFlow: jobflows.flow.volcano.sh "ab" already exists',
    ]


def test_create_refuses_an_invalid_jobflow_with_the_webhooks_message_and_sends_nothing(
        cli, cluster: LocalCluster, namespace: str, tmp_path) -> None:
    path = write(tmp_path, CYCLE)

    code, out, err = cli("create", "-f", path, "-n", namespace)

    assert (code, out) == (2, "")
    assert err == (f"Failed to create JobFlow: {path}#1: jobflow Flow is not DAG: a -> b -> a (a flow must not "
                   "depend on itself, directly or through other flows: remove one of these dependencies) (or skip "
                   "this check with --validate=false)\n")
    assert jobflow(cluster, namespace, "loop") is None


def test_create_with_validate_false_leaves_the_decision_to_the_api_server(cli, namespace: str, tmp_path) -> None:
    code, out, err = cli("create", "-f", write(tmp_path, CYCLE), "-n", namespace, "--validate=false")

    # Without our validating webhook installed the API server admits it; with it, the server's denial is shown.
    assert (code, out, err) == (0, f"Created JobFlow: {namespace}/loop\n", "") or \
        (code == 1 and err.startswith("Failed to create JobFlow: ") and "--validate=false" not in err)


def test_list_prints_vcctls_table_plus_progress_exactly(cli, cluster: LocalCluster, namespace: str,
                                                         engine) -> None:
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, jobflow_yaml("done", "[{name: a}]"))
    apply(cluster, namespace, jobflow_yaml("a-much-longer-name", "[{name: missing}, {name: a}]"))
    wait_for_phase(cluster, namespace, "done", "Succeed")
    cluster.wait_until("a-much-longer-name to complete a", lambda: ((jobflow(cluster, namespace, "a-much-longer-name")
                                                                     .get("status") or {}).get("progress") == "1/2"),
                       timeout=60)

    code, out, err = cli("list", "-n", namespace)

    lines = out.splitlines()
    # Name: 18 + 4; Namespace: 12 + 4; Phase: 7 + 4; Age: len("Age") + 4 (ages below 100s); Progress: 8 + 4.
    assert (code, err, len(lines)) == (0, "", 3)
    assert lines == [
        f"{'Name':<22}{'Namespace':<16}{'Phase':<11}{'Age':<7}{'Progress':<12}",
        f"{'a-much-longer-name':<22}{namespace:<16}{'Running':<11}{table_age(lines[1]):<7}{'1/2':<12}",
        f"{'done':<22}{namespace:<16}{'Succeed':<11}{table_age(lines[2]):<7}{'1/1':<12}",
    ]
    assert lines[0] == "Name                  Namespace       Phase      Age    Progress    "


def test_list_all_namespaces_empty_namespace_and_json(cli, cluster: LocalCluster, namespace: str,
                                                      tmp_path) -> None:
    assert cli("list", "-n", namespace) == (0, "No resources found\n", "")
    apply(cluster, namespace, jobflow_yaml("x", "[{name: a}]"))

    code, out, _ = cli("list", "-A")
    listing = json.loads(cli("list", "-n", namespace, "-o", "json")[1])

    assert code == 0
    assert re.search(rf"^x\s+{namespace}\s+", out, re.M)
    assert listing["kind"] == "JobFlowList"
    assert [item["metadata"]["name"] for item in listing["items"]] == ["x"]
    assert "managedFields" not in listing["items"][0]["metadata"]


def test_get_by_argument_or_vcctls_name_flag_prints_one_row(cli, cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, jobflow_yaml("x", "[{name: a}, {name: b}]"))

    code, out, err = cli("get", "x", "-n", namespace)
    flag = cli("get", "-N", "x", "-n", namespace)

    lines = out.splitlines()
    assert (code, err) == (0, "")
    assert lines == [f"{'Name':<8}{'Namespace':<16}{'Phase':<9}{'Age':<7}{'Progress':<12}",
                     f"{'x':<8}{namespace:<16}{'':<9}{table_age(lines[1]):<7}{'0/2':<12}"]
    assert flag[0] == 0 and flag[1].splitlines()[0] == lines[0]


def test_get_of_a_missing_jobflow_exits_1_with_the_api_servers_message(cli, namespace: str) -> None:
    assert cli("get", "nope", "-n", namespace) == (
        1, "", 'Failed to get jobflow: jobflows.flow.volcano.sh "nope" not found\n')


def test_describe_prints_the_object_with_apiversion_and_kind_and_without_managed_fields(
        cli, cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, FLOW_AB)
    apply(cluster, namespace, jobflow_yaml("other", "[{name: a}]"))

    as_yaml = yaml.safe_load(cli("describe", "ab", "-n", namespace)[1])
    as_json = json.loads(cli("describe", "-N", "ab", "-n", namespace, "--format", "json")[1])
    everything = list(yaml.safe_load_all(cli("describe", "-n", namespace)[1]))

    assert as_yaml == as_json
    assert (as_yaml["apiVersion"], as_yaml["kind"]) == ("flow.volcano.sh/v1alpha1", "JobFlow")
    assert as_yaml["spec"] == yaml.safe_load(FLOW_AB)["spec"]
    assert "managedFields" not in as_yaml["metadata"]
    assert [(doc["kind"], doc["metadata"]["name"]) for doc in everything] == [("JobFlow", "ab"), ("JobFlow", "other")]


def test_delete_by_name_then_again_exits_1(cli, cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, FLOW_AB)

    assert cli("delete", "ab", "-n", namespace) == (0, f"Deleted JobFlow: {namespace}/ab\n", "")
    assert jobflow(cluster, namespace, "ab") is None
    assert cli("delete", "-N", "ab", "-n", namespace) == (
        1, "", 'Failed to delete JobFlow: jobflows.flow.volcano.sh "ab" not found\n')


def test_delete_from_a_file_deletes_what_it_can_and_reports_the_rest(cli, cluster: LocalCluster,
                                                                      namespace: str, tmp_path) -> None:
    apply(cluster, namespace, template("a") + "---\n" + FLOW_AB)
    path = write(tmp_path, template("a") + "---\n" + template("b") + "---\n" + FLOW_AB)

    code, out, err = cli("delete", "-f", path, "-n", namespace)

    assert code == 1
    assert out == f"Deleted JobTemplate: {namespace}/a\nDeleted JobFlow: {namespace}/ab\n"
    assert err == 'Failed to delete JobTemplate: jobtemplates.flow.volcano.sh "b" not found\n'


def test_template_commands_use_vcctls_jobtemplate_table(cli, cluster: LocalCluster, namespace: str,
                                                        tmp_path) -> None:
    path = write(tmp_path, template("a") + "---\n" + template("longer-name"))

    assert cli("template", "create", "-f", path, "-n", namespace)[:2] == (
        0, f"Created JobTemplate: {namespace}/a\nCreated JobTemplate: {namespace}/longer-name\n")
    assert cli("template", "list", "-n", namespace)[1] == (
        f"{'Name':<15}{'Namespace':<16}\n{'a':<15}{namespace:<16}\n{'longer-name':<15}{namespace:<16}\n")
    assert cli("jt", "get", "a", "-n", namespace)[1] == f"{'Name':<8}{'Namespace':<16}\n{'a':<8}{namespace:<16}\n"
    described = yaml.safe_load(cli("jobtemplate", "describe", "a", "-n", namespace)[1])
    assert (described["kind"], described["spec"]["tasks"][0]["name"]) == ("JobTemplate", "main")
    assert cli("template", "delete", "a", "-n", namespace) == (0, f"Deleted JobTemplate: {namespace}/a\n", "")
    assert cli("template", "get", "a", "-n", namespace)[0] == 1


def test_template_create_refuses_a_jobflow_and_sends_nothing(cli, cluster: LocalCluster, namespace: str,
                                                             tmp_path) -> None:
    path = write(tmp_path, template("a") + "---\n" + FLOW_AB)

    code, out, err = cli("template", "create", "-f", path, "-n", namespace)

    assert (code, out) == (2, "")
    assert err == (f"Failed to create jobtemplate: {path}#2 is a JobFlow, not a JobTemplate (use kubectl apply -f "
                   "for other kinds; nothing was sent)\n")
    assert cli("template", "list", "-n", namespace)[1] == "No resources found\n"


def test_plan_takes_missing_templates_from_the_cluster_and_creates_nothing(cli, cluster: LocalCluster,
                                                                          namespace: str, tmp_path) -> None:
    apply(cluster, namespace, template("a"))
    path = write(tmp_path, FLOW_AB)

    code, out, err = cli("plan", "-f", path, "-n", namespace)

    assert (code, err) == (0, "")
    assert out == (f"JobFlow {namespace}/ab ({path}#1): would be Pending\n"
                   "  start now:\n"
                   f"    a   vcjob ab-a from JobTemplate {namespace}/a (the cluster)\n"
                   "  wait:\n"
                   '    b   waiting for "a" to be Completed\n')
    assert jobflow(cluster, namespace, "ab") is None
    assert vcjobs(cluster, namespace) == {}


def test_plan_sees_a_vcjob_that_would_take_a_flows_name(cli, cluster: LocalCluster, namespace: str,
                                                        tmp_path) -> None:
    apply(cluster, namespace, template("a"))
    # A vcjob made from the same template by hand (convert), with the name flow a of JobFlow ab would need.
    template_file = write(tmp_path, template("a"), "template.yaml")
    code, manifest, _ = cli("convert", "-f", template_file, "--name", "ab-a")
    assert code == 0
    cluster.custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs",
                                                   yaml.safe_load(manifest))

    code, out, _ = cli("plan", "-f", write(tmp_path, FLOW_AB), "-n", namespace, "-o", "json")

    result = json.loads(out)
    assert code == 1
    assert result["reason"] == "JobNameConflict"
    assert result["start"] == []
    assert f'vcjob "{namespace}/ab-a" already exists' in result["message"]


def test_convert_turns_a_jobflows_vcjob_back_into_its_template(cli, cluster: LocalCluster, namespace: str,
                                                               engine, tmp_path) -> None:
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, jobflow_yaml("solo", "[{name: a}]"))
    cluster.wait_until("vcjob solo-a to have a status",
                       lambda: vcjobs(cluster, namespace).get("solo-a", {}).get("status"), timeout=30)
    job = vcjobs(cluster, namespace)["solo-a"]

    code, out, err = cli("convert", "-f", write(tmp_path, yaml.safe_dump(job), "job.yaml"))

    assert (code, err) == (0, "")
    assert yaml.safe_load(out) == {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
                                   "metadata": {"name": "a", "namespace": namespace}, "spec": job["spec"]}


def test_kubectl_finds_the_plugin_on_path_and_runs_it(cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, jobflow_yaml("via-kubectl", "[{name: a}]"))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "KUBECONFIG": str(cluster.state.kubeconfig)}

    plugins = subprocess.run(["kubectl", "plugin", "list"], env=env, capture_output=True, text=True, timeout=60)
    listed = subprocess.run(["kubectl", "jobflow", "list", "-n", namespace], env=env, capture_output=True,
                            text=True, timeout=60)
    missing = subprocess.run(["kubectl", "jobflow", "get", "nope", "-n", namespace], env=env, capture_output=True,
                             text=True, timeout=60)

    assert str(BIN / "kubectl-jobflow") in plugins.stdout
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].startswith("Name           Namespace       Phase    Age    Progress")
    assert listed.stdout.splitlines()[1].startswith(f"via-kubectl    {namespace}")
    assert missing.returncode == 1
    assert missing.stderr == 'Failed to get jobflow: jobflows.flow.volcano.sh "nope" not found\n'


def test_kubectl_completes_the_plugin_through_its_helper(cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, jobflow_yaml("completed-by-tab", "[{name: a}]"))
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "KUBECONFIG": str(cluster.state.kubeconfig)}

    def tab(*words: str) -> list[str]:  # what kubectl's own completion asks when TAB is pressed
        done = subprocess.run(["kubectl", "__complete", "jobflow", *words], env=env, capture_output=True, text=True,
                              timeout=60, check=True)
        return done.stdout.splitlines()

    assert tab("sta") == ["status", ":4"]
    assert tab("get", "-o", "")[:-1] == ["wide", "name", "json", "yaml", "jsonpath=", "custom-columns="]
    assert tab("status", "-n", namespace, "comp") == ["completed-by-tab", ":4"]  # names from the cluster


TYPO_FLOW = jobflow_yaml("typo", "[{name: a}, {name: b, dependOn: {targets: [a]}}]")
TYPO_JFT = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: nightly}
spec:
  schedule: "0 2 * * *"
  jobFlow:
    spec: {flows: [{name: a}, {name: b, dependOn: {targets: [a]}}]}
"""


def test_a_typo_is_named_by_validate_and_refused_by_create_in_a_jobflow_and_a_jobflowtemplate(
        cli, cluster: LocalCluster, namespace: str, tmp_path) -> None:
    path = write(tmp_path, TYPO_FLOW + "---\n" + TYPO_JFT)

    code, out, _ = cli("validate", "-f", path, "-n", namespace)
    assert code == 2 and out.splitlines() == [
        f"{path}#1: JobFlow {namespace}/typo is invalid:",
        "  - spec.flows[1].dependOn: unknown field (did you mean dependsOn?)",
        f"{path}#2: JobFlowTemplate {namespace}/nightly is invalid:",
        "  - spec.jobFlow.spec.flows[1].dependOn: unknown field (did you mean dependsOn?)"]
    code, out, err = cli("create", "-f", path, "-n", namespace)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"Failed to create JobFlow: {path}#1: spec.flows[1].dependOn: unknown field (did you mean dependsOn?) (or "
        "skip this check with --validate=false)",
        f"Failed to create JobFlowTemplate: {path}#2: spec.jobFlow.spec.flows[1].dependOn: unknown field (did you "
        "mean dependsOn?) (or skip this check with --validate=false)"]
    assert jobflow(cluster, namespace, "typo") is None


def test_without_its_checks_create_asks_the_api_server_for_strict_fields_so_a_typo_is_refused_not_dropped(
        cli, cluster: LocalCluster, namespace: str, tmp_path) -> None:
    code, out, err = cli("create", "-f", write(tmp_path, TYPO_FLOW), "-n", namespace, "--validate=false")

    assert (code, out) == (2, "")
    assert 'unknown field "spec.flows[1].dependOn"' in err
    assert jobflow(cluster, namespace, "typo") is None


def test_validate_checks_a_jobtemplates_vcjob_spec_against_the_clusters_volcano(cli, namespace: str,
                                                                                tmp_path) -> None:
    typo = template("t").replace("image: busybox}", "image: busybox, imagePullPolicie: Never}")
    assert "imagePullPolicie" in typo
    code, out, err = cli("validate", "-f", write(tmp_path, typo), "-n", namespace)

    assert (code, err) == (2, "")
    assert "spec.tasks[0].template.spec.containers[0].imagePullPolicie: unknown field (did you mean " \
           "imagePullPolicy?)" in out
