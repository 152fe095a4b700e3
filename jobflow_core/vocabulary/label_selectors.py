"""Kubernetes label selectors, as ``kubectl get -l`` writes them, matched against an object's labels in memory.

The API server matches selectors when it lists; the dashboard already holds every JobFlow (one watch for all of
them) and narrows its list page by a selector the user types, so it needs the same language here, with the same
meaning and the same refusals (a selector the API server would answer 400 to is refused, saying what is wrong,
rather than matching nothing):

==================  ====================================================
``a=b``, ``a==b``   label ``a`` is ``b``
``a!=b``            label ``a`` is not ``b`` (or ``a`` is not set)
``a in (x,y)``      label ``a`` is ``x`` or ``y``
``a notin (x,y)``   label ``a`` is neither (or is not set)
``a``               label ``a`` is set
``!a``              label ``a`` is not set
``a>3``, ``a<3``    label ``a`` is an integer above (below) 3
==================  ====================================================

Requirements are separated by commas and must all hold; an empty selector matches everything.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from jobflow_core.vocabulary.name_rules import MAX_NAME_LENGTH, is_dns1123_subdomain

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
"""A label key's name part, and a non-empty label value: alphanumerics, '-', '_' and '.' inside, at most 63."""
_TOKEN = re.compile(r"\s*(==|!=|=|!|>|<|\(|\)|,|[^\s=!<>(),]+)")
EXAMPLE = "e.g. app=train,tier!=dev,env in (prod,staging),!canary"


class Operator(StrEnum):
    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER = ">"
    LESS = "<"


class BadSelector(ValueError):
    """The selector is not kubectl's syntax; the message says where, and shows one that is."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        match self.operator:
            case Operator.EQUALS | Operator.IN:
                return value is not None and value in self.values
            case Operator.NOT_EQUALS | Operator.NOT_IN:
                return value is None or value not in self.values
            case Operator.EXISTS:
                return value is not None
            case Operator.DOES_NOT_EXIST:
                return value is None
            case _:
                # As the API server: a label that is not an integer matches neither > nor <.
                if value is None or not re.fullmatch(r"-?[0-9]+", value):
                    return False
                bound = int(self.values[0])
                return int(value) > bound if self.operator is Operator.GREATER else int(value) < bound


@dataclass(frozen=True)
class Selector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return all(requirement.matches(labels or {}) for requirement in self.requirements)


def parse(text: str) -> Selector:
    """The selector ``text`` says; raises :class:`BadSelector` saying what is wrong."""
    tokens = _TOKEN.findall(text)
    requirements: list[Requirement] = []
    position = 0
    while position < len(tokens):
        requirement, position = _requirement(tokens, position, text)
        requirements.append(requirement)
        if position < len(tokens):
            if tokens[position] != ",":
                raise BadSelector(f"label selector {text!r}: expected ',' before {tokens[position]!r} "
                                  f"(separate requirements with commas: {EXAMPLE})")
            position += 1
            if position == len(tokens):
                raise BadSelector(f"label selector {text!r} ends with ',': remove it, or add a requirement after it")
    return Selector(tuple(requirements))


def _requirement(tokens: list[str], position: int, text: str) -> tuple[Requirement, int]:
    def at(index: int) -> str | None:
        return tokens[index] if index < len(tokens) else None

    if at(position) == "!":
        key = _key(at(position + 1), text)
        if at(position + 2) not in (None, ","):
            raise BadSelector(f"label selector {text!r}: '!{key}' takes no value (it means: no label {key})")
        return Requirement(key, Operator.DOES_NOT_EXIST), position + 2
    key = _key(at(position), text)
    operator = at(position + 1)
    if operator in (None, ","):
        return Requirement(key, Operator.EXISTS), position + 1
    if operator in ("=", "==", "!="):
        value = at(position + 2)
        if value in (None, ","):
            value, end = "", position + 2  # "a=" asks for an empty value, as the API server reads it
        else:
            end = position + 3
        return Requirement(key, Operator.NOT_EQUALS if operator == "!=" else Operator.EQUALS,
                           (_value(value, text),)), end
    if operator in (">", "<"):
        value = at(position + 2) or ""
        if not re.fullmatch(r"-?[0-9]+", value):
            raise BadSelector(f"label selector {text!r}: '{key}{operator}' needs an integer, not {value!r}")
        return Requirement(key, Operator.GREATER if operator == ">" else Operator.LESS, (value,)), position + 3
    if operator in ("in", "notin"):
        return _set(tokens, position + 2, key, Operator(operator), text)
    raise BadSelector(f"label selector {text!r}: after {key!r} expected =, ==, !=, in, notin, > or <, not "
                      f"{operator!r}: {EXAMPLE}")


def _set(tokens: list[str], position: int, key: str, operator: Operator, text: str) -> tuple[Requirement, int]:
    if position >= len(tokens) or tokens[position] != "(":
        raise BadSelector(f"label selector {text!r}: '{key} {operator}' needs its values in parentheses, "
                          f"e.g. {key} {operator} (a,b)")
    values: list[str] = []
    position += 1
    while True:
        token = tokens[position] if position < len(tokens) else None
        if token is None:
            raise BadSelector(f"label selector {text!r}: '(' after '{key} {operator}' is never closed: add ')'")
        if token == ")" and not values:
            raise BadSelector(f"label selector {text!r}: '{key} {operator} ()' names no value: name at least one")
        if token in (",", ")"):
            raise BadSelector(f"label selector {text!r}: an empty value in '{key} {operator} (...)'")
        values.append(_value(token, text))
        position += 1
        separator = tokens[position] if position < len(tokens) else None
        if separator == ")":
            return Requirement(key, operator, tuple(values)), position + 1
        if separator != ",":
            raise BadSelector(f"label selector {text!r}: '(' after '{key} {operator}' is never closed: add ')'")
        position += 1


def _key(token: str | None, text: str) -> str:
    if token is None or token in ("=", "==", "!=", "!", ">", "<", "(", ")", ","):
        raise BadSelector(f"label selector {text!r}: a label key is missing{f' before {token!r}' if token else ''}: "
                          f"{EXAMPLE}")
    prefix, slash, name = token.rpartition("/")
    if slash and not is_dns1123_subdomain(prefix):
        raise BadSelector(f"label selector {text!r}: the prefix of key {token!r} must be a DNS subdomain "
                          "(lowercase letters, digits, '-' and '.', e.g. example.com/team)")
    if len(name) > MAX_NAME_LENGTH or not _NAME.fullmatch(name):
        raise BadSelector(f"label selector {text!r}: {token!r} is no label key (at most 63 letters, digits, '-', "
                          "'_' or '.', starting and ending with a letter or digit, optionally after a prefix/)")
    return token


def _value(token: str, text: str) -> str:
    if token and (len(token) > MAX_NAME_LENGTH or not _NAME.fullmatch(token)):
        raise BadSelector(f"label selector {text!r}: {token!r} is no label value (at most 63 letters, digits, '-', "
                          "'_' or '.', starting and ending with a letter or digit)")
    return token
