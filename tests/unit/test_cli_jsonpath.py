"""``-o jsonpath=`` and ``-o custom-columns=``: what kubectl prints, printed without kubectl.

Every expected output below is what ``kubectl get -o jsonpath=...`` / ``-o custom-columns=...`` (v1.32) printed for
the same object, served by a stub API server. Where kubectl's output is not stable (Go walks map keys in random
order under ``.*`` and ``..``) the objects here give the order no say.
"""

import subprocess
import sys

import pytest
import yaml

from kubectl_jobflow.jsonpath import TemplateError, custom_columns, jsonpath

FLOW = yaml.safe_load("""
kind: JobFlow
metadata:
  name: nightly
  labels: {app.kubernetes.io/name: etl, tier: batch}
spec:
  jobRetainPolicy: retain
  flows:
  - {name: extract}
  - {name: transform, dependsOn: {targets: [extract]}}
  - {name: load, dependsOn: {targets: [transform]}}
status:
  state: {phase: Running}
  runningJobs: 1
  ratio: 0.5
  suspended: false
  jobStatusList:
  - {name: nightly-extract, state: Completed, restartCount: 0}
  - {name: nightly-transform, state: Running, restartCount: 2}
  - {name: nightly-load, state: Pending, restartCount: 0, reason: waiting}
""")
LIST = {"apiVersion": "v1", "kind": "List", "items": [
    FLOW, {"kind": "JobFlow", "metadata": {"name": "weekly"}, "status": {"state": {"phase": "Succeed"}}}]}


def test_text_outside_braces_is_printed_as_it_is_even_a_path_without_braces():
    assert jsonpath("flow {.metadata.name} is {.status.state.phase}\n", FLOW) == "flow nightly is Running\n"
    assert jsonpath(".metadata.name", FLOW) == ".metadata.name"


def test_the_results_of_one_action_are_joined_by_a_single_space():
    assert jsonpath("{.items[*].metadata.name}", LIST) == "nightly weekly"
    assert jsonpath("{.spec.flows[*].name}", FLOW) == "extract transform load"


def test_range_prints_its_body_once_per_result_with_string_literals_for_tabs_and_newlines():
    template = '{range .status.jobStatusList[*]}{.name}{"\\t"}{.state}{"\\n"}{end}'
    expected = "nightly-extract\tCompleted\nnightly-transform\tRunning\nnightly-load\tPending\n"
    assert jsonpath(template, FLOW) == expected
    assert jsonpath(template.replace('"', "'"), FLOW) == expected


def test_ranges_nest_and_the_template_goes_on_after_the_end():
    template = "{range .items[*]}{.metadata.name}:{range .spec.flows[*]}{.name},{end};{end}{.kind}"
    assert jsonpath(template, LIST) == "nightly:extract,transform,load,;weekly:;List"


def test_a_range_over_a_list_without_a_star_runs_once_with_the_whole_list():
    assert jsonpath("{range .items}[{.kind}]{end}", LIST) == "[]"


def test_a_missing_key_prints_nothing():
    assert jsonpath("before-{.status.nope}{.nope.deeper}after", FLOW) == "before-after"


def test_maps_and_lists_print_as_compact_json_with_sorted_keys_and_strings_raw():
    assert jsonpath("{.spec.flows[1]}", FLOW) == '{"dependsOn":{"targets":["extract"]},"name":"transform"}'
    assert jsonpath("{.metadata.labels}", FLOW) == '{"app.kubernetes.io/name":"etl","tier":"batch"}'
    html = {"a": "<b&c>", "list": ["<b&c>"]}
    assert jsonpath("{.a} {.list}", html) == '<b&c> ["\\u003cb\\u0026c\\u003e"]'


def test_numbers_booleans_and_null_print_as_go_prints_them():
    numbers = yaml.safe_load("{n: 3, whole: 2.0, half: 0.5, tiny: 0.00001, big: 1234567.5, up: true, none: null,"
                             " list: [1.0, 0.0000001]}")
    assert jsonpath("{.n} {.whole} {.half} {.tiny} {.big} {.up} {.none} {.list}", numbers) == (
        "3 2 0.5 1e-05 1.2345675e+06 true null [1,1e-7]")


