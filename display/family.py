"""A JobFlow with the child JobFlows its flows made, at every level below it, as one tree of facts.

A flow ``flows[].jobFlow`` makes a child JobFlow (:mod:`jobflow_core.flows.children`): a JobFlow of its own in the
same namespace, labelled ``flow.volcano.sh/parent=<parent>`` and controlled by its parent (owner reference, the
parent's UID). Which JobFlows are a parent's children is decided here as the engine decides which vcjobs are a
JobFlow's: the label only narrows the search (one LIST of the namespace's JobFlows that have it, for every level at
once), the controller UID decides (a label can be copied, or left behind by a parent deleted and created again
under the same name; a UID names one parent).

Pure, like :mod:`display.facts`: the callers read the objects (``kubectl jobflow status``, the dashboard's store) and
hand them in; :func:`take_family` builds the tree in memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from display.facts import JobFlowFacts, take
from jobflow_core.flows.children import MAX_DEPTH
from jobflow_core.vocabulary.api import PARENT

DEEPEST = MAX_DEPTH + 1
"""Levels followed below the JobFlow asked for: the engine makes none deeper than :data:`MAX_DEPTH` below a JobFlow
without a parent, and a status asked of a child starts lower; the bound also ends a loop of owner references that
only a hand-written object could make."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The UID of the object that controls ``obj`` (its controller owner reference), if any."""
    return next((ref.get("uid") for ref in _meta(obj).get("ownerReferences") or () if ref.get("controller")), None)


def is_child_of(obj: Mapping[str, Any], parent: Mapping[str, Any]) -> bool:
    """Whether JobFlow ``obj`` is a child JobFlow of ``parent``: labelled so, in its namespace, controlled by its
    UID."""
    meta, theirs = _meta(obj), _meta(parent)
    return (bool(theirs.get("uid")) and (meta.get("labels") or {}).get(PARENT) == theirs.get("name")
            and meta.get("namespace") == theirs.get("namespace") and controller_uid(obj) == theirs.get("uid"))


def children_of(parent: Mapping[str, Any], jobflows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The child JobFlows of ``parent`` among ``jobflows``, by name."""
    return sorted((obj for obj in jobflows if is_child_of(obj, parent)), key=lambda obj: _meta(obj).get("name", ""))


def take_family(jobflow: dict[str, Any], *, jobflows: Iterable[dict[str, Any]], jobs: Iterable[dict[str, Any]],
                now: datetime | None = None) -> JobFlowFacts:
    """The facts of ``jobflow`` (:func:`display.facts.take`) with, under each flow that made child JobFlows, the
    facts of those children, and so on down. ``jobflows`` may hold any JobFlows of the namespace (the children at
    every level are found among them); ``jobs`` the vcjobs of ``jobflow`` and of its descendants (each JobFlow
    keeps only those it controls)."""
    by_parent = _by_parent(jobflows)
    by_owner: dict[str | None, list[dict[str, Any]]] = {}
    for job in jobs:
        by_owner.setdefault(controller_uid(job), []).append(job)
    return _take(jobflow, by_parent=by_parent, by_owner=by_owner, now=now, depth=0, seen=set())


def _take(jobflow: dict[str, Any], *, by_parent: Mapping[str, list[dict[str, Any]]],
          by_owner: Mapping[str | None, list[dict[str, Any]]], now: datetime | None, depth: int,
          seen: set[str]) -> JobFlowFacts:
    meta = _meta(jobflow)
    seen.add(meta.get("uid") or "")
    children = [child for child in children_of(jobflow, by_parent.get(meta.get("name", ""), ()))
                if _meta(child).get("uid") not in seen] if depth < DEEPEST else []
    nested = {_meta(child)["name"]: _take(child, by_parent=by_parent, by_owner=by_owner, now=now, depth=depth + 1,
                                          seen=seen) for child in children}
    return take(jobflow, by_owner.get(meta.get("uid"), []), now=now, children=children, nested=nested)


def descendants(jobflow: Mapping[str, Any], jobflows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The child JobFlows of ``jobflow`` among ``jobflows``, their children, and so on down (parents first): the
    JobFlows whose vcjobs a caller must read too."""
    by_parent = _by_parent(jobflows)
    found: list[dict[str, Any]] = []
    level, seen = [jobflow], {_meta(jobflow).get("uid")}
    for _ in range(DEEPEST):
        level = [child for parent in level
                 for child in children_of(parent, by_parent.get(_meta(parent).get("name", ""), ()))
                 if _meta(child).get("uid") not in seen]
        seen.update(_meta(child).get("uid") for child in level)
        found += level
    return found


def _by_parent(jobflows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The JobFlows labelled as some JobFlow's children, by the parent's name the label gives."""
    by_parent: dict[str, list[dict[str, Any]]] = {}
    for obj in jobflows:
        parent = (_meta(obj).get("labels") or {}).get(PARENT)
        if parent:
            by_parent.setdefault(parent, []).append(obj)
    return by_parent
