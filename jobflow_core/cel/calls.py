"""Which functions a CEL expression calls, read from its parse tree, so that one the engine does not have is
refused before the expression is stored, not when it first runs (celpy compiles any name and fails only when the
call is reached, which a short-circuit may put off for ever).

Calls in celpy's grammar: ``member_dot_arg`` is ``x.f(...)`` (a method, or a macro such as ``map``),
``ident_arg`` is ``f(...)`` (a function, or ``has``/``dyn``), ``dot_ident_arg`` is ``.f(...)`` (a name from the
root scope, which celpy does not evaluate as CEL says: refused).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Final

import lark
from celpy.evaluation import base_functions

MEMBER_MACROS: Final = {"map": 2, "filter": 2, "all": 2, "exists": 2, "exists_one": 2}
"""CEL's macros on a list or map, with their number of arguments."""
GLOBAL_MACROS: Final = {"has": 1, "dyn": 1}
STANDARD: Final = frozenset(name for name in base_functions if name[0].isalpha()) - {"list", "map", "null_type"}
"""CEL's standard functions, as celpy has them (``size``, ``contains``, ``startsWith``, ``matches``, ``int``,
``string``, ``timestamp``, ``duration``, ...)."""


@dataclass(frozen=True)
class Call:
    name: str
    method: bool
    arguments: int
    """Not counting a method's receiver."""
    column: int


def _arguments(node: lark.Tree, index: int) -> int:
    child = node.children[index] if len(node.children) > index else None
    return len(child.children) if isinstance(child, lark.Tree) else 0


def calls(ast: lark.Tree) -> list[Call]:
    """Every call of ``ast`` (celpy's parse tree), in the order written."""
    found = []
    for node in ast.iter_subtrees_topdown():
        if node.data == "member_dot_arg":
            name, count = node.children[1], _arguments(node, 2)
            found.append(Call(str(name), True, count, name.column))
        elif node.data in ("ident_arg", "dot_ident_arg"):
            name, count = node.children[0], _arguments(node, 1)
            found.append(Call(str(name) if node.data == "ident_arg" else f".{name}", False, count, name.column))
    return found


def unknown(ast: lark.Tree, *, available: Collection[str]) -> list[str]:
    """What is wrong with the calls of ``ast``, given the functions ``available`` besides CEL's standard ones: one
    sentence per call, naming it and its column."""
    problems = []
    for call in calls(ast):
        macro = (MEMBER_MACROS if call.method else GLOBAL_MACROS).get(call.name)
        if macro is not None:
            if call.arguments != macro:
                problems.append(f"{call.name}() at column {call.column} takes {macro} argument"
                                f"{'s' if macro > 1 else ''}, not {call.arguments}")
        elif call.name.startswith("."):
            problems.append(f"{call.name}() at column {call.column}: a call from the root scope is not supported; "
                            f"write {call.name[1:]}()")
        elif call.name not in STANDARD and call.name not in available:
            problems.append(f"{call.name}() at column {call.column} is not a function here")
    return problems
