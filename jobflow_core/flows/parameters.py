"""``spec.parameters`` and placeholders: one JobFlow, run many ways.

A JobFlow declares named parameters with values (defaults a run may change: ``kubectl jobflow create -p
lr=0.01``). The string values of a flow's ``patch.jobSpec`` may name them, and, in a flow with ``forEach``
(:mod:`jobflow_core.flows.items`), its item, with one placeholder syntax:

=====================  ==========================================================================================
``{{params.NAME}}``    the value of parameter ``NAME``
``{{item}}``           the item: a string or number as written, an object or list as compact JSON
``{{item.KEY}}``       one field of an item that is an object
``{{index}}``          the item's index, from 0 (in a ``repeat`` flow: the iteration's, :mod:`jobflow_core.flows.loops`)
=====================  ==========================================================================================

Spaces inside the braces are allowed (``{{ params.lr }}``). Only these roots (``params``, ``item``, ``index``)
are placeholders: any other ``{{...}}`` (a Helm or Go template the job itself reads) is left as written. A
placeholder is replaced wherever it stands in a string value (``--lr={{params.lr}}``), never in keys, and only in
the patch: the JobTemplate's own text is never rewritten, so a template is shared safely. The result of a
substitution is not read again, so a value that itself contains ``{{`` is inserted verbatim.

A target's result, ``{{targets.NAME.result}}``, is substituted in the same pass, but only where
:mod:`jobflow_core.flows.outputs` lets a result go (env values, args, command, pod annotations).

An undefined parameter, ``{{item}}`` in a flow without ``forEach``, and a parameter without a value are admission
errors naming what to fix (:func:`errors`). A condition (``when``, CEL) reads parameters as ``params.NAME``.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobflow_core.flows.outputs import ANY_TARGET_PLACEHOLDER, may_hold_results
from jobflow_core.models import Flow, JobFlow
from jobflow_core.vocabulary.spec_errors import SpecError

PLACEHOLDER = re.compile(r"\{\{\s*(params\.[A-Za-z_][A-Za-z0-9_-]*|item(?:\.[A-Za-z_][A-Za-z0-9_-]*)?|index)\s*\}\}")
_WITH_TARGETS = re.compile(f"{PLACEHOLDER.pattern}|{ANY_TARGET_PLACEHOLDER.pattern}")
MAX_PARAMETERS = 100
MAX_VALUE_LENGTH = 16384
"""A parameter's value is stored in the JobFlow and copied into vcjobs: kept far below an object's size limit."""
PARAMETER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Item:
    """One item of a ``forEach`` flow: its index and its value (any JSON value)."""

    index: int
    value: Any


def values(jobflow: JobFlow) -> dict[str, str]:
    """Each parameter's value, by name (a parameter without one is left out: admission refuses it)."""
    return {p.name: p.value for p in jobflow.spec.parameters or () if p.value is not None}


