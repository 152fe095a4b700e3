"""``kubectl jobflow status`` and ``graph`` on flows the engine really runs (handler + event source in-process).

``status --watch`` runs as its own process, as a user would start it, while the engine in this process moves
the flow along; it must print the flow as it changes and exit 0 once it is Succeed, 1 once it is Failed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from devcluster.testing import LocalCluster
from objects import apply, template, wait_for_phase
from seeds import diamond_flows, diamond_yaml

pytestmark = pytest.mark.cluster

PLUGIN = Path(sys.executable).parent / "kubectl-jobflow"

DIAMOND = diamond_yaml()


def watch(cluster: LocalCluster, namespace: str, name: str) -> subprocess.Popen:
    return subprocess.Popen([str(PLUGIN), "status", name, "-n", namespace, "--watch",
                             "--timeout", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "KUBECONFIG": str(cluster.state.kubeconfig)})


def cells(line: str) -> list[str]:
    """The cells of a status line: columns are at least three spaces apart, cells have single spaces."""
    return re.split(r" {3,}", line.strip())


def test_status_shows_the_flows_in_dag_order_as_a_tree(cli, cluster: LocalCluster, namespace: str,
                                                       engine) -> None:
    apply(cluster, namespace, "\n---\n".join(template(n) for n in "abcde"))
    apply(cluster, namespace, DIAMOND)
    wait_for_phase(cluster, namespace, "test", "Succeed", timeout=120)

    code, out, err = cli("status", "test", "-n", namespace)

    lines = out.splitlines()
    assert (code, err) == (0, "")
    assert lines[0].startswith(f"JobFlow {namespace}/test   Succeed   5/5   age ")
    assert lines[1].split() == ["FLOW", "AFTER", "JOB", "PHASE", "AGE", "RESTARTS", "DETAIL"]
    rows = [line.split() for line in lines[2:]]
    assert [row[:2] for row in rows] == [["a", "test-a"], ["└─", "b"], ["└─", "c"], ["└─", "d"], ["└─", "e"]]
    assert [line.index("└─") for line in lines[3:]] == [0, 3, 3, 6]
    assert [cells(line)[1:3] for line in lines[3:]] == [
        ["a", "test-b"], ["b", "test-c"], ["b", "test-d"], ["c, d", "test-e"]]
    assert all("Completed" in line and " ran " in line for line in lines[2:])


def test_status_json_reports_each_job_for_scripts(cli, cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("a", keep_running=True) + "---\n" + template("b"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                              "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
    def running() -> dict | None:  # the vcjob first, its JobFlow's status a moment later (the event source's hold)
        data = json.loads(cli("status", "f", "-n", namespace, "-o", "json")[1])
        return data if data["flows"][0]["tasks"] == {"main": {"Running": 1}} and data["phase"] == "Running" else None

    data = cluster.wait_until("f-a to run", running, timeout=60)

    a, b = data["flows"]
    assert data["phase"] == "Running"
    assert (a["job"], a["phase"], a["jobExists"], a["restarts"], a["replicas"]) == ("f-a", "Running", True, 0,
                                                                                     {"main": 1})
    assert (b["phase"], b["waitingFor"], b["message"]) == ("Waiting", ["a"], 'waiting for "a" to be Completed')


def test_status_of_a_missing_jobflow_says_where_it_looked(cli, namespace: str) -> None:
    assert cli("status", "nope", "-n", namespace) == (
        1, "", f'Failed to show the status: JobFlow "{namespace}/nope" not found: check the name and the namespace '
               "(kubectl jobflow list -A lists them all)\n")


def test_status_watch_follows_the_flow_live_and_exits_0_when_it_succeeds(cluster: LocalCluster, namespace: str,
                                                                         engine) -> None:
    apply(cluster, namespace, "\n---\n".join(template(n, run_for="1s") for n in "abcde"))
    apply(cluster, namespace, DIAMOND)
    watcher = watch(cluster, namespace, "test")

    out, err = watcher.communicate(timeout=150)

    frames = out.split("\n\n")
    assert watcher.returncode == 0, err
    assert len(frames) >= 3
    assert frames[-1].startswith(f"JobFlow {namespace}/test   Succeed   5/5")
    assert any('waiting for "c", "d" to be Completed' in frame for frame in frames)
    assert any(" Running " in frame for frame in frames)


def test_status_watch_exits_1_when_the_flow_fails_and_says_why(cluster: LocalCluster, namespace: str,
                                                              engine) -> None:
    apply(cluster, namespace, template("bad", fail=True) + "---\n" + template("after"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                              "spec: {flows: [{name: bad}, {name: after, dependsOn: {targets: [bad]}}]}")
    watcher = watch(cluster, namespace, "f")

    out, err = watcher.communicate(timeout=150)

    last = out.split("\n\n")[-1].splitlines()
    assert watcher.returncode == 1, err
    assert last[0].startswith(f"JobFlow {namespace}/f   Failed")
    assert last[1].startswith(f'JobFailed: vcjob "{namespace}/f-bad" of flow "bad" is Terminated')
    assert "not started: the JobFlow is Failed" in last[-1]


def test_graph_of_a_jobflow_on_the_cluster_is_coloured_by_phase(cli, cluster: LocalCluster, namespace: str,
                                                                engine) -> None:
    apply(cluster, namespace, template("a") + "---\n" + template("b", keep_running=True))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                              "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}, "
                              "{name: c, dependsOn: {targets: [b]}}]}")
    cluster.wait_until("f-b to run", lambda: '"b" [label="b\\nRunning"' in cli("graph", "f", "-n", namespace,
                                                                               "--format", "dot")[1], timeout=60)

    dot = cli("graph", "f", "-n", namespace, "--format", "dot")[1]
    svg = ET.fromstring(cli("graph", "f", "-n", namespace, "--format", "svg")[1])
    text = cli("graph", "-N", "f", "-n", namespace)[1]

    assert '"a" [label="a\\nCompleted", fillcolor="#c8e6c9"];' in dot
    assert '"b" [label="b\\nRunning", fillcolor="#bbdefb"];' in dot
    assert '"c" [label="c\\nWaiting", fillcolor="#eeeeee"];' in dot
    phases = {g.get("data-flow"): g.get("data-phase") for g in svg.iter("{http://www.w3.org/2000/svg}g")}
    assert phases == {"a": "Completed", "b": "Running", "c": "Waiting"}
    assert text == f"JobFlow {namespace}/f\na  [Completed]\n└─> b\nb  [Running]\n└─> c\nc  [Waiting]\n"


def test_kubectl_wait_on_the_phase_as_docs_install_says_returns_when_the_jobflow_succeeds(
        cluster: LocalCluster, namespace: str, engine) -> None:
    kubectl = Path(sys.executable).parent / "kubectl"
    recipe = re.search(r"kubectl wait jobflow/nightly (--for=jsonpath='[^']+'=Succeed)",
                       (Path(__file__).parents[2] / "docs" / "install.md").read_text()).group(1)
    apply(cluster, namespace, "---\n".join(template(name) for name in "ab") + "---\n" +
          diamond_yaml(flows=diamond_flows()[:2]))  # a -> b only

    waited = subprocess.run([str(kubectl), f"--kubeconfig={cluster.state.kubeconfig}", "-n", namespace, "wait",
                             "jobflow/test", recipe.replace("'", ""), "--timeout=120s"],
                            capture_output=True, text=True, timeout=150)

    assert waited.returncode == 0, waited.stderr
    assert waited.stdout.strip() == "jobflow.flow.volcano.sh/test condition met"
