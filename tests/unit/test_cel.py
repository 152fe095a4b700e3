"""CEL as Kubernetes users write it (``jobflow_core.cel``): the functions of Kubernetes' CEL libraries give
Kubernetes' answers and errors, a function the engine does not have is refused before anything runs, naming it and
what is available, and an expensive expression is stopped by the cost limit with a sentence saying so."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobflow_core.cel.budget import STEPS
from jobflow_core.flows.conditions import compile_error, evaluate, evaluate_value

PARAMS = {"params": {"name": "Hello World", "csv": "a,b,c", "mem": "2Gi", "n": "3"},
          "targets": {"train": {"result": {"accuracy": 0.93, "losses": [0.5, 0.2, 0.1], "files": ["x.csv", "y.txt"]}}}}


def value(expression: str):
    result, error = evaluate_value(expression, variables=PARAMS)
    assert error is None, error
    return result


@pytest.mark.parametrize("expression, expected", [
    ('params.name.lowerAscii()', "hello world"),
    ('"ÀB".lowerAscii()', "Àb"),  # ASCII letters only
    ('params.name.upperAscii()', "HELLO WORLD"),
    ('params.csv.split(",")', ["a", "b", "c"]),
    ('params.csv.split(",", 2)', ["a", "b,c"]),
    ('params.csv.split(",", 0)', []),
    ('["a", "b"].join()', "ab"),
    ('params.csv.split(",").join("-")', "a-b-c"),
    ('"hello hello".replace("he", "we")', "wello wello"),
    ('"hello hello".replace("he", "we", 1)', "wello hello"),
    ('"  x \\n".trim()', "x"),
    ('params.name.indexOf("o")', 4),
    ('params.name.indexOf("o", 5)', 7),
    ('params.name.indexOf("z")', -1),
    ('params.name.lastIndexOf("o")', 7),
    ('params.name.substring(6)', "World"),
    ('params.name.substring(0, 5)', "Hello"),
    ('params.name.charAt(1)', "e"),
    ('[1, 2, 3].sum()', 6),
    ('targets.train.result.losses.sum()', 0.8),
    ('[].sum()', 0),
    ('targets.train.result.losses.min()', 0.1),
    ('[3, 1, 2].max()', 3),
    ('[1, 2, 3, 2].indexOf(2)', 1),
    ('[1, 2, 3, 2].lastIndexOf(2)', 3),
    ('[1, 2, 2, 3].isSorted()', True),
    ('targets.train.result.losses.isSorted()', False),
    ('[1, 2, 3, 4].slice(1, 3)', [2, 3]),
    ('"abc123def456".find("[0-9]+")', "123"),
    ('"abc".find("[0-9]+")', ""),
    ('"abc123def456".findAll("[0-9]+")', ["123", "456"]),
    ('"abc123def456".findAll("[0-9]", 2)', ["1", "2"]),
    ('targets.train.result.files.filter(f, f.find("[.]csv$") != "").size()', 1),
    ('quantity(params.mem) == quantity("2048Mi")', True),
    ('quantity("1Gi").isGreaterThan(quantity("1G"))', True),
    ('quantity("500m").isLessThan(quantity("1"))', True),
    ('quantity("1k").compareTo(quantity("1000"))', 0),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger()', 20),
    ('quantity("1Gi").asInteger()', 1073741824),
    ('quantity("1.5").asApproximateFloat()', 1.5),
    ('quantity("1.5").isInteger()', False),
    ('sign(quantity("-5"))', -1),
    ('isQuantity("1Gi") && !isQuantity("1GiB")', True),
])
def test_each_library_function_gives_kubernetes_answer(expression, expected):
    assert value(expression) == (pytest.approx(expected) if isinstance(expected, float) else expected)


@pytest.mark.parametrize("expression, error", [
    ('[].max()', "max called on empty list"),
    ('[].min()', "min called on empty list"),
    ('params.name.substring(20)', "index out of range: 20"),
    ('params.name.substring(3, 1)', "invalid substring range. start: 3, end: 1"),
    ('[1, 2].slice(1, 3)', "cannot slice(1, 3), list is length 2"),
    ('"a".find("(")', "Illegal regex"),
    ('quantity("200K")', "unable to parse quantity's suffix"),
    ('quantity("1GiB")', "quantities must match the regular expression"),
    ('quantity("1.5").asInteger()', "cannot convert value to integer"),
    ('[1, 2.0].sum()', "no such overload"),
])
def test_an_error_of_the_library_is_kubernetes_error_in_one_sentence(expression, error):
    result, why = evaluate_value(expression, variables=PARAMS)
    assert result is None and why.startswith("cannot be evaluated: ") and error in why
    assert "activation" not in why and "\n" not in why


def test_an_error_value_is_a_cel_error_so_or_true_still_holds():
    assert evaluate('[].max() > 1 || true', variables=PARAMS).holds


@pytest.mark.parametrize("expression, named", [
    ('params.name.toLower() == "x"', "toLower() at column 13 is not a function here"),
    ('true || params.name.fooBar()', "fooBar() at column 21 is not a function here"),
    ('[1].map(x)', "map() at column 5 takes 2 arguments, not 1"),
    ('.size([1]) == 1', "a call from the root scope is not supported"),
])
def test_a_function_the_engine_does_not_have_is_refused_naming_it_and_what_is_available(expression, named):
    problem = compile_error(expression)
    assert problem is not None and named in problem
    assert "lowerAscii" in problem and "quantity" in problem  # the list of what is available


@pytest.mark.parametrize("expression", [
    'params.name.lowerAscii().startsWith("h") && size(params.csv) > 0 && int(params.n) == 3',
    'targets.train.result.files.exists(f, f.endsWith(".csv")) && has(targets.train.result.accuracy)',
    'duration("1h") > duration("1m") && timestamp("2026-01-01T00:00:00Z") < timestamp("2027-01-01T00:00:00Z")',
    'dyn(params.n) == "3" && params.name.matches("^H") && params.name.contains("W")',
])
def test_cel_standard_functions_and_macros_stay_available(expression):
    assert compile_error(expression) is None
    assert evaluate(expression, variables=PARAMS).holds


def test_an_expensive_expression_is_stopped_by_the_cost_limit_with_a_clear_reason():
    big = "[" + ",".join(["1"] * 400) + "]"
    verdict = evaluate(f"{big}.map(x, {big}.map(y, x * y)).size() > 0 || true", variables=PARAMS)
    assert not verdict.holds
    assert verdict.error == (f"it was stopped: it takes more than {STEPS:,} evaluation steps, the limit of one "
                             "expression; simplify it")


def test_a_map_over_a_thousand_items_is_well_within_the_limit():
    items = {"targets": {"prep": {"result": {"shards": [{"rows": i} for i in range(1000)]}}}}
    assert evaluate("targets.prep.result.shards.filter(s, s.rows > 10).size() == 989", variables=items).holds


ascii_text = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20)


@given(text=ascii_text)
def test_lower_and_upper_ascii_agree_with_python_on_ascii(text):
    literal = text.replace("\\", "\\\\").replace('"', '\\"')
    assert evaluate_value(f'"{literal}".lowerAscii()', variables={}) == (text.lower(), None)
    assert evaluate_value(f'"{literal}".upperAscii()', variables={}) == (text.upper(), None)


@given(parts=st.lists(st.text(alphabet="abc", max_size=3), min_size=1, max_size=6))
def test_split_undoes_join(parts):
    assert evaluate_value('p.join(",").split(",")', variables={"p": parts}) == (parts, None)


@given(number=st.integers(min_value=0, max_value=2 ** 40), suffix=st.sampled_from(["", "k", "M", "Ki", "Mi"]))
def test_a_quantity_equals_itself_in_its_base_unit(number, suffix):
    scale = {"": 1, "k": 10 ** 3, "M": 10 ** 6, "Ki": 2 ** 10, "Mi": 2 ** 20}[suffix]
    expression = f'quantity("{number}{suffix}") == quantity("{number * scale}")'
    assert evaluate(expression, variables={}).holds
