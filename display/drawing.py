"""A JobFlow's DAG as text, Graphviz DOT and Mermaid, and the colour and label of each flow: how ``kubectl jobflow
graph`` and the dashboard draw it.

An edge goes from a flow to the flows that depend on it (the way work flows), nodes are listed in DAG order
(:func:`jobflow_core.dag.graph.flow_graph`). Each flow is coloured by the phase shown for it (green Completed, blue
Running, yellow Pending, orange restarting or stopping, red Failed/Terminated/Aborted, grey waiting, brown-grey
Skipped); a target that names no flow is marked ``undefined`` (drawn dashed), flows on a cycle ``not a DAG``. An
edge whose dependent waits for its target to fail or just to finish says so (``on Failed``, ``on Finished``); a
``finally`` flow, a ``forEach`` flow (``for each of 6 items``), or one with a ``when`` condition, is marked so when
it has no phase to show. The SVG is :mod:`display.svg`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobflow_core.dag.graph import FlowGraph

FILL = {
    "Completed": "#c8e6c9",
    "Cached": "#dcedc8",
    "Running": "#bbdefb", "Completing": "#bbdefb",
    "Pending": "#fff9c4", "Created": "#fff9c4",
    "Restarting": "#ffe0b2", "Aborting": "#ffe0b2", "Terminating": "#ffe0b2",
    "Failed": "#ffcdd2", "Terminated": "#ffcdd2", "Aborted": "#ffcdd2",
    "Waiting": "#eeeeee",
    "Skipped": "#d7ccc8",
}
"""Fill colour by the phase shown for a flow (its vcjob's, or Waiting); white when unknown."""
NO_PHASE = "#ffffff"
UNDEFINED_STROKE = "#c62828"
ANSI = {"#c8e6c9": "32", "#dcedc8": "32", "#bbdefb": "34", "#fff9c4": "33", "#ffe0b2": "35", "#ffcdd2": "31", "#eeeeee": "2",
        "#d7ccc8": "90"}
UNDEFINED = "undefined"
NOT_DAG = "not a DAG"
CONDITION_SHOWN = 40
"""A ``when`` longer than this is cut in a node's label; ``kubectl get jf -o yaml`` shows it whole."""


def fill(phase: str | None) -> str:
    return FILL.get(phase or "", NO_PHASE)


def label(graph: FlowGraph, phases: Mapping[str, str], node: str) -> str | None:
    """The second line of a node: its phase, or why it cannot run, or what kind of flow it is."""
    if node in graph.undefined:
        return UNDEFINED
    if node in graph.blocked:
        return NOT_DAG
    if node in phases:
        return phases[node]
    if node in graph.finals:
        return "finally"
    if node in graph.fan_outs:
        return "for each of " + graph.fan_outs[node]
    if node in graph.loops:
        return _cut("repeat until " + graph.loops[node])
    return _cut("if " + graph.conditions[node]) if node in graph.conditions else None


def _cut(note: str) -> str:
    return note if len(note) <= CONDITION_SHOWN + 3 else note[:CONDITION_SHOWN + 2] + "…"


def edge_label(graph: FlowGraph, source: str, dependent: str) -> str | None:
    note = graph.edge_notes.get((source, dependent))
    return f"on {note}" if note else None


def text(graph: FlowGraph, phases: Mapping[str, str], *, title: str, color: bool = False) -> str:
    lines = [title]
    for node in graph.order:
        note = label(graph, phases, node)
        name = f"\x1b[{ANSI[fill(phases.get(node))]}m{node}\x1b[0m" if color and fill(phases.get(node)) in ANSI \
            else node
        lines.append(f"{name}  [{note}]" if note else name)
        dependents = graph.dependents(node)
        lines += [f"{'└' if i == len(dependents) - 1 else '├'}─> {dependent}"
                  + (f"  ({note})" if (note := edge_label(graph, node, dependent)) else "")
                  for i, dependent in enumerate(dependents)]
    return "\n".join(lines) + "\n"


def _dot_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot(graph: FlowGraph, phases: Mapping[str, str], *, title: str) -> str:
    lines = [f"digraph {_dot_string(title)} {{", "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica"];']
    for node in graph.order:
        note = label(graph, phases, node)
        attrs = [f"label={_dot_string(node + (chr(10) + note if note else ''))}".replace("\n", "\\n")]
        if node in graph.undefined:
            attrs.append(f'style="rounded,dashed", color="{UNDEFINED_STROKE}"')
        elif fill(phases.get(node)) != NO_PHASE:
            attrs.append(f'fillcolor="{fill(phases.get(node))}"')
        lines.append(f"  {_dot_string(node)} [{', '.join(attrs)}];")
    lines += [f"  {_dot_string(source)} -> {_dot_string(dependent)}"
              + (f" [label={_dot_string(note)}, style=dashed]" if (note := edge_label(graph, source, dependent)) else "")
              + ";" for source, dependent in graph.edges]
    return "\n".join([*lines, "}"]) + "\n"


def _mermaid_text(value: str) -> str:
    return value.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def mermaid(graph: FlowGraph, phases: Mapping[str, str]) -> str:
    ids = {node: f"n{index}" for index, node in enumerate(graph.order)}
    lines = ["flowchart LR"]
    for node in graph.order:
        note = label(graph, phases, node)
        shown = _mermaid_text(node) + (f"<br/>{_mermaid_text(note)}" if note else "")
        lines.append(f'  {ids[node]}["{shown}"]')
    lines += [f"  {ids[source]} -.->|{_mermaid_text(note)}| {ids[dependent]}"
              if (note := edge_label(graph, source, dependent)) else f"  {ids[source]} --> {ids[dependent]}"
              for source, dependent in graph.edges]
    classes: dict[str, tuple[str, list[str]]] = {}
    for node in graph.order:
        if node in graph.undefined:
            style = f"fill:#ffffff,stroke:{UNDEFINED_STROKE},stroke-dasharray:4 3"
            classes.setdefault(UNDEFINED, (style, []))[1].append(ids[node])
        elif fill(phases.get(node)) != NO_PHASE:
            classes.setdefault(phases[node].lower(), (f"fill:{fill(phases[node])}", []))[1].append(ids[node])
    for name, (style, members) in classes.items():
        lines += [f"  classDef {name} {style}", f"  class {','.join(members)} {name}"]
    return "\n".join(lines) + "\n"
