"""``flows[].forEach``: a flow that runs once per item (fan-out), and how its items are named and counted.

The items come from exactly one source:

=================================  ========================================================================
``items: [a, b, {lr: 0.1}]``       a literal list of strings, numbers or objects
``range: {start, end, step}``      ``start`` (default 0), ``start + step`` (default 1), ... up to ``end``
                                   included; or ``range: {start, count}``: ``count`` numbers
``param: NAME``                    a parameter whose value is a JSON list (``-p shards='["a","b"]'``)
``result: TARGET``                 a target's result (termination message), a JSON list, known once the
                                   target ended: until then the flow waits, like any dependent of it
=================================  ========================================================================

Item ``i`` (from 0) runs as vcjob ``<jobflow>-<flow>-<i>`` (its retries ``...-<i>-r<k>``), labelled and annotated
``flow.volcano.sh/item-index: "<i>"`` (on its pods too), and its patch reads ``{{item}}``, ``{{item.KEY}}`` and
``{{index}}`` (:mod:`jobflow_core.flows.parameters`). Names are by index, not value, so they are always valid and stable
whatever the items hold. ``parallelism`` caps how many items have a live vcjob that has not ended; items start in
index order. A flow has at most :data:`MAX_ITEMS` items.

The fan-out flow is one node of the DAG: it **succeeded** when every item's last attempt Completed (an empty list
succeeds at once), **failed** when every item ended and one failed, and has not ended before that; its dependents
see only that. A condition reads the items of a target as ``targets.<flow>.items`` (each with ``index``,
``outcome``, ``phase``, ``result``) and counts ``succeeded``, ``failed``, ``total``, plus ``results`` (the
results in index order): ``dependsOn: {targets: [shard], outcome: Finished}`` with
``when: targets.shard.succeeded >= 8`` continues if at least 8 shards succeeded.
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jobflow_core.flows.parameters import Item, values
from jobflow_core.models import Flow, JobFlow
from jobflow_core.vocabulary.name_rules import MAX_NAME_LENGTH, is_dns1123_label
from jobflow_core.vocabulary.naming import attempt_job_name, is_job_of_flow, job_name
from jobflow_core.vocabulary.spec_errors import SpecError

MAX_ITEMS = 2000
"""At most this many items per flow: each is a vcjob the JobFlow's status accounts for."""
MAX_INDEX_DIGITS = len(str(MAX_ITEMS - 1))


@dataclass(frozen=True)
class Expansion:
    """A fan-out flow's items, or why they are not known (yet)."""

    items: tuple[Item, ...] | None
    """None: not known yet (the target's result is not in), or never (``error``)."""
    error: str | None = None


def item_base_name(*, jobflow: str, flow: str, index: int) -> str:
    """The vcjob name of item ``index``'s first attempt: ``<jobflow>-<flow>-<index>``."""
    return f"{job_name(jobflow=jobflow, flow=flow)}-{index}"


