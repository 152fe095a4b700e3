"""``flows[].patch.jobSpec``: per-flow overrides merged into the JobTemplate's spec when the vcjob is built.

Two flows may run the same JobTemplate with different parameters (issue #4275 of upstream, design doc PR #4411).
The merge follows the upstream design's table, on the JSON the API server stores:

==============================  ==============================================================================
where                           how a patch value is merged
==============================  ==============================================================================
job-level scalars               replaced (``minAvailable``, ``queue``, ``maxRetry``, ``schedulerName``, ...)
``tasks``                       merged by ``name``; a patch task with a new name is appended
``policies`` (job and task)     replaced as a whole list
``plugins``                     merged by key (a key's argument list is replaced)
``volumes`` (job level)         merged by ``mountPath``
task ``template.spec``          ``containers`` / ``initContainers`` merged by ``name``; ``volumes`` by ``name``
container                       ``env`` merged by ``name``; ``volumeMounts`` by ``mountPath``; others replaced
any other object                merged key by key, recursively
any other list                  replaced
==============================  ==============================================================================

An unset field never overrides the template: a key that is absent (or ``null``) in the patch leaves the
template's value alone. That is why our CRD declares no defaults under ``patch`` (upstream's CRD injects
``queue: default`` and ``maxRetry: 3`` into every patch, which a merge would take for user intent). Items of keyed
lists are replaced whole when they match (an env var's ``value`` and ``valueFrom`` must not mix, nor a volume's
sources); the result never shares structure with either input.
"""

import copy
from collections.abc import Callable
from typing import Any

Json = dict[str, Any]
Merge = Callable[[Any, Any], Any]


def merge_job_spec(spec: Json, patch: Json | None) -> Json:
    """The template ``spec`` with ``patch`` merged in; neither argument is changed."""
    return _merge_object(spec, patch or {}, _JOB_RULES)


def _replace(_: Any, new: Any) -> Any:
    return copy.deepcopy(new)


def _merge_object(base: Any, patch: Any, rules: dict[str, Merge] | None = None) -> Any:
    """Merge two JSON objects key by key; ``rules`` says how particular keys merge, other objects recurse."""
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            continue
        if key in merged and rules and key in rules:
            merged[key] = rules[key](merged[key], value)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_object(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _keyed(key: str, merge_item: Merge = _replace) -> Merge:
    """Merge two lists of objects by ``key``: matching items merge, new items are appended, order is kept."""

    def merge(base: Any, patch: Any) -> Any:
        if not isinstance(base, list) or not isinstance(patch, list):
            return copy.deepcopy(patch)
        merged = copy.deepcopy(base)
        index = {item.get(key): i for i, item in enumerate(merged) if isinstance(item, dict)}
        for item in patch:
            found = index.get(item.get(key)) if isinstance(item, dict) else None
            if found is None:
                merged.append(copy.deepcopy(item))
            else:
                merged[found] = merge_item(merged[found], item)
        return merged

    return merge


def _with(rules: dict[str, Merge]) -> Merge:
    return lambda base, patch: _merge_object(base, patch, rules)


_CONTAINER_RULES: dict[str, Merge] = {
    "env": _keyed("name"),
    "volumeMounts": _keyed("mountPath"),
}
_POD_SPEC_RULES: dict[str, Merge] = {
    "containers": _keyed("name", _with(_CONTAINER_RULES)),
    "initContainers": _keyed("name", _with(_CONTAINER_RULES)),
    "volumes": _keyed("name"),
}
_TASK_RULES: dict[str, Merge] = {
    "template": _with({"spec": _with(_POD_SPEC_RULES)}),
    "policies": _replace,
}
_JOB_RULES: dict[str, Merge] = {
    "tasks": _keyed("name", _with(_TASK_RULES)),
    "policies": _replace,
    "plugins": _with({}),
    "volumes": _keyed("mountPath"),
}
