"""The names of the output formats, kept free of imports so the parser (and ``--help``) stays fast.

Every read command takes one ``-o/--output``, as kubectl's do: ``wide``, ``name``, ``json``, ``yaml``,
``jsonpath=TEMPLATE`` and ``custom-columns=SPEC`` where the command prints objects (``get``, ``list``,
``history``), a subset where it prints a view of its own (``status``: no ``wide``/``custom-columns``; ``graph``:
``text``, ``dot``, ``mermaid``, ``svg``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NamedTuple

OBJECTS = ("wide", "name", "json", "yaml", "jsonpath=", "custom-columns=")
"""``get``, ``list``, ``history``: kubectl's formats."""
DATA = ("json", "yaml", "jsonpath=")
"""Commands whose ``-o`` prints data for scripts (``validate``, ``plan``)."""
VIEWS = ("name", "json", "yaml", "jsonpath=")
"""``status``, ``describe``: a view or an object, no table to widen."""
GRAPH = ("text", "dot", "mermaid", "svg")
TIMELINE = ("text", "svg")
CONVERT = ("json", "yaml")
PER_OBJECT = ("", "wide", "name", "custom-columns")
"""Formats that print a line per object (``""``: the default table): with no object they print nothing, and the
command says there is none; the data formats print an empty list instead."""
KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")
"""The file names that make a directory kustomize's input (``--kustomize DIR``), not a folder of objects."""


def holds_kustomization(path: str | Path) -> bool:
    return any((Path(path) / name).is_file() for name in KUSTOMIZATIONS)


class Output(NamedTuple):
    """``-o``: the format, and the template of ``jsonpath=`` or ``custom-columns=`` (else None)."""

    format: str
    template: str | None = None


def per_object(output: Output | None) -> bool:
    """Whether ``-o`` (None: not given) prints a line per object (:data:`PER_OBJECT`)."""
    return (output.format if output else "") in PER_OBJECT


def output_type(allowed: tuple[str, ...]):
    """An argparse ``type`` that reads ``-o`` against ``allowed``, refusing others with the list of what is."""
    def parse(value: str) -> Output:
        for choice in allowed:
            if choice.endswith("=") and value.startswith(choice):
                if not value[len(choice):]:
                    raise argparse.ArgumentTypeError(f"{choice} needs a template: -o '{choice}...'")
                return Output(choice[:-1], value[len(choice):])
            if value == choice:
                return Output(value)
        if value in ("jsonpath", "custom-columns"):
            raise argparse.ArgumentTypeError(f"{value} needs a template: -o '{value}=...'")
        shown = ", ".join(choice + ("..." if choice.endswith("=") else "") for choice in allowed)
        raise argparse.ArgumentTypeError(f"unable to match a printer suitable for the output format {value!r}, "
                                         f"the allowed formats are: {shown}")
    parse.__name__ = "output format"
    parse.choices = allowed  # type: ignore[attr-defined]  # what completion offers for -o
    return parse
