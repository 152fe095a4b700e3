"""How results are printed: vcctl's tables, and JSON/YAML for scripts (ages and forecasts are
:mod:`display.times`'s).

vcctl's table (reference D): each column left-aligned to ``max(len(header), len(longest value)) + 4``
characters, every line padded, the last column included, so a line always ends in at least four spaces.
:func:`vcctl_table` reproduces it exactly; the views vcctl does not have (``status``, ``plan``) use
:func:`columns`, kubectl's layout (three spaces between columns, nothing trailing).

``-o json`` is indented by two spaces, as vcctl's ``MarshalIndent``; ``-o yaml`` has sorted keys and block
style, as ``sigs.k8s.io/yaml`` (and kubectl) print it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import yaml

from kubectl_jobflow.formats import Output

if TYPE_CHECKING:
    from jobflow_core.vocabulary.api import ApiType

COLUMN_SPACING = 4


def vcctl_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = vcctl_widths(headers, *rows)
    return "".join(vcctl_row(row, widths) for row in (headers, *rows))


def vcctl_widths(*rows: Sequence[str], at_least: Sequence[int] = ()) -> list[int]:
    """Each column's width in vcctl's table: its longest cell plus four (and no less than ``at_least``'s)."""
    widths = [max(len(cell) for cell in column) + COLUMN_SPACING for column in zip(*rows, strict=True)]
    return [max(pair) for pair in zip(widths, at_least, strict=True)] if at_least else widths


def vcctl_row(row: Sequence[str], widths: Sequence[int]) -> str:
    return "".join(f"{cell:<{width}}" for cell, width in zip(row, widths, strict=True)) + "\n"


def columns(headers: Sequence[str], rows: Sequence[Sequence[str]], *, gap: int = 3) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]
    return "".join(("".join(f"{cell:<{width + gap}}" for cell, width in zip(row, widths, strict=True))).rstrip()
                   + "\n" for row in (headers, *rows))


def utc_now() -> datetime:
    return datetime.now(UTC)


def dump(value: Any, fmt: str) -> str:
    """``value`` as ``json`` or ``yaml`` text, ending in a newline."""
    if fmt == "json":
        return json.dumps(value, indent=2) + "\n"
    return yaml.safe_dump(value, sort_keys=True, default_flow_style=False, allow_unicode=True)


def resource_of(api_type: ApiType) -> str:
    """``jobflow.flow.volcano.sh``: how kubectl names a type in ``-o name`` and ``condition met`` lines."""
    return f"{api_type.kind.lower()}.{api_type.group}"


def formatted(value: Any, output: Output) -> str:
    """``value`` as ``-o`` asks for data: ``json``, ``yaml`` or ``jsonpath=`` (kubectl's template, applied to it)."""
    if output.format == "jsonpath":
        from kubectl_jobflow.jsonpath import jsonpath

        return jsonpath(output.template or "", value)
    return dump(value, output.format)


Table = Callable[[list[dict[str, Any]], bool], tuple[Sequence[str], list[list[str]]]]
"""Objects to a table: (headers, rows), the wide one when asked."""


def objects_text(objects: list[dict[str, Any]], output: Output | None, *, resource: str, table: Table,
                 layout: Callable[[Sequence[str], Sequence[Sequence[str]]], str] = vcctl_table,
                 no_headers: bool = False, single: bool = False) -> str:
    """Objects as ``-o`` asks, as kubectl prints them: a table (``wide``: more columns), ``name``
    (``<resource>/<name>``), ``custom-columns=``, or data; one object named by itself is printed alone (``single``),
    several as a ``kind: List``."""
    fmt = output.format if output else ""
    if fmt in ("", "wide"):
        text = layout(*table(objects, fmt == "wide"))
        return text.split("\n", 1)[1] if no_headers else text
    if fmt == "name":
        return "".join(f"{resource}/{obj['metadata']['name']}\n" for obj in objects)
    if fmt == "custom-columns":
        from kubectl_jobflow.jsonpath import custom_columns

        return custom_columns(output.template or "", objects, no_headers=no_headers)
    value = objects[0] if single else {"apiVersion": "v1", "kind": "List", "items": objects,
                                       "metadata": {"resourceVersion": ""}}
    return formatted(value, output)


def dump_all(values: Sequence[Any], fmt: str) -> str:
    """Several objects: YAML documents separated by ``---``, or one JSON value per object."""
    if fmt == "json":
        return "".join(dump(value, fmt) for value in values)
    return "---\n".join(dump(value, fmt) for value in values)


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without ``metadata.managedFields``, which nobody reading a describe wants (vcctl drops it too)."""
    metadata = {key: value for key, value in (obj.get("metadata") or {}).items() if key != "managedFields"}
    return {**obj, "metadata": metadata}
