"""A JobFlow's graph: every flow in a topological order, by level, and the flows a cycle blocks drawn after them."""

import itertools
from functools import cache

from hypothesis import given
from hypothesis import strategies as st

from jobflow_core.dag.graph import flow_graph
from jobflow_core.models import DependsOn, Flow, JobFlow, JobFlowSpec, ObjectMeta

UNDEFINED = ["x", "y"]
"""Names no flow has: the graphs below may depend on them."""


def graph_flow(edges: dict[str, list[str]]) -> JobFlow:
    """A JobFlow whose flows, in the mapping's order, depend on the flows they map to."""
    flows = [Flow(name=node, depends_on=DependsOn(targets=targets)) for node, targets in edges.items()]
    return JobFlow(metadata=ObjectMeta(name="test", namespace="default", uid="u"), spec=JobFlowSpec(flows=flows))


@st.composite
def dags(draw: st.DrawFn) -> dict[str, list[str]]:
    """Flows that only depend on flows made before them (or on undefined names), written in any order."""
    names = [f"f{i}" for i in range(draw(st.integers(min_value=1, max_value=8)))]
    edges = {name: draw(st.lists(st.sampled_from(names[:i] + UNDEFINED), max_size=3)) for i, name in enumerate(names)}
    return {name: edges[name] for name in draw(st.permutations(names))}


graphs = st.integers(min_value=1, max_value=8).flatmap(
    lambda n: st.fixed_dictionaries(
        {f"f{i}": st.lists(st.sampled_from([f"f{j}" for j in range(n)] + UNDEFINED), max_size=3) for i in range(n)}
    )
)


def longest_chain_reference(edges: dict[str, list[str]]) -> dict[str, int]:
    """Slow and obviously right, for a DAG: a flow's level is one more than its deepest target's, 0 without any."""

    @cache
    def level(node: str) -> int:
        return max((level(target) + 1 for target in edges.get(node, ())), default=0)

    return {node: level(node) for node in {*edges, *itertools.chain(*edges.values())}}


def blocked_reference(edges: dict[str, list[str]]) -> set[str]:
    """Slow and obviously right: the flows that depend, directly, through others or as one, on a flow on a cycle."""

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(edges.get(start, ()))
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        return seen

    on_cycle = {node for node in edges if node in reachable(node)}
    return {node for node in edges if ({node} | reachable(node)) & on_cycle}


@given(dags())
def test_in_a_dag_every_dependency_goes_to_a_higher_level_and_later_in_the_order(edges):
    graph = flow_graph(graph_flow(edges))
    assert graph.blocked == frozenset()
    assert sorted(graph.order) == sorted(graph.nodes)
    for source, dependent in graph.edges:
        assert graph.levels[source] < graph.levels[dependent]
        assert graph.order.index(source) < graph.order.index(dependent)


@given(dags())
def test_in_a_dag_a_level_is_the_longest_chain_and_the_order_is_by_level_then_spec_order(edges):
    graph = flow_graph(graph_flow(edges))
    assert graph.levels == longest_chain_reference(edges)
    assert list(graph.order) == sorted(graph.nodes, key=lambda node: (graph.levels[node], graph.nodes.index(node)))


@given(graphs)
def test_flows_on_a_cycle_or_after_one_are_blocked_and_drawn_last_in_spec_order(edges):
    graph = flow_graph(graph_flow(edges))
    assert graph.undefined == {*itertools.chain(*edges.values())} - set(edges)
    assert graph.blocked == blocked_reference(edges)
    ordered = [node for node in graph.nodes if node not in graph.blocked]
    assert list(graph.order) == sorted(ordered, key=lambda node: (graph.levels[node], graph.nodes.index(node))) + [
        node for node in graph.nodes if node in graph.blocked
    ]


@given(graphs)
def test_a_blocked_flow_sits_below_each_of_its_ordered_targets(edges):
    graph = flow_graph(graph_flow(edges))
    for node in graph.blocked:
        assert all(graph.levels[target] < graph.levels[node] for target in graph.targets(node)
                   if target not in graph.blocked)


def test_ten_thousand_flows_on_one_cycle_are_all_blocked_in_spec_order():
    edges = {f"f{i}": [f"f{i + 1}"] for i in range(9_999)} | {"f9999": ["f0"]}
    graph = flow_graph(graph_flow(edges))
    assert graph.blocked == set(edges)
    assert graph.order == tuple(edges)
    assert set(graph.levels) == set(edges)
