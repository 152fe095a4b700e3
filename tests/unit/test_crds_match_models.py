"""The CRDs in manifests/crds and the pydantic models mirror each other field for field (STYLE: one truth)."""

from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from pydantic import BaseModel

from jobflow_core.models import JobFlow, JobFlowTemplate, JobTemplate

CRDS = Path(__file__).resolve().parents[2] / "manifests" / "crds"


def schema(name: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / name).read_text())
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def model_of(annotation: Any) -> type[BaseModel] | None:
    """The model inside an annotation such as ``list[Flow] | None`` or ``dict[str, FlowCondition]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = model_of(arg)
        if found is not None:
            return found
    return None


def compare(model: type[BaseModel], node: dict[str, Any], path: str) -> list[str]:
    """Differences between a model's JSON names and a schema node's properties, recursively."""
    while node.get("type") == "array" or "additionalProperties" in node and "properties" not in node:
        node = node.get("items") or node.get("additionalProperties")
    properties = node.get("properties")
    if properties is None or node.get("x-kubernetes-preserve-unknown-fields"):
        return []  # a free-form object (pod templates, patch.jobSpec): Volcano's own CRD validates it
    fields = {(info.alias or name): info.annotation for name, info in model.model_fields.items()}
    problems = [f"{path}.{key}: in the CRD, not in {model.__name__}" for key in properties.keys() - fields.keys()
                if key not in ("apiVersion", "kind", "metadata")]
    problems += [f"{path}.{key}: in {model.__name__}, not in the CRD" for key in fields.keys() - properties.keys()
                 if key not in ("apiVersion", "kind", "metadata")]
    for key in properties.keys() & fields.keys():
        inner = model_of(fields[key])
        if inner is not None and key != "metadata":
            problems += compare(inner, properties[key], f"{path}.{key}")
    return problems


@pytest.mark.parametrize("model, crd", [(JobFlow, "jobflows.yaml"), (JobTemplate, "jobtemplates.yaml"),
                                        (JobFlowTemplate, "jobflowtemplates.yaml")])
def test_every_crd_field_has_a_model_field_and_back(model, crd):
    assert compare(model, schema(crd), model.__name__) == []


def test_nothing_under_patch_is_defaulted_so_only_user_intent_overrides_a_template():
    patch = schema("jobflows.yaml")["properties"]["spec"]["properties"]["flows"]["items"]["properties"]["patch"]
    assert "default" not in yaml.safe_dump(patch)
