"""How results are printed: vcctl's tables, Kubernetes' human ages, and JSON/YAML for scripts.

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


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration`` of k8s.io/apimachinery: ``45s``, ``3m20s``, ``15m``, ``5h3m``, ``3d``."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 60 * 2:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def age(timestamp: str | datetime | None, *, now: datetime) -> str:
    """How long ago ``timestamp`` was, as kubectl and vcctl print it; ``<unknown>`` when there is none."""
    when = parse_time(timestamp) if isinstance(timestamp, str) else timestamp
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


def expected(when: datetime | None, *, now: datetime) -> str:
    """A forecast time as a person reads it: ``in 3m``, ``any moment now`` (due or overdue), ``unknown``."""
    if when is None:
        return "unknown"
    seconds = (when - now).total_seconds()
    return f"in {human_duration(seconds)}" if seconds >= 1 else "any moment now"


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
