"""``convert``: a JobTemplate becomes a vcjob and a vcjob a JobTemplate, the spec unchanged both ways."""

import io

import pytest
import yaml

from kubectl_jobflow.cli import run
from kubectl_jobflow.conversion import ConversionError, convert

TEMPLATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata:
  name: train
  namespace: ml
  labels: {team: vision}
  annotations: {owner: ana}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: gpu
  maxRetry: 0
  plugins: {ssh: [], svc: ["--disable-network-policy=true"], env: null}
  policies: [{event: PodEvicted, action: RestartJob}]
  futureField: {kept: true}
  tasks:
  - name: worker
    replicas: 2
    template:
      metadata: {annotations: {sidecar.istio.io/inject: "false"}}
      spec:
        restartPolicy: OnFailure
        containers:
        - {name: trainer, image: "trainer:1", env: [{name: EPOCHS, value: "10"}], resources: {limits: {cpu: "2"}}}
"""

VCJOB_FROM_A_JOBFLOW = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: nightly-train
  namespace: ml
  uid: 5f1e
  resourceVersion: "812"
  generation: 1
  creationTimestamp: "2026-01-02T03:04:05Z"
  managedFields: [{manager: handler}]
  labels: {volcano.sh/createdByJobFlow: ml.nightly, volcano.sh/createdByJobTemplate: ml.train}
  annotations: {volcano.sh/createdByJobFlow: ml.nightly, volcano.sh/createdByJobTemplate: ml.train, owner: ana}
  ownerReferences: [{apiVersion: flow.volcano.sh/v1alpha1, kind: JobFlow, name: nightly, uid: u, controller: true}]
spec:
  queue: gpu
  tasks: [{name: worker, replicas: 2}]
status:
  state: {phase: Completed}
"""


def cli(*argv: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


def test_a_jobtemplate_becomes_a_vcjob_with_the_same_spec_name_namespace_labels_and_annotations():
    template = yaml.safe_load(TEMPLATE)
    assert convert(template) == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "labels": {"team": "vision"}, "annotations": {"owner": "ana"}},
        "spec": template["spec"],
    }


def test_converting_twice_gives_back_the_input():
    template = yaml.safe_load(TEMPLATE)
    assert convert(convert(template)) == template


def test_a_vcjob_becomes_a_jobtemplate_named_after_its_flow_without_what_the_server_and_jobflow_wrote():
    assert convert(yaml.safe_load(VCJOB_FROM_A_JOBFLOW)) == {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": "train", "namespace": "ml", "annotations": {"owner": "ana"}},
        "spec": {"queue": "gpu", "tasks": [{"name": "worker", "replicas": 2}]},
    }


def test_name_and_namespace_rename_the_result():
    converted = convert(yaml.safe_load(TEMPLATE), name="train-once", namespace="scratch")
    assert converted["metadata"]["name"] == "train-once"
    assert converted["metadata"]["namespace"] == "scratch"


def test_other_kinds_are_refused_with_what_is_expected():
    with pytest.raises(ConversionError, match=r"^cannot convert flow.volcano.sh/v1alpha1/JobFlow: expected a "
                                              r"flow.volcano.sh/v1alpha1 JobTemplate or a batch.volcano.sh/v1alpha1 "
                                              r"Job \(vcjob\)$"):
        convert({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow"})


def test_the_command_round_trips_a_file_of_several_templates(tmp_path, monkeypatch):
    source = tmp_path / "templates.yaml"
    source.write_text(TEMPLATE + "---\n" + TEMPLATE.replace("name: train", "name: test"))
    code, jobs, err = cli("convert", "-f", str(source))
    assert (code, err) == (0, "")
    assert [doc["kind"] for doc in yaml.safe_load_all(jobs)] == ["Job", "Job"]
    code, back, _ = cli("convert", "-f", "-", stdin=jobs, monkeypatch=monkeypatch)
    assert code == 0
    assert list(yaml.safe_load_all(back)) == list(yaml.safe_load_all(source.read_text()))


def test_the_command_renames_with_name_and_namespace_and_prints_json(tmp_path):
    source = tmp_path / "t.yaml"
    source.write_text(TEMPLATE)
    code, out, _ = cli("convert", "-f", str(source), "--name", "once", "-n", "scratch", "-o", "json")
    assert code == 0
    assert yaml.safe_load(out)["metadata"] == {"name": "once", "namespace": "scratch", "labels": {"team": "vision"},
                                                "annotations": {"owner": "ana"}}


def test_the_command_fails_on_a_kind_it_cannot_convert_and_prints_nothing(tmp_path):
    source = tmp_path / "mixed.yaml"
    source.write_text(TEMPLATE + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    code, out, err = cli("convert", "-f", str(source))
    assert (code, out) == (2, "")
    assert err == (f"Failed to convert: {source}#2: cannot convert v1/ConfigMap: expected a flow.volcano.sh/v1alpha1 "
                   "JobTemplate or a batch.volcano.sh/v1alpha1 Job (vcjob)\n")


def test_one_name_for_several_objects_is_refused(tmp_path):
    source = tmp_path / "two.yaml"
    source.write_text(TEMPLATE + "---\n" + TEMPLATE)
    assert cli("convert", "-f", str(source), "--name", "x")[2] == (
        "Failed to convert: --name gives one name, but there are 2 objects: convert them one by one\n")
