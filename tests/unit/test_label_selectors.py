"""Label selectors as ``kubectl get -l`` writes them (:mod:`jobflow_core.vocabulary.label_selectors`): what each
requirement matches, and a selector the API server would refuse refused here too, saying what is wrong."""

from __future__ import annotations

import pytest

from jobflow_core.vocabulary.label_selectors import BadSelector, parse

TRAIN = {"app": "train", "tier": "prod", "team": "ml", "replicas": "3"}


@pytest.mark.parametrize(("selector", "matches"), [
    ("", True),
    ("app=train", True), ("app==train", True), ("app=serve", False),
    ("app!=serve", True), ("app!=train", False), ("missing!=x", True),
    ("tier in (prod,staging)", True), ("tier in (dev)", False), ("missing in (x)", False),
    ("tier notin (dev, staging)", True), ("tier notin (prod)", False), ("missing notin (x)", True),
    ("team", True), ("missing", False), ("!missing", True), ("!team", False),
    ("replicas>2", True), ("replicas<3", False), ("app>1", False),
    ("app=train,tier!=dev,team in (ml,cv),!canary,replicas", True),
    ("app=train, tier=dev", False),
    ("  app = train ,  team  ", True),
])
def test_each_requirement_means_what_it_means_to_the_api_server(selector: str, matches: bool) -> None:
    assert parse(selector).matches(TRAIN) is matches


def test_a_prefixed_key_and_an_empty_value_are_label_selector_syntax() -> None:
    assert parse("example.com/team=ml").matches({"example.com/team": "ml"})
    assert parse("note=").matches({"note": ""}) and not parse("note=").matches({"note": "x"})
    assert parse("a").matches(None) is False and parse("!a").matches(None) is True


@pytest.mark.parametrize(("selector", "said"), [
    ("app=train,", "ends with ','"),
    ("app=train tier=dev", "expected ','"),
    ("=train", "a label key is missing"),
    ("tier in prod", "needs its values in parentheses"),
    ("tier in (prod", "never closed"),
    ("tier in (a,,)", "not two commas before ')'"),
    ("tier in (,,)", "not two commas before ')'"),
    ("tier in (a b)", "expected ',' or ')' after 'a', not 'b'"),
    ("tier in (=)", "expected a value or ',', not '='"),
    ("replicas>three", "needs an integer"),
    ("replicas>-5", "needs an integer of digits only"),
    ("replicas>+5", "needs an integer of digits only"),
    ("replicas>9223372036854775808", "within 64 bits"),
    ("replicas>", "needs an integer"),
    ("app=(", "'app=' needs a value, not '('"),
    ("app=tr ain", "expected ','"),
    ("app=-train", "is no label value"),
    ("Bad_Prefix/x=1", "must be a DNS subdomain"),
    ("!app=train", "takes no value"),
    ("app (x)", "expected =, ==, !=, in, notin, > or <"),
])
def test_a_selector_the_api_server_would_refuse_is_refused_saying_what_is_wrong(selector: str, said: str) -> None:
    with pytest.raises(BadSelector) as refused:
        parse(selector)
    assert said in str(refused.value) and repr(selector) in str(refused.value)


@pytest.mark.parametrize(("selector", "values"), [
    ("tier in ()", ("",)),
    ("tier in (,)", ("",)),
    ("tier in (prod,)", ("prod", "")),
    ("tier in (,prod)", ("", "prod")),
    ("tier in (prod,,dev)", ("prod", "", "dev")),
    ("tier in (,,,)", ("",)),
    ("tier notin (prod,prod)", ("prod",)),
])
def test_an_empty_place_in_a_set_is_the_empty_value_as_the_api_servers_parser_reads_it(
        selector: str, values: tuple[str, ...]) -> None:
    """k8s.io/apimachinery/pkg/labels/selector.go: parseValues reads "()" as {""}, parseIdentifiersList an empty
    place before, between or after values as "" (a set: each value once)."""
    [requirement] = parse(selector).requirements
    assert requirement.values == values


def test_in_an_empty_set_matches_a_label_set_to_the_empty_value_and_notin_the_others() -> None:
    assert parse("note in ()").matches({"note": ""}) and not parse("note in ()").matches({"note": "x"})
    assert not parse("note in ()").matches({}) and parse("note notin ()").matches({"note": "x"})
    assert parse("tier in (prod,)").matches(TRAIN) and parse("tier in (dev,)").matches({"tier": ""})


@pytest.mark.parametrize(("selector", "labels"), [
    ("in=x", {"in": "x"}),
    ("notin", {"notin": "y"}),
    ("!in", {}),
    ("in in (in,notin)", {"in": "notin"}),
    ("notin notin (in)", {}),
    ("app=in", {"app": "in"}),
])
def test_in_and_notin_are_keys_and_values_where_a_key_or_a_value_stands(selector: str, labels: dict) -> None:
    assert parse(selector).matches(labels)


@pytest.mark.parametrize(("selector", "matches"), [
    ("replicas>02", True), ("replicas<9223372036854775807", True), ("replicas>0", True),
])
def test_the_bound_of_gt_and_lt_is_any_digits_that_fit_in_64_bits(selector: str, matches: bool) -> None:
    assert parse(selector).matches(TRAIN) is matches


def test_a_label_beyond_64_bits_is_no_integer_and_matches_neither_gt_nor_lt() -> None:
    huge = {"n": "99999999999999999999"}
    assert not parse("n>1").matches(huge) and not parse("n<1").matches(huge)


def test_only_the_api_servers_four_blanks_separate_tokens() -> None:
    assert parse("app\t=\r\ntrain").matches(TRAIN)
    with pytest.raises(BadSelector):
        parse("app\x0b=train")
