"""``graph NAME | -f FILE``: a JobFlow's DAG as text, Graphviz DOT, Mermaid or SVG.

An edge goes from a flow to the flows that depend on it (the way work flows), nodes are listed in DAG order
(:func:`jobflow_core.dag.graph.flow_graph`). ``graph NAME`` reads the JobFlow and its vcjobs from the cluster and
colours each flow by its job's phase (green Completed, blue Running, yellow Pending, orange restarting or
stopping, red Failed/Terminated/Aborted, grey waiting, brown-grey Skipped); ``graph -f FILE`` draws the spec
offline, uncoloured
(with a NAME too, the JobFlow of that name in the file). A target that names no flow is drawn dashed, marked
``undefined``; flows on a cycle are marked ``not a DAG``, so a broken spec can be seen, not only read about.
An edge whose dependent waits for its target to fail or just to finish says so (``on Failed``, ``on
Finished``); a ``finally`` flow, a ``forEach`` flow (``for each of 6 items``), or one with a ``when`` condition, is
marked so when it has no phase to show.

The text format lists each flow, then the flows that wait for it; on a terminal, names are coloured by phase.
The drawings are :mod:`display.drawing`'s and :mod:`display.svg`'s (no Graphviz needed), the same the
dashboard shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from display import svg
from display.drawing import dot, fill, label, mermaid, text
from display.facts import take
from jobflow_core.dag.graph import flow_graph
from jobflow_core.models import JobFlow
from jobflow_core.vocabulary.api import JOBFLOW
from kubectl_jobflow import documents, exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.status import fetch

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context

FORMATS = ("text", "dot", "mermaid", "svg")


def load(ctx: Context) -> tuple[JobFlow, dict[str, str]]:
    """The JobFlow to draw and the phase of each flow (none for a file)."""
    name = ctx.args.name or ctx.args.name_flag
    if ctx.args.file:
        flows = [doc for doc in documents.read(ctx.args.file) if doc.kind == JOBFLOW.kind]
        chosen = [doc for doc in flows if not name or doc.name == name]
        if len(chosen) != 1:
            found = ", ".join(doc.name for doc in flows) or "none"
            raise CommandError(f"{'no' if not chosen else len(chosen)} JobFlow{'' if name else 's'} "
                               f"{'named ' + repr(name) + ' ' if name else ''}in {', '.join(ctx.args.file)} "
                               f"(JobFlows there: {found}): name the one to draw, "
                               "kubectl jobflow graph -f FILE NAME", code=exits.USAGE)
        return JobFlow.model_validate(chosen[0].with_namespace(ctx.namespace)), {}
    if not name:
        raise CommandError("name a JobFlow on the cluster (kubectl jobflow graph NAME) or a file (-f FILE)",
                           code=exits.USAGE)
    jobflow, jobs = fetch(ctx, name)
    return JobFlow.model_validate(jobflow), {row.name: row.phase for row in take(jobflow, jobs).rows}


def run(ctx: Context) -> int:
    jobflow, phases = load(ctx)
    graph = flow_graph(jobflow)
    title = f"{jobflow.namespace}/{jobflow.name}"
    fmt = ctx.args.format
    if fmt == "text":
        ctx.write(text(graph, phases, title=f"JobFlow {title}", color=ctx.out.isatty()))
    elif fmt == "dot":
        ctx.write(dot(graph, phases, title=title))
    elif fmt == "mermaid":
        ctx.write(mermaid(graph, phases))
    else:
        ctx.write(svg.render(graph, {node: label(graph, phases, node) for node in graph.nodes},
                             {node: fill(phases.get(node)) for node in graph.nodes}, title=f"JobFlow {title}"))
    return 0