def test_indexes_negative_indexes_slices_and_steps():
    names = "{.status.jobStatusList[%s].name}"
    assert jsonpath(names % "0", FLOW) == "nightly-extract"
    assert jsonpath(names % "-1", FLOW) == "nightly-load"
    assert jsonpath(names % "1:3", FLOW) == "nightly-transform nightly-load"
    assert jsonpath(names % "::2", FLOW) == "nightly-extract nightly-load"
    assert jsonpath(names % "-2:", FLOW) == "nightly-transform nightly-load"


@pytest.mark.parametrize("template, message", [
    ("{.status.jobStatusList[5].name}", "array index out of bounds: index 5, length 3"),
    ("{.status.jobStatusList[1:9].name}", "array index out of bounds: index 8, length 3"),
    ("{.spec.flows[1].dependsOn.targets[1]}", "array index out of bounds: index 1, length 1"),
])
def test_an_index_out_of_range_is_an_error_not_an_empty_result(template, message):
    with pytest.raises(TemplateError, match=rf"^error executing jsonpath '.+': {message}$"):
        jsonpath(template, FLOW)


def test_dot_star_gives_a_maps_values_but_bracket_star_is_for_lists_only():
    assert jsonpath("{.status.state.*}", FLOW) == "Running"
    with pytest.raises(TemplateError, match=r"map\[string\]interface \{\} is not array or slice"):
        jsonpath("{.metadata.labels[*]}", FLOW)


def test_a_union_gives_the_results_of_each_index_or_path_in_turn():
    assert jsonpath("{.status.jobStatusList[0,2].name}", FLOW) == "nightly-extract nightly-load"
    assert jsonpath("{.items[*]['metadata.name', 'status.state.phase']}", LIST) == "nightly weekly Running Succeed"


def test_recursive_descent_finds_a_key_at_every_depth():
    assert jsonpath("{.spec..name}", FLOW) == "extract transform load"
    assert jsonpath("{..phase}", FLOW) == "Running"


def test_a_filter_keeps_the_items_whose_field_equals_a_string_in_either_quotes():
    assert jsonpath('{.status.jobStatusList[?(@.state=="Running")].name}', FLOW) == "nightly-transform"
    assert jsonpath("{.status.jobStatusList[?(@.state!='Running')].name}", FLOW) == "nightly-extract nightly-load"


def test_a_filter_compares_numbers_with_numbers_and_strings_with_strings():
    assert jsonpath("{.status.jobStatusList[?(@.restartCount>=1)].name}", FLOW) == "nightly-transform"
    assert jsonpath('{.items[?(@.metadata.name<"p")].metadata.name}', LIST) == "nightly"


def test_a_filter_without_a_comparison_keeps_the_items_that_have_the_field():
    assert jsonpath("{.status.jobStatusList[?(@.reason)].name}", FLOW) == "nightly-load"
    assert jsonpath("{.spec.flows[?(@.dependsOn)].name}", FLOW) == "transform load"


def test_a_filter_on_a_boolean():
    nodes = yaml.safe_load("[{name: a, ready: true}, {name: b, ready: false}]")
    assert jsonpath("{[?(@.ready==true)].name}", nodes) == "a"


@pytest.mark.parametrize("template, message", [
    ("{.status.jobStatusList[?(@.restartCount==\"2\")].name}", "incompatible types for comparison"),
    ("{.status.jobStatusList[?(@.restartCount>0.5)].name}", "incompatible types for comparison"),
    ("{.metadata[?(@.name)]}", "is not array or slice and cannot be filtered"),
])
def test_a_filter_that_kubectl_cannot_apply_is_an_error(template, message):
    with pytest.raises(TemplateError, match=message):
        jsonpath(template, FLOW)


def test_a_dotted_key_is_reached_by_escaping_its_dots_as_kubectl_needs():
    assert jsonpath("{.metadata.labels.app\\.kubernetes\\.io/name}", FLOW) == "etl"
    # kubectl reads ['a.b'] as the path .a.b: a dotted key in brackets finds nothing, a plain one works.
    assert jsonpath("{.metadata.labels['app.kubernetes.io/name']}|{.metadata.labels['tier']}", FLOW) == "|batch"


