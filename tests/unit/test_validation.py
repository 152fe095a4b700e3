"""A spec is valid when its flows form a DAG over names it defines and every derived name fits Kubernetes."""

import itertools

from hypothesis import given
from hypothesis import strategies as st

from jobflow_core.models import DependsOn, Flow, JobFlow, JobFlowSpec, ObjectMeta
from jobflow_core.validation.jobflows import validate
from scenario import jobflow
from seeds import diamond_yaml


def messages(text: str) -> list[str]:
    return [error.message for error in validate(jobflow(text))]


def reported_cycle(errors: list) -> list[str] | None:
    """The flows a Cycle error spells out, ``["a", "b", "a"]`` for ``a -> b -> a``, or None without one."""
    for error in errors:
        if error.code == "Cycle":
            return error.message.removeprefix("jobflow Flow is not DAG: ").split(" -> ")
    return None


def graph_flow(edges: dict[str, list[str]], *, name: str = "test") -> JobFlow:
    flows = [Flow(name=node, depends_on=DependsOn(targets=targets)) for node, targets in edges.items()]
    return JobFlow(metadata=ObjectMeta(name=name, namespace="default", uid="u"), spec=JobFlowSpec(flows=flows))


def test_the_upstream_example_is_valid():
    assert messages(diamond_yaml()) == []


def test_no_flows_is_valid():
    assert messages("spec: {flows: []}") == []


def test_an_undefined_target_is_reported_with_upstreams_text_first_offender_in_spec_order():
    assert messages(
        """
        spec:
          flows:
            - {name: a, dependsOn: {targets: [x]}}
            - {name: b, dependsOn: {targets: [y]}}
        """
    ) == ["jobflow Flow is not DAG: vertex is not defined: x"]


def test_an_undefined_target_error_says_what_to_do():
    [error] = validate(jobflow("spec: {flows: [{name: a, dependsOn: {targets: [x]}}]}"))
    assert 'add a flow named "x" or remove it from dependsOn.targets' in str(error)


def test_a_cycle_is_reported_with_its_path():
    assert messages(
        """
        spec:
          flows:
            - {name: a, dependsOn: {targets: [b]}}
            - {name: b, dependsOn: {targets: [a]}}
        """
    ) == ["jobflow Flow is not DAG: a -> b -> a"]


def test_a_flow_depending_on_itself_is_a_cycle():
    assert messages("spec: {flows: [{name: a, dependsOn: {targets: [a]}}]}") == ["jobflow Flow is not DAG: a -> a"]


def test_a_cycle_is_spelled_from_its_first_flow_in_spec_order_whichever_flow_leads_into_it():
    assert messages(
        """
        spec:
          flows:
            - {name: x, dependsOn: {targets: [c]}}
            - {name: b, dependsOn: {targets: [a]}}
            - {name: c, dependsOn: {targets: [b]}}
            - {name: a, dependsOn: {targets: [c]}}
        """
    ) == ["jobflow Flow is not DAG: b -> a -> c -> b"]


def test_an_undefined_target_is_reported_and_does_not_hide_a_cycle():
    assert messages(
        """
        spec:
          flows:
            - {name: a, dependsOn: {targets: [b, x]}}
            - {name: b, dependsOn: {targets: [a]}}
        """
    ) == ["jobflow Flow is not DAG: vertex is not defined: x", "jobflow Flow is not DAG: a -> b -> a"]


def test_duplicate_flow_names_are_rejected():
    assert messages("spec: {flows: [{name: a}, {name: b}, {name: a}]}") == [
        'duplicate flow name "a": each flow must be unique'
    ]


def test_a_vcjob_name_longer_than_63_characters_is_rejected():
    [error] = validate(jobflow(f"metadata: {{name: test, namespace: ns}}\nspec: {{flows: [{{name: {'x' * 59}}}]}}"))
    assert error.code == "InvalidJobName"
    assert f'"test-{"x" * 59}"' in error.message


def test_a_vcjob_name_that_is_not_a_dns_label_is_rejected():
    [error] = validate(jobflow("spec: {flows: [{name: My_Flow}]}"))
    assert error.code == "InvalidJobName"


def test_a_jobflow_label_value_longer_than_63_characters_is_rejected():
    name = "j" * 56  # "default." + 56 characters = 64
    errors = validate(jobflow(f"metadata: {{name: {name}}}\nspec: {{flows: []}}"))
    assert [error.message for error in errors] == [
        f'label volcano.sh/createdByJobFlow value "default.{name}" is 64 characters long, more than 63'
    ]


