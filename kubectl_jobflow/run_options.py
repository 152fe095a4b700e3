"""``create -p NAME=VALUE`` and ``--generate-name``: one JobFlow file, run many ways without editing it.

``-p`` sets the value of a parameter the JobFlow declares (``spec.parameters``); naming one it does not declare
is an error that lists those it does, so a typo never runs with a default. ``--generate-name`` turns the name into
``metadata.generateName: <name>-`` so the API server appends five random characters and every run is a new
JobFlow (as ``kubectl create`` does for a manifest with ``generateName``). Both touch JobFlows only.
"""

from __future__ import annotations

import copy
from typing import Any

from kubectl_jobflow import exits
from kubectl_jobflow.errors import CommandError

GENERATED_SUFFIX = "-xxxxx"
"""What the API server adds to a generated name (a dash from us, five characters from it): checked as if there."""


def parse_parameters(pairs: list[str] | None) -> dict[str, str]:
    """``["lr=0.01", "epochs=50"]`` as a mapping; the value may contain ``=``, the name may not be empty."""
    found: dict[str, str] = {}
    for pair in pairs or ():
        name, equals, value = pair.partition("=")
        if not equals or not name:
            raise CommandError(f"-p {pair}: write it as NAME=VALUE, e.g. -p lr=0.01", code=exits.USAGE)
        found[name] = value
    return found


def apply(body: dict[str, Any], *, params: dict[str, str], generate_name: bool) -> dict[str, Any]:
    """The JobFlow ``body`` with the parameter values of this run set, and its name generated if asked."""
    result = copy.deepcopy(body)
    declared = (result.setdefault("spec", {}).get("parameters")) or []
    names = [entry.get("name") for entry in declared if isinstance(entry, dict)]
    unknown = [name for name in params if name not in names]
    if unknown:
        listed = ", ".join(str(name) for name in names) or "none"
        raise CommandError(f"JobFlow {body.get('metadata', {}).get('name')!r} declares no parameter "
                           f"{', '.join(unknown)} (it declares: {listed}): fix the name, or declare it under "
                           "spec.parameters", code=exits.USAGE)
    for entry in declared:
        if isinstance(entry, dict) and entry.get("name") in params:
            entry["value"] = params[entry["name"]]
    if generate_name:
        metadata = result.setdefault("metadata", {})
        name = metadata.pop("name", None) or metadata.get("generateName", "").rstrip("-")
        if not name:
            raise CommandError("--generate-name needs metadata.name (or generateName) in the file to start from",
                               code=exits.USAGE)
        metadata["generateName"] = f"{name}-"
    return result


def as_validated(body: dict[str, Any]) -> dict[str, Any]:
    """The body the admission checks see: a generated name is checked at its full length."""
    metadata = body.get("metadata") or {}
    if "name" in metadata or "generateName" not in metadata:
        return body
    return {**body, "metadata": {**metadata, "name": metadata["generateName"].rstrip("-") + GENERATED_SUFFIX}}
