"""Parameters and loops on the real control plane (Volcano job controller, scheduler, kwok)."""

from __future__ import annotations

import io

import pytest

from devcluster.testing import LocalCluster
from kubectl_jobflow.cli import run
from objects import apply, template, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

SWEEP = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: sweep}
spec:
  parameters:
  - {name: lr, value: "0.1"}
  - {name: epochs, value: "10"}
  flows:
  - name: train
    patch:
      jobSpec:
        tasks:
        - name: main
          template:
            spec:
              containers:
              - name: main
                env:
                - {name: LR, value: "{{params.lr}}"}
                - {name: EPOCHS, value: "{{params.epochs}}"}
                args: ["--lr={{ params.lr }}", "--epochs={{params.epochs}}"]
"""


def jobflow_cli(cluster: LocalCluster, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run([*argv, "--kubeconfig", str(cluster.state.kubeconfig)], out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def test_one_jobflow_file_run_twice_with_other_parameters_makes_vcjobs_that_differ_only_in_them(
        cluster: LocalCluster, namespace: str, engine, tmp_path) -> None:
    apply(cluster, namespace, template("train"))
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    names = []
    for values in (["-p", "lr=0.01", "-p", "epochs=50"], ["-p", "lr=0.001"]):
        code, output = jobflow_cli(cluster, "create", "-f", str(path), "-n", namespace, "--generate-name", *values)
        assert code == 0, output
        names.append(output.strip().rsplit("/", 1)[1])
    assert all(name.startswith("sweep-") and len(name) == len("sweep-") + 5 for name in names)

    for name in names:
        wait_for_phase(cluster, namespace, name, "Succeed", timeout=60)
    first, second = (vcjobs(cluster, namespace)[f"{name}-train"] for name in names)
    containers = [job["spec"]["tasks"][0]["template"]["spec"]["containers"][0] for job in (first, second)]
    assert containers[0]["env"] == [{"name": "LR", "value": "0.01"}, {"name": "EPOCHS", "value": "50"}]
    assert containers[1]["env"] == [{"name": "LR", "value": "0.001"}, {"name": "EPOCHS", "value": "10"}]
    assert containers[1]["args"] == ["--lr=0.001", "--epochs=10"]
    for container in containers:
        del container["env"], container["args"]
    assert first["spec"] == second["spec"]  # nothing else differs

    code, output = jobflow_cli(cluster, "create", "-f", str(path), "-n", namespace, "-p", "rate=1")
    assert code == 1 and "declares no parameter rate (it declares: lr, epochs)" in output
