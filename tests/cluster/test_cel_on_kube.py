"""The engine's CEL functions against the real kube-apiserver's: each expression is a rule of a throwaway CRD
(``x-kubernetes-validations``), an object is created, and the rules the API server says failed, and the errors it
gives, are compared with the engine's answers for the same expression over the same object (``self``).

A true rule passes; a false one fails with its message (the case's id); one whose evaluation errs fails with the
error and the id."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator

import pytest
from kubernetes.client.rest import ApiException

from devcluster.testing import LocalCluster
from jobflow_core.flows.conditions import Verdict, evaluate
from objects import served_crd

SELF = {"s": "Hello World", "csv": "a,b,c", "empty": [], "xs": [3, 1, 2], "ds": [0.5, 0.25], "q": "2Gi",
        "bad": "200K", "files": ["x.csv", "y.txt"], "words": ["a", "b", "c"]}

CASES: list[tuple[str, bool | str]] = [
    ('self.s.lowerAscii() == "hello world"', True),
    ('self.s.upperAscii() == "HELLO WORLD"', True),
    ('self.csv.split(",") == ["a", "b", "c"]', True),
    ('"a,b,c".split(",", 2) == ["a", "b,c"]', True),
    ('self.words.join("-") == "a-b-c" && self.words.join() == "abc"', True),
    ('"hello hello".replace("he", "we", 1) == "wello hello"', True),
    ('"  x ".trim() == "x"', True),
    ('self.s.indexOf("o") == 4 && self.s.indexOf("o", 5) == 7 && self.s.indexOf("z") == -1', True),
    ('self.s.lastIndexOf("o") == 7 && self.s.lastIndexOf("o", 6) == 4', True),
    ('self.s.substring(6) == "World" && self.s.substring(0, 5) == "Hello"', True),
    ('self.s.charAt(1) == "e" && self.s.charAt(11) == ""', True),
    ('self.s.lowerAscii() == self.s', False),
    ('self.xs.sum() == 6 && self.ds.sum() == 0.75', True),
    ('self.xs.min() == 1 && self.xs.max() == 3', True),
    ('self.xs.indexOf(2) == 2 && self.xs.lastIndexOf(9) == -1', True),
    ('self.xs.isSorted()', False),
    ('[1, 2, 2].isSorted()', True),
    ('[1, 2, 3, 4].slice(1, 3) == [2, 3]', True),
    ('"abc123def456".find("[0-9]+") == "123" && "abc".find("[0-9]") == ""', True),
    ('"abc123def456".findAll("[0-9]+") == ["123", "456"]', True),
    ('"abc123".findAll("[0-9]", 2) == ["1", "2"]', True),
    ('self.files.filter(f, f.find("[.]csv$") != "").size() == 1', True),
    ('quantity(self.q) == quantity("2048Mi")', True),
    ('quantity("1Gi").isGreaterThan(quantity("1G")) && quantity("500m").isLessThan(quantity("1"))', True),
    ('quantity("1k").compareTo(quantity("1000")) == 0', True),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20', True),
    ('quantity("1.5").asApproximateFloat() == 1.5 && !quantity("1.5").isInteger()', True),
    ('sign(quantity("-5")) == -1', True),
    ('isQuantity("1Gi") && !isQuantity("1GiB")', True),
    ('self.empty.max() == 0', "max called on empty list"),
    ('self.s.substring(20) == ""', "index out of range: 20"),
    ('quantity(self.bad).isInteger()', "unable to parse quantity's suffix"),
    ('quantity("1.5").asInteger() == 1', "cannot convert value to integer"),
]


@pytest.fixture(scope="module")
def kind(cluster: LocalCluster) -> Iterator[str]:
    """A namespaced kind whose spec carries every case as a rule; yields its group."""
    group = f"celcheck-{uuid.uuid4().hex[:8]}.jobflow.dev"
    schema = {"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"s": {"type": "string", "maxLength": 64}, "csv": {"type": "string", "maxLength": 64},
                       "q": {"type": "string", "maxLength": 16}, "bad": {"type": "string", "maxLength": 16},
                       "empty": {"type": "array", "maxItems": 4, "items": {"type": "integer"}},
                       "xs": {"type": "array", "maxItems": 4, "items": {"type": "integer"}},
                       "ds": {"type": "array", "maxItems": 4, "items": {"type": "number"}},
                       "files": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 16}},
                       "words": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 8}}},
        "x-kubernetes-validations": [{"rule": rule, "message": f"case-{index}"}
                                     for index, (rule, _) in enumerate(CASES)]}}}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"celchecks.{group}"},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "celchecks", "singular": "celcheck", "kind": "CelCheck"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": schema}}]}}
    with served_crd(cluster, crd):  # the API server compiles every rule: each one type-checks
        yield group


def refusals(message: str) -> dict[str, str | None]:
    """The cases the API server refused, each with its evaluation error (None: the rule was false). It says
    ``spec: Invalid value: case-3`` for a false rule, ``spec: Invalid value: "object": <error> evaluating rule:
    case-4`` for one that erred."""
    return {case: error or None for error, case in
            re.findall(r'Invalid value: (?:"object": (.*?) evaluating rule: )?(case-\d+)', message)}


def test_every_case_gives_the_api_servers_answer(cluster: LocalCluster, kind: str):
    body = {"apiVersion": f"{kind}/v1", "kind": "CelCheck", "metadata": {"name": "check"}, "spec": SELF}
    with pytest.raises(ApiException) as refused:
        cluster.custom.create_namespaced_custom_object(kind, "v1", "default", "celchecks", body, dry_run="All")
    theirs = refusals(json.loads(refused.value.body)["message"])
    assert theirs, "the API server refused nothing it could be compared on"
    for index, (rule, expected) in enumerate(CASES):
        ours = evaluate(rule, variables={"self": SELF})
        case = f"case-{index}"
        if expected is True:
            assert ours == Verdict(holds=True) and case not in theirs, (rule, ours, theirs.get(case))
        elif expected is False:
            assert ours == Verdict(holds=False) and case in theirs and theirs[case] is None, (rule, ours, theirs)
        else:
            assert ours.error is not None and expected in ours.error, (rule, ours)
            assert theirs.get(case) == expected, (rule, theirs.get(case))
