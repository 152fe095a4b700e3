"""``graph``: the DAG in order and by level, drawn as text, DOT, Mermaid and SVG, coloured by phase."""

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from display.drawing import dot, mermaid, text
from display.svg import render
from jobflow_core.dag.graph import flow_graph
from kubectl_jobflow.cli import run
from scenario import jobflow
from seeds import diamond_flows, diamond_yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "diamond" / "jobflow.yaml"
SVG = "{http://www.w3.org/2000/svg}"

DIAMOND = diamond_yaml(flows=diamond_flows()[::-1])
"""The seed diamond written backwards, e first: the order drawn must not depend on the order written."""
PHASES = {"a": "Completed", "b": "Running", "c": "Waiting", "d": "Waiting", "e": "Waiting"}


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


def test_the_order_is_by_level_then_spec_order_whatever_order_the_flows_are_written_in():
    graph = flow_graph(jobflow(DIAMOND))
    assert graph.order == ("a", "b", "d", "c", "e")
    assert graph.levels == {"a": 0, "b": 1, "d": 2, "c": 2, "e": 3}
    assert graph.edges == (("c", "e"), ("d", "e"), ("b", "d"), ("b", "c"), ("a", "b"))


def test_a_level_is_the_longest_chain_before_a_flow():
    graph = flow_graph(jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}, "
                               "{name: c, dependsOn: {targets: [a, b]}}]}"))
    assert graph.levels == {"a": 0, "b": 1, "c": 2}


def test_undefined_targets_and_cycles_are_still_drawn_and_marked():
    graph = flow_graph(jobflow("spec: {flows: [{name: a, dependsOn: {targets: [b]}}, "
                               "{name: b, dependsOn: {targets: [a, z]}}, {name: r}]}"))
    assert graph.undefined == {"z"}
    assert graph.blocked == {"a", "b"}
    assert graph.order == ("r", "z", "a", "b")
    assert text(graph, {}, title="T") == "T\nr\nz  [undefined]\n└─> b\na  [not a DAG]\n└─> b\nb  [not a DAG]\n└─> a\n"


def test_text_lists_each_flow_with_its_phase_then_what_waits_for_it():
    assert text(flow_graph(jobflow(DIAMOND)), PHASES, title="JobFlow default/test") == (
        "JobFlow default/test\n"
        "a  [Completed]\n└─> b\n"
        "b  [Running]\n├─> d\n└─> c\n"
        "d  [Waiting]\n└─> e\n"
        "c  [Waiting]\n└─> e\n"
        "e  [Waiting]\n"
    )


