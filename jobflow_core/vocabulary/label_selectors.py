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

Requirements are separated by commas and must all hold; an empty selector matches everything. The corners are the
API server's too (k8s.io/apimachinery/pkg/labels/selector.go, whose parser this one follows step by step):

* an empty value is a value: ``a=`` asks for ``a`` set to ""; ``a in ()`` is ``a in ("")``, and an empty place in a
  set adds "" (``(x,)``, ``(,x)`` and ``(x,,y)`` hold ""), but two commas before ``)`` are refused (``(x,,)``);
* the bound of ``>`` and ``<`` is a label value that is an integer: digits only (``a>-5`` is refused), at most 63,
  within 64 bits; a label that is not such an integer matches neither;
* ``in`` and ``notin`` are operators only after a key: ``in=x``, ``!notin`` and ``a in (in)`` are a key and a value.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from jobflow_core.vocabulary.name_rules import MAX_NAME_LENGTH, is_dns1123_subdomain

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
"""A label key's name part, and a non-empty label value: alphanumerics, '-', '_' and '.' inside, at most 63."""
_TOKEN = re.compile(r"[ \t\r\n]*(==|!=|=|!|>|<|\(|\)|,|[^ \t\r\n=!<>(),]+)")
"""The API server's lexer: its four blanks separate tokens, each operator is the longest one that fits, and any
other run of characters is one word (a key or a value, checked after)."""
_SYMBOLS = ("==", "!=", "=", "!", ">", "<", "(", ")", ",")
_INTEGER = re.compile(r"[+-]?[0-9]+")
"""What Go's ``strconv.ParseInt(s, 10, 64)`` reads (within 64 bits: :func:`_int64`)."""
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
                number = _int64(value)
                if number is None:
                    return False
                bound = int(self.values[0])
                return number > bound if self.operator is Operator.GREATER else number < bound


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
    if operator in ("=", "==", "!=", ">", "<"):
        value = at(position + 2)
        if value in (None, ","):
            value, end = "", position + 2  # "a=" asks for an empty value, as the API server reads it
        elif value in _SYMBOLS:
            raise BadSelector(f"label selector {text!r}: '{key}{operator}' needs a value, not {value!r}")
        else:
            end = position + 3
        if operator in (">", "<"):
            return Requirement(key, Operator.GREATER if operator == ">" else Operator.LESS,
                               (_bound(value, f"{key}{operator}", text),)), end
        return Requirement(key, Operator.NOT_EQUALS if operator == "!=" else Operator.EQUALS,
                           (_value(value, text),)), end
    if operator in ("in", "notin"):
        return _set(tokens, position + 2, key, Operator(operator), text)
    raise BadSelector(f"label selector {text!r}: after {key!r} expected =, ==, !=, in, notin, > or <, not "
                      f"{operator!r}: {EXAMPLE}")


def _set(tokens: list[str], position: int, key: str, operator: Operator, text: str) -> tuple[Requirement, int]:
    """The values of ``key in (...)`` from ``tokens[position]`` (its '('), read as the API server's parseValues and
    parseIdentifiersList read them, empty places included; the requirement and the position after its ')'."""
    def at(index: int) -> str | None:
        return tokens[index] if index < len(tokens) else None

    where = f"'{key} {operator} (...)'"
    if at(position) != "(":
        raise BadSelector(f"label selector {text!r}: '{key} {operator}' needs its values in parentheses, "
                          f"e.g. {key} {operator} (a,b)")
    position += 1
    if at(position) == ")":  # "()" is the empty value
        return Requirement(key, operator, ("",)), position + 1
    values: list[str] = []
    while True:
        token = at(position)
        position += 1
        if token == ",":
            if not values:
                values.append("")  # "(,": an empty first value
            following = at(position)
            if following == ")":
                values.append("")  # ",)": an empty last value
                break
            if following == ",":
                position += 1
                values.append("")  # ",,": an empty value between
        elif token is not None and token not in _SYMBOLS:
            values.append(_value(token, text))
            following = at(position)
            if following == ")":
                break
            if following is None:
                raise BadSelector(f"label selector {text!r}: '(' after '{key} {operator}' is never closed: add ')'")
            if following != ",":
                raise BadSelector(f"label selector {text!r}: in {where} expected ',' or ')' after {token!r}, not "
                                  f"{following!r}")
        elif token is None:
            raise BadSelector(f"label selector {text!r}: '(' after '{key} {operator}' is never closed: add ')'")
        else:
            twice = " (an empty place is the value \"\", but not two commas before ')')" if token == ")" else ""
            raise BadSelector(f"label selector {text!r}: in {where} expected a value or ',', not {token!r}{twice}")
    return Requirement(key, operator, tuple(dict.fromkeys(values))), position + 1


def _key(token: str | None, text: str) -> str:
    if token is None or token in _SYMBOLS:
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


def _bound(token: str, requirement: str, text: str) -> str:
    """The bound of ``a>N`` or ``a<N``: for the API server an integer (ParseInt) and a label value, so digits only."""
    if _int64(token) is None or not token.isdigit() or len(token) > MAX_NAME_LENGTH:
        raise BadSelector(f"label selector {text!r}: '{requirement}' needs an integer of digits only (a label value, "
                          f"so no sign; at most {MAX_NAME_LENGTH} digits, within 64 bits), not {token!r}")
    return token


def _int64(value: str | None) -> int | None:
    """``value`` as Go's ``strconv.ParseInt(value, 10, 64)`` reads it, or None where that fails."""
    if value is None or not _INTEGER.fullmatch(value):
        return None
    number = int(value)
    return number if -2**63 <= number < 2**63 else None
