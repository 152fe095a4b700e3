"""The functions of Kubernetes' CEL libraries that make sense on results and parameters, for celpy.

Kubernetes' CEL environment (the language of CRD validation rules and admission policies) adds to standard CEL
the strings extension of cel-go and Kubernetes' own lists, regex and quantity libraries. These are the same
functions, with the same results and the same errors, written for celpy, which calls ``x.f(a)`` as ``f(x, a)``:

=====================================================  ============================================================
``s.lowerAscii()``, ``s.upperAscii()``                 ASCII letters only change case
``s.split(sep)``, ``s.split(sep, n)``                  a list of strings (``n``: at most that many, 0: none)
``list.join()``, ``list.join(sep)``                    a list of strings, joined
``s.replace(old, new)``, ``s.replace(old, new, n)``    every (or the first ``n``) ``old`` replaced
``s.trim()``                                           leading and trailing whitespace removed
``s.indexOf(sub)``, ``s.lastIndexOf(sub)`` (``, i``)   the code point index of ``sub``, -1 when absent
``s.substring(i)``, ``s.substring(i, j)``              the code points from ``i`` (to ``j``)
``s.charAt(i)``                                        the code point at ``i`` (``""`` at the end)
``list.sum()``, ``list.min()``, ``list.max()``         of ints or doubles (``min``/``max`` of ``[]``: an error)
``list.indexOf(x)``, ``list.lastIndexOf(x)``           the index of ``x``, -1 when absent
``list.isSorted()``, ``list.slice(i, j)``              whether it is in order; its elements ``i`` to ``j``
``s.find(regex)``, ``s.findAll(regex)`` (``, n``)      the first (every, at most ``n``) match, RE2 syntax
``quantity(s)``, ``isQuantity(s)``                     a Kubernetes quantity (``"1Gi"``, ``"500m"``), or whether
                                                       ``s`` is one
``q.isLessThan(q2)``, ``q.isGreaterThan(q2)``,         comparisons by value (``quantity("1Gi") ==
``q.compareTo(q2)``                                    quantity("1024Mi")``)
``q.add(x)``, ``q.sub(x)``                             ``x`` a quantity or an int
``q.asInteger()``, ``q.isInteger()``,                  as an int (an error unless whole), whether it is whole,
``q.asApproximateFloat()``, ``sign(q)``                as a double, its sign
=====================================================  ============================================================

An error is returned as a CEL error value (``celpy.CELEvalError``), so ``e || true`` is true as in Kubernetes; a
value of the wrong type raises ``TypeError``, which celpy reports as "no such overload".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache, reduce
from typing import Any, Final

import celpy
import re2
from celpy import celtypes

String, Int, Double, Bool, List = (celtypes.StringType, celtypes.IntType, celtypes.DoubleType, celtypes.BoolType,
                                   celtypes.ListType)


def _error(message: str) -> celpy.CELEvalError:
    return celpy.CELEvalError(message)


def _of(value: Any, *types: type) -> None:
    if not isinstance(value, types):
        raise TypeError(f"no such overload for {type(value).__name__}")


# Strings (cel-go's ext/strings.go, version 2, as Kubernetes uses it). Indices count code points.

_UPPER_TO_LOWER: Final = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}
_LOWER_TO_UPPER: Final = {code + 32: code for code in range(ord("A"), ord("Z") + 1)}
_SPACE: Final = ("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                 "\u2028\u2029\u202f\u205f\u3000")
"""What Go's strings.TrimSpace trims (Python's str.strip would also take \\x1c-\\x1f)."""


def lower_ascii(text: Any) -> Any:
    _of(text, String)
    return String(text.translate(_UPPER_TO_LOWER))


def upper_ascii(text: Any) -> Any:
    _of(text, String)
    return String(text.translate(_LOWER_TO_UPPER))


def trim(text: Any) -> Any:
    _of(text, String)
    return String(text.strip(_SPACE))


def split(text: Any, separator: Any, limit: Any = None) -> Any:
    limit = Int(-1) if limit is None else limit
    _of(text, String), _of(separator, String), _of(limit, Int)
    if limit == 0:
        return List([])
    if separator == "":  # one element per code point, the last holding the rest
        parts = list(text) if limit < 0 or limit >= len(text) else [*text[:limit - 1], text[limit - 1:]]
    else:
        parts = text.split(separator) if limit < 0 else text.split(separator, limit - 1)
    return List([String(part) for part in parts])


def join(items: Any, separator: Any = None) -> Any:
    separator = String("") if separator is None else separator
    _of(items, List), _of(separator, String)
    if not all(isinstance(item, String) for item in items):
        return _error("join: the list holds a value that is not a string")
    return String(separator.join(items))


def replace(text: Any, old: Any, new: Any, limit: Any = None) -> Any:
    limit = Int(-1) if limit is None else limit
    _of(text, String), _of(old, String), _of(new, String), _of(limit, Int)
    return String(text.replace(old, new, int(limit)))


def substring(text: Any, start: Any, end: Any = None) -> Any:
    _of(text, String), _of(start, Int)
    if end is None:
        return String(text[start:]) if 0 <= start <= len(text) else _error(f"index out of range: {start}")
    _of(end, Int)
    if start > end:
        return _error(f"invalid substring range. start: {start}, end: {end}")
    for index in (start, end):
        if not 0 <= index <= len(text):
            return _error(f"index out of range: {index}")
    return String(text[start:end])


def char_at(text: Any, index: Any) -> Any:
    _of(text, String), _of(index, Int)
    return String(text[index:index + 1]) if 0 <= index <= len(text) else _error(f"index out of range: {index}")


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except TypeError:
        return False


def index_of(target: Any, item: Any, offset: Any = None) -> Any:
    """Of a substring in a string (from ``offset``), or of a value in a list."""
    if isinstance(target, List):
        if offset is not None:
            raise TypeError("a list's indexOf takes one argument")
        return Int(next((i for i, x in enumerate(target) if _equal(x, item)), -1))
    offset = Int(0) if offset is None else offset
    _of(target, String), _of(item, String), _of(offset, Int)
    if offset < 0:
        return _error(f"index out of range: {offset}")
    if item == "":
        return Int(min(offset, len(target)))
    return Int(-1) if offset >= len(target) else Int(target.find(item, offset))


def last_index_of(target: Any, item: Any, offset: Any = None) -> Any:
    """Of a substring in a string (starting at ``offset`` at the latest), or of a value in a list."""
    if isinstance(target, List):
        if offset is not None:
            raise TypeError("a list's lastIndexOf takes one argument")
        return Int(next((i for i in range(len(target) - 1, -1, -1) if _equal(target[i], item)), -1))
    _of(target, String), _of(item, String)
    if offset is None:
        if item == "":
            return Int(len(target))
        offset = Int(len(target) - 1)
    _of(offset, Int)
    if offset < 0:
        return _error(f"index out of range: {offset}")
    if item == "":
        return Int(min(offset, len(target)))
    return Int(-1) if offset >= len(target) else Int(target.rfind(item, 0, offset + len(item)))


# Lists (Kubernetes' library/lists.go, and cel-go's ext/lists.go for slice).

def list_sum(items: Any) -> Any:
    _of(items, List)
    if not items:
        return Int(0)
    total = reduce(lambda a, b: a + b, items)  # ints add to an int; an int and a double: no such overload
    return Double(total) if type(total) is float else total


def list_min(items: Any) -> Any:
    _of(items, List)
    return reduce(lambda a, b: b if b < a else a, items) if items else _error("min called on empty list")


def list_max(items: Any) -> Any:
    _of(items, List)
    return reduce(lambda a, b: b if b > a else a, items) if items else _error("max called on empty list")


def is_sorted(items: Any) -> Any:
    _of(items, List)
    return Bool(all(not items[i] > items[i + 1] for i in range(len(items) - 1)))


def list_slice(items: Any, start: Any, end: Any) -> Any:
    _of(items, List), _of(start, Int), _of(end, Int)
    if start < 0 or end < 0:
        return _error(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        return _error(f"cannot slice({start}, {end}), start index must be less than or equal to end index")
    if len(items) < end:
        return _error(f"cannot slice({start}, {end}), list is length {len(items)}")
    return List(items[start:end])


# Regular expressions (Kubernetes' library/regex.go): RE2, as Go's regexp.

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    return re2.compile(pattern, options=_RE2_OPTIONS)


def find(text: Any, pattern: Any) -> Any:
    _of(text, String), _of(pattern, String)
    try:
        match = _regex(str(pattern)).search(str(text))
    except re2.error as error:
        return _error(f"Illegal regex: {error}")
    return String(match.group(0) if match else "")


def find_all(text: Any, pattern: Any, limit: Any = None) -> Any:
    limit = Int(-1) if limit is None else limit
    _of(text, String), _of(pattern, String), _of(limit, Int)
    try:
        regex = _regex(str(pattern))
    except re2.error as error:
        return _error(f"Illegal regex: {error}")
    text, found, position, previous_end = str(text), [], 0, -1
    most = len(text) + 1 if limit < 0 else int(limit)
    while len(found) < most and position <= len(text):  # Go's regexp.FindAllString, empty matches included
        match = regex.search(text, position)
        if match is None:
            break
        keep = True
        if match.end() == position:  # an empty match: never one right after the previous match
            keep = match.start() != previous_end
            position += 1
        else:
            position = match.end()
        previous_end = match.end()
        if keep:
            found.append(String(match.group(0)))
    return List(found)


# Quantities (Kubernetes' library/quantity.go): exact values, compared by value.

_QUANTITY: Final = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_DECIMAL: Final = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_INT64: Final = (-(2 ** 63), 2 ** 63 - 1)


class Quantity:
    """A Kubernetes quantity's exact value; anything finer than a nano is rounded up, as Kubernetes does."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        nanos = value * 10 ** 9
        if nanos.denominator != 1:
            up = -(-abs(nanos.numerator) // nanos.denominator)
            value = Fraction(up if value > 0 else -up, 10 ** 9)
        self.value = value

    @classmethod
    def parse(cls, text: str) -> Quantity:
        match = _QUANTITY.match(text)
        if not match or match[1].count(".") > 1 or not any(c.isdigit() for c in match[1]):
            raise ValueError(f"quantities must match the regular expression '{_QUANTITY.pattern}'")
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            scale = Fraction(10) ** _DECIMAL[suffix]
        elif suffix in _BINARY:
            scale = Fraction(2 ** _BINARY[suffix])
        elif re.fullmatch(r"[eE][-+]?[0-9]+", suffix):
            scale = Fraction(10) ** int(suffix[1:])
        else:
            raise ValueError("unable to parse quantity's suffix")
        return cls(Fraction(number) * scale)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({float(self.value):g})"


def quantity(text: Any) -> Any:
    _of(text, String)
    try:
        return Quantity.parse(str(text))
    except ValueError as error:
        return _error(str(error))


def is_quantity(text: Any) -> Any:
    _of(text, String)
    try:
        Quantity.parse(str(text))
    except ValueError:
        return Bool(False)
    return Bool(True)


def _value(q: Any) -> Fraction:
    _of(q, Quantity)
    return q.value


def _operand(x: Any) -> Fraction:
    if isinstance(x, Quantity):
        return x.value
    _of(x, Int)
    return Fraction(int(x))


def _whole(q: Any) -> bool:
    value = _value(q)
    return value.denominator == 1 and _INT64[0] <= value <= _INT64[1]


def _approximate(q: Any) -> Any:
    value = _value(q)
    try:
        return Double(float(value))
    except OverflowError:
        return Double(float("inf") if value > 0 else float("-inf"))


def _compare(a: Any, b: Any) -> int:
    return (_value(a) > _value(b)) - (_value(a) < _value(b))


FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    "lowerAscii": lower_ascii, "upperAscii": upper_ascii, "trim": trim, "split": split, "join": join,
    "replace": replace, "substring": substring, "charAt": char_at, "indexOf": index_of,
    "lastIndexOf": last_index_of,
    "sum": list_sum, "min": list_min, "max": list_max, "isSorted": is_sorted, "slice": list_slice,
    "find": find, "findAll": find_all,
    "quantity": quantity, "isQuantity": is_quantity,
    "isLessThan": lambda a, b: Bool(_compare(a, b) < 0), "isGreaterThan": lambda a, b: Bool(_compare(a, b) > 0),
    "compareTo": lambda a, b: Int(_compare(a, b)),
    "add": lambda q, x: Quantity(_value(q) + _operand(x)), "sub": lambda q, x: Quantity(_value(q) - _operand(x)),
    "sign": lambda q: Int((_value(q) > 0) - (_value(q) < 0)), "isInteger": lambda q: Bool(_whole(q)),
    "asInteger": lambda q: Int(int(_value(q))) if _whole(q) else _error("cannot convert value to integer"),
    "asApproximateFloat": _approximate,
}
"""Each function by its CEL name; celpy passes a method's receiver as the first argument."""