def test_a_jobtemplate_label_value_longer_than_63_characters_is_rejected():
    flow = "f" * 56
    errors = validate(jobflow(f"metadata: {{name: t, namespace: default}}\nspec: {{flows: [{{name: {flow}}}]}}"))
    assert [error.code for error in errors] == ["LabelValueTooLong"]
    assert "volcano.sh/createdByJobTemplate" in errors[0].message


def has_cycle_reference(edges: dict[str, list[str]]) -> bool:
    """Slow and obviously right: some node can reach itself by following one or more edges."""

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            node = todo.pop()
            if node in edges and node not in seen:
                seen.add(node)
                todo.extend(edges[node])
        return seen

    return any(node in reachable(node) for node in edges)


# Targets may also name f<n> and f<n+1>, which no flow has: undefined targets are in play.
graphs = st.integers(min_value=1, max_value=7).flatmap(
    lambda n: st.fixed_dictionaries(
        {f"f{i}": st.lists(st.sampled_from([f"f{j}" for j in range(n + 2)]), max_size=3) for i in range(n)}
    )
)


@given(graphs)
def test_validation_reports_a_cycle_exactly_when_the_graph_has_one(edges):
    errors = validate(graph_flow(edges))
    assert any(error.code == "Cycle" for error in errors) == has_cycle_reference(edges)


@given(graphs)
def test_a_reported_cycle_is_a_real_cycle_of_dependencies_from_its_first_flow_in_spec_order(edges):
    cycle = reported_cycle(validate(graph_flow(edges)))
    if cycle is not None:
        assert cycle[0] == cycle[-1]
        assert len(set(cycle)) == len(cycle) - 1
        assert all(b in edges[a] for a, b in itertools.pairwise(cycle))
        spec_order = list(edges)
        assert cycle[0] == min(cycle, key=spec_order.index)


@given(
    st.integers(min_value=1, max_value=7).flatmap(
        lambda n: st.fixed_dictionaries(
            {f"f{i}": st.lists(st.sampled_from([f"f{j}" for j in range(i)] or ["f0"]), max_size=3) for i in range(n)}
        )
    )
)
def test_graphs_whose_edges_only_point_backwards_are_valid_unless_a_flow_names_itself(edges):
    has_self_loop = any(node in targets for node, targets in edges.items())
    assert (validate(graph_flow(edges)) == []) == (not has_self_loop)


def layered_diamonds(flow_count: int) -> dict[str, list[str]]:
    """Two flows per layer, each depending on both flows of the layer before (upstream's worst case, G.8)."""
    edges: dict[str, list[str]] = {}
    for index in range(flow_count):
        layer = index // 2
        edges[f"f{index}"] = [f"f{2 * (layer - 1)}", f"f{2 * (layer - 1) + 1}"] if layer else []
    return edges


def test_ten_thousand_flows_in_layered_diamonds_validate_without_recursion():
    assert validate(graph_flow(layered_diamonds(10_000), name="t")) == []


def test_a_chain_of_ten_thousand_flows_with_a_back_edge_reports_the_whole_cycle():
    edges = {f"f{i}": [f"f{i + 1}"] for i in range(9_999)} | {"f9999": ["f0"]}
    [error] = validate(graph_flow(edges, name="t"))
    assert error.code == "Cycle"
    assert error.message.count("->") == 10_000


def test_finally_flows_and_the_flows_that_are_not_do_not_depend_on_each_other():
    assert messages("""
spec:
  flows:
  - {name: a}
  - {name: cleanup, finally: true, dependsOn: {targets: [a]}}
  - {name: b, dependsOn: {targets: [cleanup]}}
""") == ['finally flow "cleanup" depends on "a", which is not finally',
         'flow "b" depends on finally flow "cleanup"']


def test_finally_flows_may_depend_on_each_other():
    assert messages("spec: {flows: [{name: n, finally: true}, {name: m, finally: true, dependsOn: {targets: [n]}}]}") == []


def test_an_awaited_outcome_and_a_probe_do_not_mix():
    assert messages("""
spec:
  flows:
  - {name: a}
  - name: b
    dependsOn: {targets: [a], outcome: Failed, probe: {taskStatusList: [{taskName: t, phase: Running}]}}
""") == ['flow "b": dependsOn.outcome cannot be combined with dependsOn.probe']


def test_a_retry_must_not_take_another_flows_vcjob_name_and_its_last_name_must_fit():
    assert messages("spec: {flows: [{name: a, retry: {limit: 2}}, {name: a-r2}]}") == [
        'flow "a-r2" has the vcjob name of a retry of flow "a"']
    long = "x" * 55
    assert messages(f"spec: {{flows: [{{name: {long}, retry: {{limit: 10}}}}]}}") == [
        f'vcjob name "test-{long}-r10" of the last retry of flow "{long}" is not a DNS-1123 label '
        "(at most 63 characters)"]
