"""Unknown fields: every field of an object that its schema does not have, named by its path, with the nearest
known name (``spec.flows[1].dependOn: unknown field (did you mean dependsOn?)``).

The API server refuses an unknown field when the client asks for strict field validation (kubectl does, since
1.27) and otherwise drops it silently, which changes what runs: a flow whose ``dependOn`` was dropped runs at once.
Where a CRD keeps a subtree as it is (``x-kubernetes-preserve-unknown-fields``: a JobTemplate's vcjob spec, a
flow's ``patch.jobSpec``, the pod templates) it refuses nothing at all. This check knows what each subtree really
holds:

* our three kinds by their models, which mirror the CRDs field for field (``tests/unit/test_crds_match_models.py``);
  a JobFlowTemplate's ``jobFlow.spec`` is a JobFlow's spec;
* a vcjob's spec (a JobTemplate's ``spec``, a flow's ``patch.jobSpec``) by Volcano's own CRD schema when the caller
  has it (the API server serves it: ``customresourcedefinitions/jobs.batch.volcano.sh``), else not at all;
* ``metadata`` by Kubernetes' ``ObjectMeta``; ``status`` not at all (the API server ignores it on a create).

A free-form value (labels, a parameter's value, an object of a schema without properties) holds anything.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Union, get_args, get_origin

from pydantic import BaseModel

from jobflow_core.models import JobSpec
from jobflow_core.models.base import ObjectMeta
from jobflow_core.vocabulary.spec_errors import SpecError

OBJECT_META: Final = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences", "finalizers",
    "managedFields"})
"""The fields of Kubernetes' ``ObjectMeta``."""
NOT_CHECKED: Final = frozenset({"status"})
"""Top-level fields not checked."""


@dataclass(frozen=True)
class Shape:
    """What a value may hold: the fields of a model or of an OpenAPI schema node, the shape of a list's items or a
    map's values; a shape that knows no fields (``fields`` None) holds anything."""

    fields: frozenset[str] | None = None
    model: type[BaseModel] | None = None
    schema: Mapping[str, Any] | None = None
    items: Shape | None = None
    values: Shape | None = None


ANYTHING: Final = Shape()


def unknown_fields(obj: Mapping[str, Any], model: type[BaseModel], *,
                   vcjob_spec: Mapping[str, Any] | None = None) -> list[SpecError]:
    """Every unknown field of ``obj``, an object of the kind ``model`` mirrors, in the order written.
    ``vcjob_spec``: the OpenAPI schema of a vcjob's ``spec`` (Volcano's CRD), for the vcjob specs inside."""
    found: list[SpecError] = []
    top = _of_model(model, vcjob_spec)
    assert top.fields is not None
    for key, value in obj.items():
        if key not in NOT_CHECKED:
            _walk(value, key, top, found, vcjob_spec, known=top.fields)
    return found


def _walk(value: Any, key: str, parent: Shape, found: list[SpecError], vcjob_spec: Mapping[str, Any] | None, *,
          known: frozenset[str] | None, path: str = "") -> None:
    where = f"{path}.{key}" if path else str(key)
    if known is not None and key not in known:
        close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else f"the fields here are {', '.join(sorted(known))}"
        found.append(SpecError("UnknownField", f"{where}: unknown field", hint))
        return
    _check(value, _child(parent, key, vcjob_spec), where, found, vcjob_spec)


def _check(value: Any, shape: Shape, path: str, found: list[SpecError], vcjob_spec: Mapping[str, Any] | None) -> None:
    if isinstance(value, list):
        if shape.items is not None:
            for index, item in enumerate(value):
                _check(item, shape.items, f"{path}[{index}]", found, vcjob_spec)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if shape.values is not None:
                _check(item, shape.values, f"{path}.{key}", found, vcjob_spec)
            elif shape.fields is not None:
                _walk(item, key, shape, found, vcjob_spec, known=shape.fields, path=path)


def _child(shape: Shape, key: str, vcjob_spec: Mapping[str, Any] | None) -> Shape:
    """The shape of field ``key`` of a value of ``shape``."""
    if shape.model is not None:
        for name, info in shape.model.model_fields.items():
            if (info.alias or name) == key:
                return _of_annotation(info.annotation, vcjob_spec)
        return ANYTHING
    if shape.schema is not None:
        return _of_schema((shape.schema.get("properties") or {}).get(key) or {})
    return ANYTHING


def _of_model(model: type[BaseModel], vcjob_spec: Mapping[str, Any] | None) -> Shape:
    if model is ObjectMeta:
        return Shape(fields=OBJECT_META)
    if model is JobSpec:
        return _of_schema(vcjob_spec) if vcjob_spec is not None else ANYTHING
    return Shape(fields=frozenset(info.alias or name for name, info in model.model_fields.items()), model=model)


def _of_annotation(annotation: Any, vcjob_spec: Mapping[str, Any] | None) -> Shape:
    """The shape of a model field's type: a model, a list or a map of one, or anything (a scalar, ``Any``)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        inner = [_of_annotation(arg, vcjob_spec) for arg in get_args(annotation) if arg is not type(None)]
        return next((shape for shape in inner if shape != ANYTHING), ANYTHING)
    if origin is list:
        return Shape(items=_of_annotation(get_args(annotation)[0], vcjob_spec))
    if origin is dict:
        inner = _of_annotation(get_args(annotation)[1], vcjob_spec)
        return Shape(values=inner) if inner != ANYTHING else ANYTHING
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _of_model(annotation, vcjob_spec)
    return ANYTHING


def _of_schema(node: Mapping[str, Any]) -> Shape:
    """The shape of an OpenAPI v3 schema node, as a structural CRD schema writes it."""
    if node.get("type") == "array":
        return Shape(items=_of_schema(node.get("items") or {}))
    if isinstance(node.get("additionalProperties"), Mapping):
        return Shape(values=_of_schema(node["additionalProperties"]))
    properties = node.get("properties")
    if not properties or node.get("x-kubernetes-preserve-unknown-fields"):
        return Shape(schema=node) if properties else ANYTHING  # known fields still checked inside, unknown kept
    return Shape(fields=frozenset(properties), schema=node)


VCJOB_CRD: Final = "jobs.batch.volcano.sh"
"""The CRD of Volcano's vcjobs, whose schema says what a vcjob's spec may hold."""


def vcjob_spec_schema(crd: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The schema of ``spec`` in Volcano's vcjob CRD (``v1alpha1``), or None when ``crd`` has none."""
    for version in ((crd or {}).get("spec") or {}).get("versions") or ():
        if isinstance(version, Mapping) and version.get("name") == "v1alpha1":
            schema = ((version.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}
            spec = schema.get("spec")
            return spec if isinstance(spec, Mapping) else None
    return None
