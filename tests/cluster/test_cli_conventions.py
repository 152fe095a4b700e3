"""``kubectl jobflow`` as a kubectl plugin, against the real API server: ``get`` lists across namespaces with ``-l``,
``-w`` follows changes through the watch API and survives an API-server restart, and each cause has its exit code
(:mod:`kubectl_jobflow.exits`): 0 done, 1 the JobFlow failed, 3 the API server cannot be reached, 4 timed out.

The watches run as their own processes (``kubectl-jobflow`` from the virtual environment, as a user starts it).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from objects import apply, template

from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW

pytestmark = pytest.mark.cluster

PLUGIN = Path(sys.executable).parent / "kubectl-jobflow"


def flow(name: str, *, labels: str = "{}", flows: str = "[{name: a}]") -> str:
    return (f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {{name: {name}, labels: {labels}}}\n"
            f"spec: {{flows: {flows}}}\n")


@pytest.fixture
def other_namespace(cluster: LocalCluster):
    name = cluster.create_namespace()
    yield name
    cluster.delete_namespace(name)


def test_get_lists_every_namespace_with_a_label_selector(cli, cluster: LocalCluster, namespace: str,
                                                         other_namespace: str) -> None:
    team = f"team={namespace}"  # a label no other test's JobFlows carry
    apply(cluster, namespace, flow("x", labels=f"{{team: {namespace}}}") + "---\n" + flow("y"))
    apply(cluster, other_namespace, flow("z", labels=f"{{team: {namespace}}}"))

    # The API server lists namespaces in name order, and both names are random.
    code, out, err = cli("get", "-A", "-l", team, "-o", "name")
    assert (code, sorted(out.splitlines()), err) == (
        0, ["jobflow.flow.volcano.sh/x", "jobflow.flow.volcano.sh/z"], "")
    code, out, _ = cli("get", "-A", "-l", team)
    lines = [line.split()[:2] for line in out.splitlines()]
    assert code == 0
    assert (lines[0], sorted(lines[1:])) == (["Name", "Namespace"], [["x", namespace], ["z", other_namespace]])
    assert cli("get", "-n", namespace, "--no-headers", "-o", "custom-columns=NAME:.metadata.name,TEAM:.metadata."
               "labels.team") == (0, f"x     {namespace}\ny     <none>\n", "")
    assert cli("get", "y", "x", "-n", namespace, "-o", "jsonpath={.items[*].metadata.name}") == (0, "y x", "")
    assert cli("get", "-n", other_namespace, "-l", "team=nobody") == (
        0, "", f"No resources found in {other_namespace} namespace.\n")


class Lines:
    """The lines a process prints, as they come."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process, self.lines = process, queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line.rstrip("\n")) for line in process.stdout],
                         daemon=True).start()

    def next(self, timeout: float = 30) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout:g}s; stderr so far: {self.stop()[1]}") from None

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=30)
        return self.process.returncode, err


def test_get_watch_prints_each_change_and_survives_an_api_server_restart(cli, cluster: LocalCluster,
                                                                        namespace: str) -> None:
    apply(cluster, namespace, flow("w", labels="{step: '0'}"))
    watch = Lines(subprocess.Popen(
        [str(PLUGIN), "get", "w", "-n", namespace, "-w", "-o", "jsonpath={.metadata.labels.step}{'\\n'}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "KUBECONFIG": str(cluster.state.kubeconfig)}))

    def step(value: str) -> None:
        cluster.custom.patch_namespaced_custom_object(JOBFLOW.group, JOBFLOW.version, namespace, JOBFLOW.plural, "w",
                                                      {"metadata": {"labels": {"step": value}}})

    assert watch.next() == "0"
    step("1")
    assert watch.next() == "1"

    outage = threading.Thread(target=cluster.api_server_outage, args=(4,))
    outage.start()
    while outage.is_alive():  # while the API server is down, a command says so with exit 3
        code, _, err = cli("get", "-n", namespace)
        if code == 3:
            break
    outage.join()
    assert code == 3, err
    assert "cannot reach the API server" in err

    step("2")
    assert watch.next(timeout=90) == "2"  # the same watch, resumed after the restart
    code, err = watch.stop()
    assert code == 130, err


def test_each_end_has_its_exit_code(cli, cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "---\n".join([template("good"), template("bad", fail=True),
                                            template("slow", keep_running=True)]))
    apply(cluster, namespace, "---\n".join([flow("ok", flows="[{name: good}]"), flow("ko", flows="[{name: bad}]"),
                                            flow("long", flows="[{name: slow}]")]))

    assert cli("wait", "ok", "-n", namespace, "--timeout", "120s") == (
        0, "jobflow.flow.volcano.sh/ok condition met\n", "")
    code, out, err = cli("wait", "ko", "-n", namespace, "--for=phase=Succeed", "--timeout=120s")
    assert (code, out) == (1, ""), err
    assert err.startswith(f"Failed to wait: JobFlow {namespace}/ko ended Failed, not Succeed (JobFailed: ")
    code, _, err = cli("wait", "long", "-n", namespace, "--timeout", "2s")
    assert code == 4, err
    assert "timed out waiting for the condition on jobflows/long" in err
    code, out, err = cli("status", "long", "-n", namespace, "-w", "--timeout", "1s")
    assert code == 4, err
    assert out.startswith(f"JobFlow {namespace}/long   ")


def test_create_kustomize_creates_what_kubectl_kustomize_builds(cli, cluster: LocalCluster, namespace: str,
                                                                tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", f"{PLUGIN.parent}{os.pathsep}{os.environ['PATH']}")  # kubectl, as users have it
    (tmp_path / "kustomization.yaml").write_text(f"namespace: {namespace}\ncommonLabels: {{team: k}}\n"
                                                 "resources: [a.yaml, flow.yaml]\n")
    (tmp_path / "a.yaml").write_text(template("a"))
    (tmp_path / "flow.yaml").write_text(flow("kf"))

    # In kustomize's order (its legacy sort: kinds it does not know, by name), the namespace and labels its own.
    assert cli("create", "--kustomize", str(tmp_path)) == (
        0, f"Created JobFlow: {namespace}/kf\nCreated JobTemplate: {namespace}/a\n", "")
    assert cli("get", "-n", namespace, "-l", "team=k", "-o", "name") == (0, "jobflow.flow.volcano.sh/kf\n", "")