def test_dot_colours_each_flow_by_phase():
    assert dot(flow_graph(jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")),
               {"a": "Completed", "b": "Running"}, title="default/test") == (
        'digraph "default/test" {\n'
        "  rankdir=LR;\n"
        '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica"];\n'
        '  "a" [label="a\\nCompleted", fillcolor="#c8e6c9"];\n'
        '  "b" [label="b\\nRunning", fillcolor="#bbdefb"];\n'
        '  "a" -> "b";\n'
        "}\n"
    )


def test_mermaid_groups_flows_by_phase_into_classes():
    assert mermaid(flow_graph(jobflow(DIAMOND)), PHASES) == (
        "flowchart LR\n"
        '  n0["a<br/>Completed"]\n  n1["b<br/>Running"]\n  n2["d<br/>Waiting"]\n  n3["c<br/>Waiting"]\n'
        '  n4["e<br/>Waiting"]\n'
        "  n3 --> n4\n  n2 --> n4\n  n1 --> n2\n  n1 --> n3\n  n0 --> n1\n"
        "  classDef completed fill:#c8e6c9\n  class n0 completed\n"
        "  classDef running fill:#bbdefb\n  class n1 running\n"
        "  classDef waiting fill:#eeeeee\n  class n2,n3,n4 waiting\n"
    )


def test_svg_is_well_formed_with_a_box_per_flow_and_a_path_per_dependency_left_to_right():
    graph = flow_graph(jobflow(DIAMOND))
    root = ET.fromstring(render(graph, PHASES, {"a": "#c8e6c9"}, title="JobFlow default/test"))
    flows = {g.get("data-flow"): g for g in root.iter(f"{SVG}g") if g.get("class") == "flow"}
    edges = [(p.get("data-from"), p.get("data-to")) for p in root.iter(f"{SVG}path") if p.get("class") == "edge"]
    assert set(flows) == {"a", "b", "c", "d", "e"}
    assert sorted(edges) == sorted(graph.edges)
    assert flows["a"].find(f"{SVG}rect").get("fill") == "#c8e6c9"
    assert flows["b"].get("data-phase") == "Running"
    x = {name: float(g.find(f"{SVG}rect").get("x")) for name, g in flows.items()}
    assert x["a"] < x["b"] < x["c"] == x["d"] < x["e"]


def test_svg_escapes_what_it_is_given():
    graph = flow_graph(jobflow("spec: {flows: [{name: a}]}"))
    root = ET.fromstring(render(graph, {"a": "<b>&"}, {}, title='"quoted" <title>'))
    assert root.find(f"{SVG}title").text == '"quoted" <title>'


def test_graph_of_a_file_works_offline_in_every_format():
    for fmt, start in (("text", "JobFlow default/test\na\n"), ("dot", 'digraph "default/test" {'),
                       ("mermaid", "flowchart LR\n"), ("svg", '<svg xmlns="http://www.w3.org/2000/svg"')):
        code, out, err = cli("graph", "-f", str(EXAMPLE), "--format", fmt)
        assert (code, err) == (0, ""), fmt
        assert out.startswith(start), fmt


def test_graph_of_a_file_with_several_jobflows_asks_which(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text("kind: JobFlow\nmetadata: {name: x}\n---\nkind: JobFlow\nmetadata: {name: y}\n")
    assert cli("graph", "-f", str(path)) == (2, "", f"Failed to draw the graph: 2 JobFlows in {path} (JobFlows "
                                                    "there: x, y): name the one to draw, kubectl jobflow graph -f "
                                                    "FILE NAME\n")
    assert cli("graph", "-f", str(path), "y")[1] == "JobFlow default/y\n"


BRANCHES = """
spec:
  flows:
  - {name: train}
  - {name: deploy, dependsOn: {targets: [train]}, when: 'targets.train.result.accuracy >= 0.9'}
  - {name: alert, dependsOn: {targets: [train], outcome: Failed}}
  - {name: report, finally: true}
"""


def test_error_branches_finally_flows_and_conditions_are_marked_when_there_is_no_phase():
    graph = flow_graph(jobflow(BRANCHES))
    assert graph.edge_notes == {("train", "alert"): "Failed"}
    assert text(graph, {}, title="T") == (
        "T\ntrain\n├─> deploy\n└─> alert  (on Failed)\nreport  [finally]\n"
        "deploy  [if targets.train.result.accuracy >= 0.9]\nalert\n")
    assert '"train" -> "alert" [label="on Failed", style=dashed];' in dot(graph, {}, title="T")
    assert "n0 -.->|on Failed| n3" in mermaid(graph, {})
    edges = ET.fromstring(render(graph, {}, {}, title="T")).findall(f"{SVG}path")
    dashed = [edge.get("data-to") for edge in edges if edge.get("stroke-dasharray")]
    assert dashed == ["alert"]


def test_a_skipped_flow_has_its_own_colour_and_a_long_condition_is_cut():
    graph = flow_graph(jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}, when: '"
                               + " || ".join(["true"] * 20) + "'}]}"))
    assert 'fillcolor="#d7ccc8"' in dot(graph, {"a": "Completed", "b": "Skipped"}, title="T")
    note = text(graph, {}, title="T").splitlines()[-1]
    assert note.endswith("…]") and len(note) == len("b  [if ") + 40 + 1


def test_a_fan_out_says_what_it_runs_over():
    graph = flow_graph(jobflow("spec: {flows: [{name: split}, {name: p, dependsOn: {targets: [split]}, "
                               "forEach: {result: split}}, {name: q, forEach: {items: [1, 2, 3]}}]}"))
    assert text(graph, {}, title="T").splitlines()[3:] == ["q  [for each of 3 items]", "p  [for each of the result "
                                                           "of split]"]


def test_a_reused_memoized_run_is_drawn_as_cached_in_green():
    from display.drawing import fill, label

    graph = flow_graph(jobflow("spec: {flows: [{name: a, memoize: {}}, {name: b, dependsOn: {targets: [a]}}]}"))
    phases = {"a": "Cached", "b": "Running"}
    assert label(graph, phases, "a") == "Cached" and fill("Cached") == "#dcedc8"
    assert 'fillcolor="#dcedc8"' in dot(graph, phases, title="default/test")