def text_of(value: Any) -> str:
    """How a value is written into a string: a string as it is, anything else as compact JSON (``0.01``,
    ``true``, ``{"lr":0.01}``)."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def substitute(document: Any, *, params: Mapping[str, str], item: Item | None = None,
               targets: Mapping[str, str] | None = None, path: tuple[str | int, ...] = ()) -> Any:
    """``document`` (JSON) with every placeholder in its string values replaced; a new value, the input unchanged.
    ``targets``: the values of ``{{targets...}}`` placeholders (:mod:`jobflow_core.flows.outputs`), put only where
    :func:`~jobflow_core.flows.outputs.may_hold_results` allows, in the same single pass, so no substituted text is read
    again. A placeholder with nothing to replace it (refused at admission, so only for a spec that slipped past
    it) is left as written."""
    if isinstance(document, str):
        pattern = _WITH_TARGETS if targets and may_hold_results(path) else PLACEHOLDER
        return pattern.sub(lambda match: _replacement(match, params=params, item=item, targets=targets or {}),
                           document)
    if isinstance(document, dict):
        return {key: substitute(value, params=params, item=item, targets=targets, path=(*path, key))
                for key, value in document.items()}
    if isinstance(document, list):
        return [substitute(value, params=params, item=item, targets=targets, path=(*path, i))
                for i, value in enumerate(document)]
    return document


def _replacement(match: re.Match, *, params: Mapping[str, str], item: Item | None,
                 targets: Mapping[str, str]) -> str:
    if match.group(1) is None:
        return targets.get(match.group(2), match.group(0))
    return _value(match.group(1), params=params, item=item, default=match.group(0))


def _value(path: str, *, params: Mapping[str, str], item: Item | None, default: str) -> str:
    root, _, key = path.partition(".")
    if root == "params":
        return params.get(key, default)
    if item is None:
        return default
    if root == "index":
        return str(item.index)
    if not key:
        return text_of(item.value)
    if isinstance(item.value, dict) and key in item.value:
        return text_of(item.value[key])
    return default


def placeholders(document: Any) -> list[str]:
    """Every placeholder path in ``document``'s strings (``params.lr``, ``item.batch``, ``index``), in order."""
    if isinstance(document, str):
        return [match.group(1) for match in PLACEHOLDER.finditer(document)]
    if isinstance(document, dict):
        return [path for value in document.values() for path in placeholders(value)]
    if isinstance(document, list):
        return [path for value in document for path in placeholders(value)]
    return []


def errors(jobflow: JobFlow) -> list[SpecError]:
    """The parameters' problems, then each flow's undefined placeholders, in spec order."""
    declared = jobflow.spec.parameters or ()
    found: list[SpecError] = []
    if len(declared) > MAX_PARAMETERS:
        found.append(SpecError(code="TooManyParameters",
                               message=f"{len(declared)} parameters, more than {MAX_PARAMETERS}",
                               hint="pass a list or an object as one parameter's value (JSON) instead"))
    seen: set[str] = set()
    for parameter in declared:
        if not PARAMETER_NAME.fullmatch(parameter.name):
            found.append(SpecError(code="InvalidParameter", message=f'parameter "{parameter.name}": not a valid name',
                                   hint="start with a letter or _, then letters, digits, _ or -"))
        if parameter.name in seen:
            found.append(SpecError(code="InvalidParameter", message=f'parameter "{parameter.name}" is declared twice',
                                   hint="remove one of the two"))
        seen.add(parameter.name)
        if parameter.value is None:
            found.append(SpecError(code="ParameterWithoutValue", message=f'parameter "{parameter.name}" has no value',
                                   hint=f"give it one: spec.parameters[].value, or kubectl jobflow create -f FILE "
                                   f"-p {parameter.name}=VALUE"))
        elif len(parameter.value) > MAX_VALUE_LENGTH:
            found.append(SpecError(code="InvalidParameter",
                                   message=f'parameter "{parameter.name}": its value is longer than '
                                   f"{MAX_VALUE_LENGTH} characters",
                                   hint="keep big data in a ConfigMap or a volume and pass its name"))
    for flow in jobflow.spec.flows or ():
        found += _undefined(flow, declared=seen)
    return found


def _undefined(flow: Flow, *, declared: set[str]) -> list[SpecError]:
    patch = flow.patch.job_spec.to_wire() if flow.patch is not None and flow.patch.job_spec is not None else None
    undefined: dict[str, None] = {}
    for path in placeholders(patch):
        root, _, key = path.partition(".")
        if (root == "params" and key not in declared) or (root == "item" and flow.for_each is None) \
                or (root == "index" and flow.for_each is None and flow.repeat is None):
            undefined[path] = None
    return [SpecError(code="UndefinedPlaceholder",
                      message=f'flow "{flow.name}": {{{{{path}}}}} in patch.jobSpec names nothing',
                      hint=_hint(path, flow)) for path in undefined]


def _hint(path: str, flow: Flow) -> str:
    if path.startswith("params."):
        name = path.removeprefix("params.")
        return f'declare it (spec.parameters: [{{name: {name}, value: ...}}]) or fix the name'
    return f'{{{{item}}}} exists only in a flow with forEach, {{{{index}}}} also in one with repeat: give ' \
        f'"{flow.name}" a forEach, or use a parameter'
