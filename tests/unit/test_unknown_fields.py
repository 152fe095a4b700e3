"""Wrong input never passes silently: a field the schema does not have is named with its path and the nearest known
name, at every level of all three kinds (``jobflow_core.validation.fields``), by the webhook (inside the subtrees
the CRDs keep as they are) and by ``kubectl jobflow validate``."""

import io
import types
from typing import Any, Union, get_args, get_origin

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from handlers import create_app
from jobflow_core.models import JobFlow, JobFlowTemplate, JobSpec, JobTemplate
from jobflow_core.models.base import ObjectMeta
from jobflow_core.validation.fields import OBJECT_META, unknown_fields, vcjob_spec_schema
from kubectl_jobflow.cli import run

VCJOB_SPEC = {"type": "object", "properties": {
    "minAvailable": {"type": "integer"}, "queue": {"type": "string"},
    "tasks": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "replicas": {"type": "integer"},
        "template": {"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "restartPolicy": {"type": "string"},
                "containers": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "image": {"type": "string"},
                    "command": {"type": "array", "items": {"type": "string"}}}}}}}}}}}}}}
"""A vcjob spec's schema as Volcano's CRD writes it, cut down to what these tests use."""
VCJOB_CRD = {"spec": {"versions": [{"name": "v1alpha1", "schema": {"openAPIV3Schema": {"properties": {
    "spec": VCJOB_SPEC}}}}]}}


def full(model: type[BaseModel], path: str, found: list[str]) -> dict[str, Any]:
    """An object of ``model`` with every field set (one item per list, one key per map), noting in ``found`` the path
    of each object whose fields are known."""
    found.append(path)
    if model is ObjectMeta:
        return {"name": "x", "labels": {"a": "b"}}
    obj = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        if model is JobFlow or model is JobTemplate or model is JobFlowTemplate:
            if key == "status":
                continue
        obj[key] = value(info.annotation, f"{path}.{key}" if path else key, found)
    return obj


def value(annotation: Any, path: str, found: list[str]) -> Any:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return value(next(arg for arg in get_args(annotation) if arg is not type(None)), path, found)
    if origin is list:
        return [value(get_args(annotation)[0], f"{path}[0]", found)]
    if origin is dict:
        return {"k": value(get_args(annotation)[1], f"{path}.k", found)}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation is not JobSpec:
        return full(annotation, path, found)
    return "x"


def at(obj: Any, path: str) -> dict:
    """The object at ``path`` (``spec.flows[0].dependsOn``) of ``obj``."""
    for part in path.replace("[", ".[").split(".") if path else []:
        obj = obj[int(part[1:-1])] if part.startswith("[") else obj[part]
    return obj


KINDS = {"JobFlow": JobFlow, "JobTemplate": JobTemplate, "JobFlowTemplate": JobFlowTemplate}


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_object_with_every_field_set_has_no_unknown_field(kind):
    found: list[str] = []
    assert unknown_fields(full(KINDS[kind], "", found), KINDS[kind]) == []
    assert "metadata" in found


@given(data=st.data(), kind=st.sampled_from(list(KINDS)), name=st.from_regex(r"[a-z][a-zA-Z]{0,12}", fullmatch=True))
def test_any_field_the_schema_lacks_is_named_with_its_path_at_every_level(data, kind, name):
    found: list[str] = []
    obj = full(KINDS[kind], "", found)
    where = data.draw(st.sampled_from(found))
    known = set(OBJECT_META) if where.endswith("metadata") and where.count(".") < 1 else set(at(obj, where))
    key = f"zz{name}" if f"zz{name}" not in known else f"zzz{name}"
    at(obj, where)[key] = 1
    errors = unknown_fields(obj, KINDS[kind])
    path = f"{where}.{key}" if where else key
    assert [error.message for error in errors] == [f"{path}: unknown field"]


def test_a_typo_is_named_with_the_field_it_probably_means():
    doc = yaml.safe_load("""
    metadata: {name: test, lables: {a: b}}
    spec:
      flows:
      - name: a
      - {name: b, dependOn: {targets: [a]}}
      - {name: c, dependsOn: {targets: [b], probe: {taskStatusList: [{taskName: t, phase: Running, phaze: x}]}}}
    status: {ignored: true}
    """)
    assert [str(error) for error in unknown_fields(doc, JobFlow)] == [
        "metadata.lables: unknown field (did you mean labels?)",
        "spec.flows[1].dependOn: unknown field (did you mean dependsOn?)",
        "spec.flows[2].dependsOn.probe.taskStatusList[0].phaze: unknown field (did you mean phase?)"]


