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
    ("tier in ()", "names no value"),
    ("tier in (a,,b)", "an empty value"),
    ("replicas>three", "needs an integer"),
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