def expand(flow: Flow, *, params: Mapping[str, str], result_of: Callable[[str], str | None]) -> Expansion:
    """The items of ``flow`` (which has ``forEach``); ``result_of(target)`` is the target's result text, None while
    it is not known."""
    source = flow.for_each
    assert source is not None, "only a forEach flow has items"
    if source.items is not None:
        values = list(source.items)
    elif source.range is not None:
        span = source.range
        start, step = span.start or 0, span.step or 1
        count = span.count if span.count is not None else max(0, ((span.end or 0) - start) // step + 1)
        if count > MAX_ITEMS:
            return Expansion(None, f"its range has {count} numbers, more than {MAX_ITEMS}")
        values = [start + step * i for i in range(count)]
    elif source.param is not None:
        loaded = _json_list(params.get(source.param))
        if isinstance(loaded, str):
            return Expansion(None, f'parameter "{source.param}" {loaded}')
        values = loaded
    else:
        text = result_of(source.result or "")
        if text is None:
            return Expansion(None)
        loaded = _json_list(text)
        if isinstance(loaded, str):
            return Expansion(None, f'the result of "{source.result}" {loaded}')
        values = loaded
    if len(values) > MAX_ITEMS:
        return Expansion(None, f"it has {len(values)} items, more than {MAX_ITEMS}")
    return Expansion(tuple(Item(index, value) for index, value in enumerate(values)))


def _json_list(text: str | None) -> list | str:
    """The JSON list in ``text``, or what is wrong with it."""
    try:
        value = json.loads(text or "")
    except ValueError:
        return f"is not a JSON list: {(text or '')[:80]!r}"
    return value if isinstance(value, list) else f"is not a JSON list: {(text or '')[:80]!r}"


def errors(jobflow: JobFlow) -> list[SpecError]:
    """What is wrong with the ``forEach`` of each flow, in spec order."""
    flows = list(jobflow.spec.flows or ())
    params = values(jobflow)
    by_name = {flow.name: flow for flow in flows}
    found = []
    for flow in flows:
        if flow.repeat is not None:
            found += _names(jobflow, flow, names=by_name, last_name=False)
        source = flow.for_each
        if source is None:
            continue
        found += _names(jobflow, flow, names=by_name)
        given = [key for key in ("items", "range", "param", "result") if getattr(source, key) is not None]
        if len(given) != 1:
            found.append(_error(flow, f"forEach has {' and '.join(given) or 'no source'}",
                                "give exactly one of items, range, param or result"))
            continue
        if source.range is not None and (source.range.end is None) == (source.range.count is None):
            found.append(_error(flow, "forEach.range needs end or count", "give one of the two"))
        if source.param is not None:
            if source.param not in params:
                found.append(_error(flow, f'forEach.param "{source.param}" is not a parameter with a value',
                                    f"declare it: spec.parameters: [{{name: {source.param}, value: '[...]'}}]"))
            else:
                expansion = expand(flow, params=params, result_of=lambda _: None)
                if expansion.error:
                    found.append(_error(flow, f"forEach: {expansion.error}", "set it to a JSON list"))
        if source.items is not None and len(source.items) > MAX_ITEMS:
            found.append(_error(flow, f"forEach has {len(source.items)} items, more than {MAX_ITEMS}",
                                "split the work into fewer, larger items"))
        targets = flow.depends_on.targets if flow.depends_on and flow.depends_on.targets else []
        if source.result is not None and source.result not in targets:
            found.append(_error(flow, f'forEach.result "{source.result}" is not one of its dependsOn.targets',
                                f'add "{source.result}" to dependsOn.targets: its result is read once it ended'))
        elif source.result is not None and (by_name[source.result].for_each is not None
                                            or by_name[source.result].repeat is not None):
            found.append(_error(flow, f'forEach.result "{source.result}" runs several vcjobs (forEach or repeat), '
                                      "so it has no single result", "read their results in a condition instead"))
        if flow.final:
            found.append(_error(flow, "a finally flow cannot have forEach", "move the fan-out into a flow that is "
                                                                            "not finally"))
        if source.parallelism is not None and source.parallelism < 1:
            found.append(_error(flow, "forEach.parallelism must be at least 1", "set it to 1 or more"))
    for flow in flows:
        probe = flow.depends_on.probe if flow.depends_on else None
        fanned = [t for t in (flow.depends_on.targets or ()) if t in by_name
                  and (by_name[t].for_each is not None or by_name[t].repeat is not None)] if probe else []
        if fanned:
            found.append(_error(flow, f'its probe watches "{fanned[0]}", which runs several vcjobs (forEach or '
                                      "repeat), not one",
                                "depend on the forEach flow without a probe"))
    return found


def _most_items(flow: Flow, params: Mapping[str, str]) -> int:
    """How many items the flow can have: known for a list, a range or a parameter; the limit for a result."""
    expansion = expand(flow, params=params, result_of=lambda _: None)
    return len(expansion.items) if expansion.items is not None else MAX_ITEMS


def _names(jobflow: JobFlow, flow: Flow, *, names: Mapping[str, Flow], last_name: bool = True) -> list[SpecError]:
    """The last item's last retry must have a valid vcjob name (a repeat's last iteration is checked by
    :mod:`jobflow_core.flows.loops`), and no other flow may have the name of one of its vcjobs."""
    found = []
    last_index = max(0, _most_items(flow, values(jobflow)) - 1) if last_name else 0
    last = attempt_job_name(jobflow=jobflow.name, flow=flow.name, index=last_index,
                            attempt=1 + (flow.retry.limit if flow.retry else 0))
    if last_name and not is_dns1123_label(last):
        found.append(SpecError(code="InvalidJobName",
                               message=f'vcjob name "{last}" of the last item of flow "{flow.name}" is not a '
                               f"DNS-1123 label (at most {MAX_NAME_LENGTH} characters)",
                               hint="shorten the JobFlow or the flow, or use fewer items"))
    for other in names:
        if other != flow.name and is_job_of_flow(job_name(jobflow=jobflow.name, flow=other), jobflow=jobflow.name,
                                                 flow=flow.name):
            found.append(SpecError(code="ItemNameTaken",
                                   message=f'flow "{other}" has the vcjob name of an item or iteration of flow '
                                   f'"{flow.name}"',
                                   hint=f'rename flow "{other}"'))
    return found


def _error(flow: Flow, message: str, hint: str) -> SpecError:
    return SpecError(code="InvalidForEach", message=f'flow "{flow.name}": {message}', hint=hint)
