"""JobTemplate <-> vcjob: the same spec under two kinds, converted without losing a field.

A JobTemplate's ``spec`` *is* a vcjob spec (reference A.2), so a conversion moves the spec across unchanged,
key for key, unknown fields included, and rebuilds only the envelope: ``apiVersion``, ``kind`` and the metadata a
user writes (``name``, ``namespace``, ``labels``, ``annotations``). What the API server or a controller wrote
is left behind: ``status``, ``uid``, ``resourceVersion``, ``creationTimestamp``, ``managedFields``, owner
references, and the ``volcano.sh/createdBy*`` labels and annotations with which a JobFlow marks its vcjobs (a
template carrying them would claim to be a JobFlow's job). Converting twice gives back the input's spec, name,
namespace, labels and annotations.

A vcjob that a JobFlow created is named ``<jobflow>-<flow>``; its JobTemplate is the flow's, so the template is
named after the flow (read from ``volcano.sh/createdByJobTemplate: <namespace>.<flow>``) unless a name is given.

Upstream documented this conversion as implemented; it never was (reference D, G.15).
"""

import copy
from collections.abc import Mapping
from typing import Any

from jobflow_core.vocabulary.api import CREATED_BY_JOBFLOW, CREATED_BY_JOBTEMPLATE, JOBTEMPLATE, VCJOB
from jobflow_core.vocabulary.naming import template_in_label

KEPT_METADATA = ("name", "namespace", "labels", "annotations")
"""The metadata a user writes; everything else in ``metadata`` belongs to the API server."""

DROPPED_KEYS = (CREATED_BY_JOBFLOW, CREATED_BY_JOBTEMPLATE, "kubectl.kubernetes.io/last-applied-configuration")
"""Labels and annotations that describe where an object came from, not what it is."""


class ConversionError(ValueError):
    """The object is not a JobTemplate or a vcjob; the message says what it is and what is expected."""


def convert(obj: Mapping[str, Any], *, name: str | None = None, namespace: str | None = None) -> dict[str, Any]:
    """A JobTemplate becomes a vcjob and a vcjob a JobTemplate; ``name``/``namespace`` rename the result."""
    kind = (obj.get("apiVersion"), obj.get("kind"))
    if kind == (JOBTEMPLATE.api_version, JOBTEMPLATE.kind):
        return template_to_job(obj, name=name, namespace=namespace)
    if kind == (VCJOB.api_version, VCJOB.kind):
        return job_to_template(obj, name=name, namespace=namespace)
    shown = "/".join(str(part) for part in kind if part) or "an object without apiVersion and kind"
    raise ConversionError(
        f"cannot convert {shown}: expected a {JOBTEMPLATE.api_version} {JOBTEMPLATE.kind} "
        f"or a {VCJOB.api_version} {VCJOB.kind} (vcjob)"
    )


def template_to_job(template: Mapping[str, Any], *, name: str | None = None,
                    namespace: str | None = None) -> dict[str, Any]:
    """The vcjob manifest that runs ``template``'s spec as it is."""
    return _envelope(VCJOB.api_version, VCJOB.kind, template, name=name, namespace=namespace)


def job_to_template(job: Mapping[str, Any], *, name: str | None = None,
                    namespace: str | None = None) -> dict[str, Any]:
    """The JobTemplate with ``job``'s spec; named after its flow if a JobFlow created it."""
    origin = _keys(job, "labels").get(CREATED_BY_JOBTEMPLATE) or _keys(job, "annotations").get(CREATED_BY_JOBTEMPLATE)
    if name is None:
        name = template_in_label(origin)
    return _envelope(JOBTEMPLATE.api_version, JOBTEMPLATE.kind, job, name=name, namespace=namespace)


def _keys(obj: Mapping[str, Any], field: str) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get(field) or {}


def _envelope(api_version: str, kind: str, source: Mapping[str, Any], *, name: str | None,
              namespace: str | None) -> dict[str, Any]:
    metadata = {key: copy.deepcopy(value) for key, value in (source.get("metadata") or {}).items()
                if key in KEPT_METADATA}
    for field in ("labels", "annotations"):
        if field in metadata:
            kept = {key: value for key, value in (metadata[field] or {}).items() if key not in DROPPED_KEYS}
            if kept:
                metadata[field] = kept
            else:
                del metadata[field]
    if name is not None:
        metadata["name"] = name
    if namespace is not None:
        metadata["namespace"] = namespace
    result: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    if "spec" in source:
        result["spec"] = copy.deepcopy(source["spec"])
    return result
