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
  from a lower level to a higher one. A blocked node sits one level below its deepest ordered target.

Linear in flows plus edges, like the validation (reference G.8).
"""

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from jobflow_core.models import JobFlow


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

    def targets(self, node: str) -> list[str]:
        """What ``node`` waits for, in spec order."""
        return [source for source, dependent in self.edges if dependent == node]

    def dependents(self, node: str) -> list[str]:
        """What waits for ``node``, in spec order."""
        return [dependent for source, dependent in self.edges if source == node]


def flow_graph(jobflow: JobFlow) -> FlowGraph:
    """The graph of ``jobflow``'s spec (see the module docstring)."""
    flows = {}
    for flow in jobflow.spec.flows or ():
        flows.setdefault(flow.name, flow)
    edges: dict[tuple[str, str], None] = {}
    undefined: dict[str, None] = {}
    for name, flow in flows.items():
        for target in (flow.depends_on.targets if flow.depends_on else None) or ():
            edges[(target, name)] = None
            if target not in flows:
                undefined[target] = None
    nodes = (*flows, *undefined)
    order, levels = _order(nodes, tuple(edges))
    blocked = [node for node in nodes if node not in levels]
    for node in blocked:
        parents = [levels.get(source, -1) for source, dependent in edges if dependent == node]
        levels[node] = max(parents, default=-1) + 1
    return FlowGraph(
        nodes=nodes,
        edges=tuple(edges),
        order=(*order, *blocked),
        levels=levels,
        undefined=frozenset(undefined),
        blocked=frozenset(blocked),
    )


def _order(nodes: tuple[str, ...], edges: tuple[tuple[str, str], ...]) -> tuple[list[str], dict[str, int]]:
    waiting = dict.fromkeys(nodes, 0)
    after: dict[str, list[str]] = {node: [] for node in nodes}
    for source, dependent in edges:
        waiting[dependent] += 1
        after[source].append(dependent)
    ready = deque(node for node, count in waiting.items() if count == 0)
    levels = dict.fromkeys(ready, 0)
    while ready:
        node = ready.popleft()
        for dependent in after[node]:
            levels[dependent] = max(levels.get(dependent, 0), levels[node] + 1)
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                ready.append(dependent)
    position = {node: index for index, node in enumerate(nodes)}
    ordered = sorted((node for node in nodes if waiting[node] == 0), key=lambda node: (levels[node], position[node]))
    return ordered, {node: levels[node] for node in ordered}
