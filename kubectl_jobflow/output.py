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
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

FORMATS = ("json", "yaml")
COLUMN_SPACING = 4


def vcctl_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(cell) for cell in column) + COLUMN_SPACING for column in zip(headers, *rows, strict=True)]
    return "".join("".join(f"{cell:<{width}}" for cell, width in zip(row, widths, strict=True)) + "\n"
                   for row in (headers, *rows))


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


def dump_all(values: Sequence[Any], fmt: str) -> str:
    """Several objects: YAML documents separated by ``---``, or one JSON value per object."""
    if fmt == "json":
        return "".join(dump(value, fmt) for value in values)
    return "---\n".join(dump(value, fmt) for value in values)


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without ``metadata.managedFields``, which nobody reading a describe wants (vcctl drops it too)."""
    metadata = {key: value for key, value in (obj.get("metadata") or {}).items() if key != "managedFields"}
    return {**obj, "metadata": metadata}
