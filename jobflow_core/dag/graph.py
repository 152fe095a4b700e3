"""A JobFlow's flows as a graph: nodes, edges, a topological order and a level for each node.

The planner never needs an order (it asks each flow whether its targets are Completed), but people do: a view
of a flow reads best from the roots down, and a drawing needs columns. :func:`flow_graph` gives both, for any
spec, including an invalid one, so that a broken flow can still be shown:

* ``nodes``: each distinct flow name in spec order, then every undefined target (in the order first named);
* ``edges``: ``(target, dependent)`` pairs, in spec order, duplicates dropped. An edge points the way work flows:
  from the flow that must finish to the flow that waits for it;
* ``order``: a topological order: by level, then spec order. Flows on a cycle, and the flows after them, cannot
  be ordered; they follow in spec order, and are ``blocked``;
* ``levels``: the length of the longest path from a root (a flow without targets) to the node, so every edge goes
  from a lower level to a higher one. A blocked node sits one level below its deepest ordered target;
* ``edge_notes``: what a dependent waits for its target to do, when it is not to succeed (``Failed``,
  ``Finished``), so an error branch or a cleanup is seen as one;
* ``finals``: the ``finally`` flows, which run after every other flow whatever their edges say, and
  ``conditions``: each flow's ``when`` (CEL), the other way a flow may not run; ``fan_outs``: the ``forEach``
  flows and what they run over.

The order and the levels come from the standard library's :class:`graphlib.TopologicalSorter`, batch by batch:
:meth:`~graphlib.TopologicalSorter.get_ready` hands out every node whose targets are all done, and the whole
batch is marked done before the next is asked for, so a node comes out in the batch after its deepest target's:
its batch index is its level. On a cycle, :meth:`~graphlib.TopologicalSorter.prepare` raises
:class:`graphlib.CycleError`, but ``get_ready()`` still hands out every node it can; the nodes it never hands out
are the blocked ones.

Linear in flows plus edges, like the validation (reference G.8).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from graphlib import CycleError, TopologicalSorter

from jobflow_core.models import AwaitedOutcome, Flow, JobFlow


@dataclass(frozen=True)
class FlowGraph:
    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    order: tuple[str, ...]
    levels: Mapping[str, int]
    undefined: frozenset[str]
    """Targets that name no flow (the spec is invalid); they appear as nodes without targets."""
    blocked: frozenset[str]
    """Flows on a cycle or after one: no topological order exists for them."""
    edge_notes: Mapping[tuple[str, str], str] = field(default_factory=dict)
    finals: frozenset[str] = frozenset()
    conditions: Mapping[str, str] = field(default_factory=dict)
    fan_outs: Mapping[str, str] = field(default_factory=dict)
    """Each ``forEach`` flow and what it runs over (``6 items``, ``params.shards``, ``result of split``)."""
    loops: Mapping[str, str] = field(default_factory=dict)
    """Each ``repeat`` flow and its ``until``."""

    def targets(self, node: str) -> list[str]:
        """What ``node`` waits for, in spec order."""
        return list(self._targets.get(node, ()))

    def dependents(self, node: str) -> list[str]:
        """What waits for ``node``, in spec order."""
        return list(self._dependents.get(node, ()))

    @cached_property
    def _targets(self) -> dict[str, list[str]]:
        """Indexed once: asking each of 2,000 flows for its targets by scanning the edges was quadratic."""
        index: dict[str, list[str]] = {}
        for source, dependent in self.edges:
            index.setdefault(dependent, []).append(source)
        return index

    @cached_property
    def _dependents(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for source, dependent in self.edges:
            index.setdefault(source, []).append(dependent)
        return index


def flow_graph(jobflow: JobFlow) -> FlowGraph:
    """The graph of ``jobflow``'s spec (see the module docstring)."""
    flows = {}
    for flow in jobflow.spec.flows or ():
        flows.setdefault(flow.name, flow)
    edges: dict[tuple[str, str], None] = {}
    edge_notes: dict[tuple[str, str], str] = {}
    undefined: dict[str, None] = {}
    for name, flow in flows.items():
        outcome = flow.depends_on.outcome if flow.depends_on else None
        for target in (flow.depends_on.targets if flow.depends_on else None) or ():
            edges[(target, name)] = None
            if outcome is not None and outcome is not AwaitedOutcome.SUCCEEDED:
                edge_notes[(target, name)] = outcome.value
            if target not in flows:
                undefined[target] = None
    nodes = (*flows, *undefined)
    targets: dict[str, list[str]] = {node: [] for node in nodes}
    for source, dependent in edges:
        targets[dependent].append(source)
    order, levels = _order(nodes, targets)
    blocked = [node for node in nodes if node not in levels]
    for node in blocked:
        levels[node] = max((levels.get(target, -1) for target in targets[node]), default=-1) + 1
    return FlowGraph(
        nodes=nodes,
        edges=tuple(edges),
        order=(*order, *blocked),
        levels=levels,
        undefined=frozenset(undefined),
        blocked=frozenset(blocked),
        edge_notes=edge_notes,
        finals=frozenset(name for name, flow in flows.items() if flow.final),
        conditions={name: flow.when for name, flow in flows.items() if flow.when},
        fan_outs={name: _over(flow) for name, flow in flows.items() if flow.for_each is not None},
        loops={name: flow.repeat.until for name, flow in flows.items() if flow.repeat is not None},
    )


def _over(flow: Flow) -> str:
    """What a ``forEach`` flow runs over, in a few words."""
    source = flow.for_each
    assert source is not None
    if source.items is not None:
        return f"{len(source.items)} items"
    if source.range is not None:
        return "a range"
    return f"params.{source.param}" if source.param is not None else f"the result of {source.result}"


def _order(nodes: tuple[str, ...], targets: Mapping[str, list[str]]) -> tuple[list[str], dict[str, int]]:
    """The nodes not blocked by a cycle, by level then spec order, and their levels."""
    sorter: TopologicalSorter[str] = TopologicalSorter()
    for node in nodes:
        sorter.add(node, *targets[node])
    try:
        sorter.prepare()
    except CycleError:
        pass  # the nodes on the cycle, and after it, never come out of get_ready(): they are the blocked ones
    position = {node: index for index, node in enumerate(nodes)}
    order: list[str] = []
    levels: dict[str, int] = {}
    level = 0
    while batch := sorter.get_ready():
        in_spec_order = sorted(batch, key=position.__getitem__)
        order.extend(in_spec_order)
        levels.update(dict.fromkeys(in_spec_order, level))
        sorter.done(*batch)
        level += 1
    return order, levels