@pytest.mark.parametrize("template, message", [
    ("{.metadata.name", "unclosed action at column 16 of '{.metadata.name'"),
    ("{.spec.flows[0}", "unterminated array at column 13 of '{.spec.flows[0}'"),
    ("{.spec.flows[0-1]}", "invalid array index 0-1 at column 13"),
    ("{name}", "unrecognized identifier name at column 6 of '{name}'"),
    ("{#}", "unrecognized character in action: '#' at column 2 of '{#}'"),
    ('{"\\q"}', "unknown escape \\\\q in a quoted string"),
    ("{.metadata.name}{end}", "not in range, nothing to end"),
    ("{.spec.flows[?(@.name<>'a')]}", "unrecognized filter operator <>"),
])
def test_a_template_kubectl_cannot_parse_is_refused_saying_what_and_where(template, message):
    with pytest.raises(TemplateError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        jsonpath(template, FLOW)


def test_custom_columns_are_left_aligned_three_spaces_apart_with_nothing_trailing():
    items = [{"metadata": {"name": name}, "spec": {"x": x}}
             for name, x in [("a", "1"), ("bb", "22"), ("ccccccc", "é€x")]]
    assert custom_columns("N:.metadata.name,X:spec.x,Y:spec.x", items) == (
        "N         X     Y\n"  # a column is never narrower than six: kubectl's tabwriter's minimum width
        "a         1     1\n"
        "bb        22    22\n"
        "ccccccc   é€x   é€x\n"
    )


def test_custom_columns_accept_kubectls_relaxed_paths_but_a_leading_dollar_finds_nothing():
    assert custom_columns("A:metadata.name,B:.metadata.name,C:{metadata.name},D:{.metadata.name},E:$.metadata.name",
                          [FLOW]) == (
        "A         B         C         D         E\n"
        "nightly   nightly   nightly   nightly   <none>\n")


def test_a_custom_column_prints_none_for_nothing_and_joins_several_values_with_commas():
    assert custom_columns("NAME:.metadata.name,JOBS:.status.jobStatusList[*].state,REASON:.status.reason",
                          [FLOW]) == (
        "NAME      JOBS                        REASON\n"
        "nightly   Completed,Running,Pending   <none>\n")


def test_a_custom_column_prints_maps_lists_and_null_as_go_does_not_as_json():
    item = yaml.safe_load("{spec: {labels: {b: '2', a: '1'}, list: [1, two, {z: 1}], none: null, empty: ''}}")
    assert custom_columns("L:.spec.labels,LIST:.spec.list,NONE:.spec.none,EMPTY:.spec.empty,X:", [item]) == (
        "L              LIST               NONE    EMPTY   X\n"
        "map[a:1 b:2]   [1 two map[z:1]]   <nil>           <none>\n")


def test_custom_columns_without_headers_and_without_items():
    assert custom_columns("NAME:.metadata.name", LIST["items"], no_headers=True) == "nightly\nweekly\n"
    assert custom_columns("NAME:.metadata.name", []) == "NAME\n"
    assert custom_columns("NAME:.metadata.name", [], no_headers=True) == ""


def test_a_custom_column_escapes_what_would_drive_the_terminal():
    assert custom_columns("E:.e", [{"e": "a\x1bb\rc"}], no_headers=True) == "a^[b\\rc\n"


@pytest.mark.parametrize("spec, message", [
    ("NAME", "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>"),
    ("NAME:.metadata.name,PHASE", "unexpected custom-columns spec: PHASE, expected <header>:<json-path-expr>"),
    ("", "custom-columns format specified but no custom columns given"),
    ("N:{a}{b}", "unexpected path string '{a}{b}' in column N"),
    ("J:.status.jobStatusList[7]", "column J: array index out of bounds: index 7, length 3"),
])
def test_a_custom_columns_spec_kubectl_refuses_is_refused_with_its_message(spec, message):
    with pytest.raises(TemplateError, match=message.replace("[", r"\[")):
        custom_columns(spec, [FLOW])


def test_importing_the_templates_loads_no_third_party_module_and_no_decimal():
    code = ("import sys; before = set(sys.modules); import kubectl_jobflow.jsonpath; "
            "print(sorted(set(sys.modules) - before))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "yaml" not in loaded and "pydantic" not in loaded and "decimal" not in loaded, loaded
