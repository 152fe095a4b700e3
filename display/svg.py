"""A JobFlow's DAG as a standalone SVG, laid out here (no Graphviz binary).

The columns and their order are :func:`display.layout.columns`, the dashboard's too (a column per level, so every
edge of a DAG goes left to right; in each column the flows ordered by the mean row of the flows they depend on),
here centred vertically, each box as wide as its text. A node is a rounded
box with the flow's name and, below it, its phase; edges are curves from the right side of a flow to the left
side of the flows waiting for it, with an arrowhead (an edge of a cycle, which cannot go left to right, loops
below the boxes). Text widths are estimated from the character count (no font
metrics without a browser), generously enough that names fit.

Each node is a ``<g class="flow" data-flow=... data-phase=...>`` with a ``<title>`` (a tooltip in browsers), and
each edge a ``<path class="edge" data-from=... data-to=...>``, so the picture can also be checked or styled.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from display.layout import columns
from jobflow_core.dag.graph import FlowGraph

FONT_SIZE = 13
CHAR_WIDTH = 8.0
"""A generous average glyph width for 13px sans-serif."""
PADDING = 12
MIN_WIDTH = 64
LINE_HEIGHT = 17
COLUMN_GAP = 64
ROW_GAP = 18
MARGIN = 20
TITLE_HEIGHT = 30
EDGE_COLOR = "#555555"
STROKE = "#424242"
DASHED_STROKE = "#c62828"
BACK_EDGE_DIP = 36


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    width: float
    height: float


def render(graph: FlowGraph, notes: Mapping[str, str | None], fills: Mapping[str, str], *, title: str) -> str:
    """The SVG document; ``notes`` is each node's second line (its phase), ``fills`` its fill colour."""
    boxes = _layout(graph, notes, top=MARGIN + TITLE_HEIGHT)
    width = max((box.x + box.width for box in boxes.values()), default=0) + MARGIN
    width = max(width, len(title) * CHAR_WIDTH + 2 * MARGIN)
    height = max((box.y + box.height for box in boxes.values()), default=MARGIN + TITLE_HEIGHT) + MARGIN
    if any(_is_backward(boxes[source], boxes[dependent]) for source, dependent in graph.edges):
        height += BACK_EDGE_DIP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, Arial, sans-serif" '
        f'font-size="{FONT_SIZE}">',
        f"<title>{escape(title)}</title>",
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" "
        f"markerHeight=\"8\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"{EDGE_COLOR}\"/>"
        "</marker></defs>",
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="{MARGIN}" y="{MARGIN + FONT_SIZE}" font-weight="bold">{escape(title)}</text>',
    ]
    for source, dependent in graph.edges:
        parts.append(_edge(boxes[source], boxes[dependent], source, dependent,
                           note=graph.edge_notes.get((source, dependent))))
    for node in graph.order:
        parts.append(_node(boxes[node], node, notes.get(node), fills.get(node, "#ffffff"),
                           dashed=node in graph.undefined))
    return "\n".join([*parts, "</svg>"]) + "\n"


def _size(node: str, note: str | None) -> tuple[float, float]:
    longest = max(len(node), len(note or ""))
    width = max(MIN_WIDTH, longest * CHAR_WIDTH + 2 * PADDING)
    return width, (2 if note else 1) * LINE_HEIGHT + PADDING


def _layout(graph: FlowGraph, notes: Mapping[str, str | None], *, top: float) -> dict[str, Box]:
    ordered = columns(graph)
    sizes = {node: _size(node, notes.get(node)) for node in graph.nodes}
    heights = [sum(sizes[n][1] for n in nodes) + ROW_GAP * (len(nodes) - 1) for nodes in ordered]
    tallest = max(heights, default=0)
    boxes: dict[str, Box] = {}
    x = float(MARGIN)
    for nodes, height_of_column in zip(ordered, heights, strict=True):
        column_width = max(sizes[node][0] for node in nodes)
        y = top + (tallest - height_of_column) / 2
        for node in nodes:
            width, height = sizes[node]
            boxes[node] = Box(x + (column_width - width) / 2, y, width, height)
            y += height + ROW_GAP
        x += column_width + COLUMN_GAP
    return boxes


def _is_backward(start: Box, end: Box) -> bool:
    """An edge that cannot go left to right: one of a cycle, drawn as a loop below the boxes."""
    return end.x <= start.x + start.width


def _edge(start: Box, end: Box, source: str, dependent: str, *, note: str | None = None) -> str:
    """An arrow; dashed, with a tooltip, when the dependent waits for the target to fail or just to finish."""
    if _is_backward(start, end):
        x1, y1 = start.x + start.width / 2, start.y + start.height
        x2, y2 = end.x + end.width / 2, end.y + end.height
        below = max(y1, y2) + BACK_EDGE_DIP
        path = f"M {x1:.1f} {y1:.1f} C {x1:.1f} {below:.1f}, {x2:.1f} {below:.1f}, {x2:.1f} {y2:.1f}"
    else:
        x1, y1 = start.x + start.width, start.y + start.height / 2
        x2, y2 = end.x, end.y + end.height / 2
        bend = max((x2 - x1) / 2, COLUMN_GAP / 2)
        path = f"M {x1:.1f} {y1:.1f} C {x1 + bend:.1f} {y1:.1f}, {x2 - bend:.1f} {y2:.1f}, {x2:.1f} {y2:.1f}"
    dash = ' stroke-dasharray="6 4"' if note else ""
    tooltip = f"<title>on {escape(note)}</title>" if note else ""
    return (f'<path class="edge" data-from={quoteattr(source)} data-to={quoteattr(dependent)} d="{path}" '
            f'fill="none" stroke="{EDGE_COLOR}" stroke-width="1.5"{dash} marker-end="url(#arrow)">{tooltip}</path>')


def _node(box: Box, node: str, note: str | None, fill: str, *, dashed: bool) -> str:
    stroke = f'stroke="{DASHED_STROKE}" stroke-dasharray="5 3"' if dashed else f'stroke="{STROKE}"'
    centre = box.x + box.width / 2
    first = box.y + PADDING / 2 + FONT_SIZE
    lines = [f'<text x="{centre:.1f}" y="{first:.1f}" text-anchor="middle" font-weight="bold">{escape(node)}</text>']
    if note:
        lines.append(f'<text x="{centre:.1f}" y="{first + LINE_HEIGHT:.1f}" text-anchor="middle" '
                     f'fill="#333333">{escape(note)}</text>')
    return (f'<g class="flow" data-flow={quoteattr(node)} data-phase={quoteattr(note or "")}>'
            f"<title>{escape(node + (': ' + note if note else ''))}</title>"
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" height="{box.height:.1f}" rx="8" '
            f'fill="{fill}" {stroke} stroke-width="1.2"/>{"".join(lines)}</g>')
