"""The seed diamond, defined once: the JobFlow every tier runs, flows a -> b -> {c, d} -> e.

It is upstream's own example (reference B.10) and ``examples/diamond/``: a start, a fan-out, a join, so one small
flow exercises ordering, parallel starts and waiting on two targets. Tests used to write it out each in their own
way and could drift apart without anyone noticing; ``tests/unit/test_one_helper_each.py`` fails when a second
copy appears. A test that needs a variant (another order, one flow more, a patched flow) builds it from
:func:`diamond_flows`, so the variant says what it changes.

The flows are data; :func:`diamond` makes the JobFlow object and :func:`diamond_yaml` the YAML a user would apply.
Plain dicts and YAML only: the unit tier, the cluster tier and the benchmarks all import this.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

_FLOWS = [
    {"name": "a"},
    {"name": "b", "dependsOn": {"targets": ["a"]}},
    {"name": "c", "dependsOn": {"targets": ["b"]}},
    {"name": "d", "dependsOn": {"targets": ["b"]}},
    {"name": "e", "dependsOn": {"targets": ["c", "d"]}},
]


def diamond_flows() -> list[dict[str, Any]]:
    """The five flows in spec order, a fresh copy each call, so a test may change its own."""
    return copy.deepcopy(_FLOWS)


def diamond(name: str = "test", *, retain: str | None = None, metadata: dict[str, Any] | None = None,
            flows: list[dict[str, Any]] | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """The seed diamond as a JobFlow object named ``name``.

    ``retain`` sets ``spec.jobRetainPolicy`` (left out, the API's default applies: ``retain``); ``metadata`` is
    merged over ``{name}`` (a namespace, a uid, annotations); ``flows`` replaces the diamond's for a variant;
    ``status`` is added as given.
    """
    spec: dict[str, Any] = {"jobRetainPolicy": retain} if retain else {}
    spec["flows"] = diamond_flows() if flows is None else flows
    made = {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": name, **(metadata or {})},
            "spec": spec}
    return made | ({"status": status} if status is not None else {})


def diamond_yaml(name: str = "test", *, retain: str | None = None, metadata: dict[str, Any] | None = None,
                 flows: list[dict[str, Any]] | None = None, status: dict[str, Any] | None = None) -> str:
    """:func:`diamond` as a YAML document, for ``kubectl apply``-like helpers and YAML-reading fixtures."""
    made = diamond(name, retain=retain, metadata=metadata, flows=flows, status=status)
    return yaml.safe_dump(made, sort_keys=False)
