"""Where each node of a JobFlow's DAG goes: columns by level, rows ordered to keep edges short. Linear time.

A flow's column is its level (:attr:`jobflow_core.dag.graph.FlowGraph.levels`: the longest chain of flows before
it), so every edge points right. Within a column, flows are sorted by the mean row of what they wait for (one
barycentre sweep, left to right), then by DAG order: enough to keep a diamond a diamond and a wide fan-in tidy,
and fast for 2,000 flows (Argo's layout hangs there, argo-workflows#2367). Undefined targets sit in the first
column; flows on a cycle (or after one) in a last column of their own, so a broken spec is drawn, not dropped.
:func:`columns` is the order; ``graph -o svg`` (:mod:`display.svg`) draws the same columns with its own box sizes.
"""

from __future__ import annotations

from collections import defaultdict

from jobflow_core.dag.graph import FlowGraph

NODE_WIDTH = 190.0
NODE_HEIGHT = 66.0
GAP_X = 70.0
GAP_Y = 22.0
MARGIN = 16.0


def columns(graph: FlowGraph) -> list[list[str]]:
    """The DAG's columns, left to right, each listed top to bottom: the one order both pictures draw (the dashboard's
    :func:`place` and ``graph -o svg``'s :mod:`display.svg`), so they never disagree.

    In a column, a flow's key is the mean row of the flows it waits for in earlier columns, else its index in the
    column (DAG order), then that index: rows and indices are both counted from 0, so the two compare."""
    levels = dict(graph.levels)
    for name in graph.undefined:
        levels[name] = 0
    last = max((level for name, level in levels.items() if name not in graph.blocked), default=-1) + 1
    for name in graph.blocked:
        levels[name] = last
    rank = {name: index for index, name in enumerate(graph.order)}
    grouped: dict[int, list[str]] = defaultdict(list)
    for name in sorted(levels, key=lambda n: rank.get(n, len(rank))):
        grouped[levels[name]].append(name)
    row: dict[str, float] = {}
    ordered = []
    for level in sorted(grouped):
        index = {name: position for position, name in enumerate(grouped[level])}

        def key(name: str, index: dict[str, int] = index) -> tuple[float, int]:
            placed = [row[target] for target in graph.targets(name) if target in row]
            return (sum(placed) / len(placed) if placed else float(index[name]), index[name])

        names = sorted(grouped[level], key=key)
        row.update({name: float(position) for position, name in enumerate(names)})
        ordered.append(names)
    return ordered


def place(graph: FlowGraph) -> tuple[dict[str, tuple[float, float]], tuple[float, float]]:
    """Each node's top-left corner, and the drawing's width and height."""
    ordered = columns(graph)
    positions = {name: (MARGIN + column * (NODE_WIDTH + GAP_X), MARGIN + row * (NODE_HEIGHT + GAP_Y))
                 for column, names in enumerate(ordered) for row, name in enumerate(names)}
    tallest = max((len(names) for names in ordered), default=0)
    width = 2 * MARGIN + len(ordered) * (NODE_WIDTH + GAP_X) - (GAP_X if ordered else 0)
    height = 2 * MARGIN + tallest * (NODE_HEIGHT + GAP_Y) - (GAP_Y if tallest else 0)
    return positions, (width, height)
