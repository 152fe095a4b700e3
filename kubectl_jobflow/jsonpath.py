"""kubectl's output templates, ``-o jsonpath=TEMPLATE`` and ``-o custom-columns=SPEC``, in the standard library.

A JSONPath template is read as ``k8s.io/client-go/util/jsonpath`` reads it. Text outside ``{}`` is printed as it
is (so ``.metadata.name`` without braces prints itself, as in kubectl). An action is made of ``.field`` (``\\.``
escapes a dot: ``.metadata.labels.app\\.kubernetes\\.io/name``), ``.*``, ``[0]``, ``[-1]``, ``[1:3]``, ``[::2]``,
``[*]`` (lists only), unions ``[0,2]``, ``..field`` (in the value and every map and list below it), filters
``[?(@.a=="x")]`` (``== != < > <= >=``) and ``[?(@.a)]`` (has ``a``), literals (``"\\n"``, ``'\\t'``, ``1``,
``true``), ``$`` and ``@`` (the current value); or it is ``{range EXPR}`` ... ``{end}``. As in kubectl, ``['a.b']``
is the path ``.a.b``, not the key ``a.b``. An action's results are joined by a space: strings raw, numbers and
booleans as Go prints them (``1e-05``, ``true``), ``null``, maps and lists as Go's compact JSON. A missing key yields
nothing (kubectl's get allows missing keys); an index out of range, a filter on a map, and comparing a string with a
number or an integer with a fraction are errors, as in kubectl.

A custom-columns spec is ``HEADER:EXPR,...``, each EXPR in kubectl's relaxed form (``a.b``, ``.a.b``, ``{.a.b}``; a
leading ``$`` makes kubectl look up the key ``""``, so the column prints ``<none>`` here too). A cell is Go's
``fmt.Sprint`` of the results (``map[k:v]``, ``[a b]``, ``<nil>``) joined by ``,``, or ``<none>``; the table is
kubectl's tabwriter (each column but the last as wide as its widest cell plus three, and at least six).

Not reproduced: ``\\x``/``\\u`` escapes, Go's random order of map keys (``.*`` and ``..`` follow the document here),
kubectl running a ``{range}`` body once more when its ``{end}`` is missing, and its refusal to compare an integer
with a literal like ``2.0`` (whole numbers are integers here, whether in the object or the template).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable
from typing import Any, TypeAlias

Step: TypeAlias = Callable[[list[Any]], list[Any]]  # an action is a list of steps, each from values to values
Piece: TypeAlias = "str | list[Step] | tuple[list[Step], list[Piece]]"  # text, an action, a range and its body

_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_NUMBER = re.compile(r"[+-]?[\d.]*")
_SLICE = re.compile(r"(-?\d*)(:-?\d*)?(:-?\d*)?")
# [?(...)]: a ")" inside a quoted string does not end the filter.
_FILTER = re.compile(r"\[\?\(((?:[^)\"'\n]|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')*)\)\]")
_RELAXED = re.compile(r"\{\.?([^{}]+)\}|\.?([^{}]+)")
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt, "<=": operator.le,
            ">=": operator.ge}


class TemplateError(ValueError):
    """A template that cannot be parsed or applied; the message says what and where."""


def jsonpath(template: str, value: Any) -> str:
    """``value`` printed through ``template``, as ``kubectl get -o jsonpath=TEMPLATE`` prints it."""
    stack: list[list[Piece]] = [[]]  # the open {range} bodies, innermost last
    for piece in _Parser(template).pieces():
        if isinstance(piece, str) or piece[0] == "expr":
            stack[-1].append(piece if isinstance(piece, str) else piece[1])
        elif piece[0] == "range":
            body: list[Piece] = []
            stack[-1].append((piece[1], body))
            stack.append(body)
        elif len(stack) == 1:
            raise TemplateError(f"not in range, nothing to end: {template!r} has an {{end}} without its {{range}}")
        else:
            stack.pop()
    try:
        return "".join(_render(stack[0], value))
    except TemplateError as error:
        raise TemplateError(f"error executing jsonpath {template!r}: {error}") from None


def custom_columns(spec: str, items: list[dict[str, Any]], *, no_headers: bool = False) -> str:
    """``items`` as ``kubectl get -o custom-columns=SPEC`` prints them (the header alone when there are none)."""
    if not spec:
        raise TemplateError("custom-columns format specified but no custom columns given")
    columns: list[tuple[str, list[Step]]] = []
    for part in spec.split(","):  # as kubectl does: no comma inside a column's expression
        header, colon, expression = part.partition(":")
        if not colon:
            raise TemplateError(f"unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>")
        if expression and not (match := _RELAXED.fullmatch(expression)):
            raise TemplateError(f"unexpected path string {expression!r} in column {header}, expected a "
                                "'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
        columns.append((header, _Parser("." + (match[1] or match[2]) + "}").action(0)[1] if expression else [_none]))
    rows = [] if no_headers else [[header for header, _ in columns]]
    for item in items:
        rows.append([])
        for header, steps in columns:
            try:
                values = _apply(steps, [item])
            except TemplateError as error:
                raise TemplateError(f"column {header}: {error}") from None
            cells = [_go_sprint(value).replace("\x1b", "^[").replace("\r", "\\r") for value in values]  # as kubectl
            rows[-1].append(",".join(cells) if cells else "<none>")
    widths = [max([6, *(3 + len(row[column]) for row in rows)]) for column in range(len(columns) - 1)]
    return "".join("".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + row[-1] + "\n"
                   for row in rows)


class _Parser:
    """Reads a template into text and actions, and an action into steps, as client-go's parser does."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def fail(self, message: str) -> TemplateError:
        return TemplateError(f"{message} at column {self.pos + 1} of {self.text!r}")

    def pieces(self) -> list[str | tuple[str, list[Step]]]:
        pieces: list[str | tuple[str, list[Step]]] = []
        while self.pos < len(self.text):
            brace = self.text.find("{", self.pos) % (len(self.text) + 1)  # none (-1) is the end
            pieces += [self.text[self.pos:brace]] if brace > self.pos else []
            self.pos = brace
            if brace < len(self.text):
                pieces.append(self.action(brace + 1))
        return pieces

    def action(self, start: int) -> tuple[str, list[Step]]:
        """The action from ``start`` (after its ``{``) to its ``}``: its kind (expr, range, end) and its steps."""
        self.pos, kind = start, "expr"
        steps: list[Step] = []
        while not (rest := self.text[self.pos:]).startswith("}"):
            char = rest[:1]
            if filtered := _FILTER.match(rest):
                self.pos += filtered.end()
                steps.append(self.filter(filtered[1]))
            elif rest.startswith(".."):
                if steps and steps[-1] is _descend:
                    raise self.fail("invalid multiple recursive descent")
                self.pos += 2
                steps += [_descend, self.field()] if rest[2:3].isalnum() or rest[2:3] == "_" else [_descend]
            elif char in ("", "\n", "\r") or rest.startswith("[?("):
                raise self.fail("unterminated filter" if char == "[" else "unclosed action")
            elif char in " $@":
                self.pos += 1
            elif char == "[":
                steps.append(self.index())
            elif char in "\"'":
                steps.append(_constant(self.quoted(char), per_value=False))
            elif char == ".":
                self.pos += 1
                steps.append(self.field())
            elif char in "+-" or char.isdigit():
                steps.append(_constant(self.number(), per_value=True))
            elif not (char.isalnum() or char == "_"):
                raise self.fail(f"unrecognized character in action: {char!r}")
            elif (word := self.name()) in ("true", "false"):
                steps.append(_constant(word == "true", per_value=True))
            elif word in ("range", "end") and not steps and kind == "expr":
                kind = word
            else:
                raise self.fail(f"unrecognized identifier {word}")
        self.pos += 1
        return kind, steps

    def name(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in _TERMINATORS:
            self.pos += 2 if self.text[self.pos] == "\\" else 1
        self.pos = min(self.pos, len(self.text))
        return self.text[start:self.pos]

    def field(self) -> Step:
        if (key := self.name().replace("\\", "")) == "*":
            return lambda values: [child for value in values for child in _children(value)]
        return lambda values: [value[key] for value in values if isinstance(value, dict) and key in value]

    def number(self) -> int | float:
        raw = _NUMBER.match(self.text, self.pos)[0]  # type: ignore[index]
        try:
            number = float(raw) if "." in raw else int(raw)
        except ValueError:
            raise self.fail(f"cannot parse number {raw}") from None
        self.pos += len(raw)
        return number

    def quoted(self, quote: str) -> str:
        self.pos, out = self.pos + 1, []
        while (char := self.text[self.pos:self.pos + 1]) != quote:
            if char in ("", "\n"):
                raise self.fail("unterminated quoted string")
            if char == "\\":
                self.pos += 1
                if (char := self.text[self.pos:self.pos + 1]) not in _ESCAPES:
                    raise self.fail(f"unknown escape \\{char} in a quoted string (known: \\n \\t \\r \\\\ \\\" \\')")
                char = _ESCAPES[char]
            out.append(char)
            self.pos += 1
        self.pos += 1
        return "".join(out)

    def index(self) -> Step:
        end = self.text.find("]", self.pos)
        if end < 0 or "\n" in self.text[self.pos:end]:
            raise self.fail("unterminated array")
        inner = ":" if self.text[self.pos + 1:end] == "*" else self.text[self.pos + 1:end]
        if "," in inner:  # a union, [0,2] or ['a','b']: each part read as an index of its own
            unions = [_Parser("[" + part.strip(" ") + "]}").action(0)[1] for part in inner.split(",")]
            self.pos = end + 1
            return lambda values: [result for steps in unions for result in _apply(steps, values)]
        if key := re.fullmatch(r"'([^']*)'", inner):  # kubectl reads ['a.b'] as the path .a.b
            steps = _Parser("." + key[1] + "}").action(0)[1]
            self.pos = end + 1
            return lambda values: _apply(steps, values)
        if not (match := _SLICE.fullmatch(inner)):
            raise self.fail(f"invalid array index {inner}")
        try:
            start, stop, step = (int(group.lstrip(":")) if group and group != ":" else None for group in match.groups())
        except ValueError:
            raise self.fail(f"array index {inner} is not a number") from None
        self.pos = end + 1
        if match[2] is None:  # one index: [i] is [i:i+1], and [-1] is [-1:]
            return _slice(start, (start or 0) + 1, None, single=True)
        return _slice(start, stop, step, single=False)

    def filter(self, inner: str) -> Step:
        if not (match := re.fullmatch(r"([^!<>=]+)([!<>=]+)(.+?)", inner)):
            return _filter(_Parser(inner + "}").action(0)[1], "exists", [])
        if match[2] not in _COMPARE:
            raise self.fail(f"unrecognized filter operator {match[2]}")
        return _filter(_Parser(match[1] + "}").action(0)[1], match[2], _Parser(match[3] + "}").action(0)[1])


def _render(block: list[Piece], value: Any) -> list[str]:
    out: list[str] = []
    for piece in block:
        if isinstance(piece, tuple):
            out += [text for item in _apply(piece[0], [value]) for text in _render(piece[1], item)]
        else:
            out.append(piece if isinstance(piece, str) else " ".join(map(_text, _apply(piece, [value]))))
    return out


def _apply(steps: list[Step], values: list[Any]) -> list[Any]:
    for step in steps:
        values = step(values)
    return values


def _constant(value: Any, *, per_value: bool) -> Step:
    """A literal: text stands alone (``{.missing "x"}`` prints ``x``), a number or boolean once per current value."""
    return lambda values: [value] * (len(values) if per_value else 1)


def _none(values: list[Any]) -> list[Any]:
    """A column with an empty expression (``NAME:``): no results, so its cells print ``<none>``, as kubectl's."""
    return []


def _children(value: Any) -> list[Any]:
    return list(value.values()) if isinstance(value, dict) else value if isinstance(value, list) else []


def _descend(values: list[Any]) -> list[Any]:
    """Each value that has children, then its descendants that have: ``..name`` looks for ``name`` in them all."""
    return [found for value in values if _children(value) for found in (value, *_descend(_children(value)))]


def _slice(start: int | None, stop: int | None, step: int | None, *, single: bool) -> Step:
    def select(values: list[Any]) -> list[Any]:
        found = []
        for value in (value for value in values if value is not None):
            if not isinstance(value, list):
                kind = {dict: "map[string]interface {}", str: "string"}.get(type(value), type(value).__name__)
                raise TemplateError(f"{kind} is not array or slice")
            length = len(value)
            low = 0 if start is None else start + length if start < 0 else start
            high = length if stop is None else stop + length if stop < 0 or (stop == 0 and single) else stop
            if low != high and not (0 <= low < length and 0 <= high <= length):
                index = high - 1 if 0 <= low < length else low
                raise TemplateError(f"array index out of bounds: index {index}, length {length}")
            if low != high and (low > high or step is not None and step <= 0):
                raise TemplateError("step must be > 0" if low < high else f"starting index {low} is greater than "
                                    f"ending index {high}")
            found += value[low:high:step] if low != high else []
        return found
    return select


def _filter(left: list[Step], operation: str, right: list[Step]) -> Step:
    def select(values: list[Any]) -> list[Any]:
        found = []
        for value in values:
            if not isinstance(value, list):
                raise TemplateError(f"{_go_sprint(value)} is not array or slice and cannot be filtered")
            for item in value:
                if operation == "exists":
                    try:  # as kubectl, an error is no match: [?(@.a[3])] keeps the items that have an a[3]
                        found += [item] if _apply(left, [item]) else []
                    except TemplateError:
                        pass
                elif (lefts := _apply(left, [item])) and (rights := _apply(right, [item])):
                    if len(lefts) > 1 or len(rights) > 1:
                        raise TemplateError("can only compare one element at a time")
                    found += [item] if _compare(lefts[0], operation, rights[0]) else []
        return found
    return select


def _compare(left: Any, operation: str, right: Any) -> bool:
    """Go's template comparisons, which kubectl's filters use: one kind on both sides, booleans only (in)equal."""
    kinds = [int if isinstance(side, float) and side.is_integer() else type(side) for side in (left, right)]
    if not {*kinds} <= {bool, int, float, str} or kinds == [bool, bool] and operation not in ("==", "!="):
        raise TemplateError(f"invalid type for comparison: {_json(left)} {operation} {_json(right)}")
    if kinds[0] != kinds[1]:
        raise TemplateError(f"incompatible types for comparison: {_json(left)} {operation} {_json(right)}")
    return bool(_COMPARE[operation](left, right))


def _text(value: Any) -> str:
    """A result of a jsonpath action as kubectl prints it: maps and lists as JSON, the rest as Go's ``fmt.Print``."""
    return _json(value) if isinstance(value, dict | list) else "null" if value is None else _go_sprint(value)


def _go_sprint(value: Any) -> str:
    """``value`` as Go's ``fmt.Sprint`` prints what the API machinery decodes it into."""
    if value is None or isinstance(value, bool):
        return {None: "<nil>", True: "true", False: "false"}[value]
    if isinstance(value, dict):
        return "map[" + " ".join(f"{key}:{_go_sprint(item)}" for key, item in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_sprint(item) for item in value) + "]"
    return _go_float(value, json_style=False) if isinstance(value, float) else str(value)


def _json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes it: compact, keys sorted, ``<``, ``>`` and ``&`` escaped."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json(str(key))}:{_json(item)}" for key, item in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(item) for item in value) + "]"
    if isinstance(value, float):
        return _go_float(value, json_style=True)
    text = json.dumps(value, ensure_ascii=False)
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text


def _go_float(number: float, *, json_style: bool) -> str:
    """A float as Go writes it: exponent form below 1e-4 and from 1e6 (``%v``), or below 1e-6 and from 1e21 (JSON).
    A whole number is an integer, as the API machinery decodes ``2.0``."""
    if number.is_integer() and abs(number) < 2**63:
        return str(int(number))
    from decimal import Decimal  # only for fractions, which are rare in Kubernetes objects

    shortest = Decimal(repr(number))  # Python's repr has the shortest digits that read back, as Go's
    if (-7 if json_style else -5) < shortest.adjusted() < (21 if json_style else 6):
        return format(shortest, "f")
    mantissa, exponent = format(shortest, "e").split("e")
    return f"{mantissa}e{exponent[0]}{exponent[1:].zfill(1 if json_style else 2)}"