def test_a_jobflowtemplates_jobflow_spec_is_a_jobflow_spec():
    doc = {"spec": {"schedule": "0 2 * * *", "jobFlow": {"spec": {"flows": [{"name": "a", "dependOn": {}}]}}}}
    [error] = unknown_fields(doc, JobFlowTemplate)
    assert str(error) == "spec.jobFlow.spec.flows[0].dependOn: unknown field (did you mean dependsOn?)"


def test_vcjob_specs_are_checked_against_volcanos_schema_when_it_is_given():
    template = {"spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": {
        "metadata": {"labels": {"any": "thing"}},
        "spec": {"containers": [{"name": "c", "image": "busybox", "comand": ["sh"]}]}}}]}}
    jobflow = {"spec": {"flows": [{"name": "a", "patch": {"jobSpec": {"minAvaliable": 2}}}]}}
    assert unknown_fields(template, JobTemplate) == [] and unknown_fields(jobflow, JobFlow) == []  # not without it
    assert [str(e) for e in unknown_fields(template, JobTemplate, vcjob_spec=vcjob_spec_schema(VCJOB_CRD))] == [
        "spec.tasks[0].template.spec.containers[0].comand: unknown field (did you mean command?)"]
    assert [str(e) for e in unknown_fields(jobflow, JobFlow, vcjob_spec=VCJOB_SPEC)] == [
        "spec.flows[0].patch.jobSpec.minAvaliable: unknown field (did you mean minAvailable?)"]


def review(kind: str, obj: dict, **config) -> dict:
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u", "operation": "CREATE", "namespace": "default", "object": obj,
        "kind": {"group": "flow.volcano.sh", "version": "v1alpha1", "kind": obj["kind"]}}}
    app = create_app({"TESTING": True, **config})
    return app.test_client().post(f"/validate/{kind}", json=body).json["response"]


JFT = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate", "metadata": {"name": "nightly"},
       "spec": {"schedule": "0 2 * * *", "jobFlow": {"spec": {"flows": [
           {"name": "a"}, {"name": "b", "dependOn": {"targets": ["a"]}}]}}}}
JT = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate", "metadata": {"name": "a"},
      "spec": {"minAvailable": 1, "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
          "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "comand": ["true"]}]}}}]}}


def test_the_webhook_refuses_an_unknown_field_where_the_crd_keeps_everything():
    from memory_kube import MemoryKube

    answer = review("jobflowtemplates", JFT, KUBE=MemoryKube())
    assert not answer["allowed"]
    assert answer["status"]["message"] == ("spec.jobFlow.spec.flows[1].dependOn: unknown field (did you mean "
                                           "dependsOn?)")


def test_the_webhook_checks_a_vcjob_spec_against_the_clusters_volcano_crd():
    from memory_kube import MemoryKube

    kube = MemoryKube()
    assert review("jobtemplates", JT, KUBE=kube)["allowed"]  # no Volcano CRD to read: not checked
    kube.crds["jobs.batch.volcano.sh"] = VCJOB_CRD
    answer = review("jobtemplates", JT, KUBE=kube)
    assert not answer["allowed"] and "spec.tasks[0].template.spec.containers[0].comand: unknown field" in \
        answer["status"]["message"]


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return run(list(args), out=out, err=err), out.getvalue(), err.getvalue()


def test_validate_names_the_typo_in_a_jobflow_and_in_a_jobflowtemplate(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    jobflow = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": "test"},
               "spec": {"flows": [{"name": "a"}, {"name": "b", "dependOn": {"targets": ["a"]}}]}}
    path = tmp_path / "typos.yaml"
    path.write_text(yaml.safe_dump_all([jobflow, JFT]))
    code, out, err = cli("validate", "-f", str(path))
    assert code == 2 and err == ""  # invalid input
    assert out.splitlines() == [
        f"{path}#1: JobFlow default/test is invalid:",
        "  - spec.flows[1].dependOn: unknown field (did you mean dependsOn?)",
        f"{path}#2: JobFlowTemplate default/nightly is invalid:",
        "  - spec.jobFlow.spec.flows[1].dependOn: unknown field (did you mean dependsOn?)"]
