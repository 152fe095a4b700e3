"""A cost limit on every CEL evaluation, as Kubernetes has one (``PerCallLimit``, about 0.1 s of work): here a
budget of evaluation steps, so that one user's expression cannot stall the handler every JobFlow shares.

A step is one node of the expression's parse tree visited by celpy's evaluator, a macro's body each time it runs
included (``[1, 2, 3].map(x, x * 2)`` takes 87 steps, ``1 + 2`` 17, a ``map`` or ``filter`` over a result's 1,000
items 11,000 to 19,000). The budget, :data:`STEPS`, is about half a second of CPU; an expression that reaches it is
stopped with :class:`BudgetExceeded`, which no ``||`` or ``exists()`` can swallow (celpy turns only its own error
types into CEL error values).

Kubernetes counts cost units of cel-go, which celpy has no notion of; the step is this engine's unit, and its
limit is in docs/reference.md.
"""

from __future__ import annotations

from typing import Any, Final

import celpy
import lark
from celpy.evaluation import Activation, Evaluator

STEPS: Final = 100_000
"""The most steps one evaluation may take."""


class BudgetExceeded(Exception):
    """An evaluation ran out of steps. Not a CELEvalError, on purpose: it ends the evaluation whatever the
    expression around it."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps


class BudgetedEvaluator(Evaluator):
    """celpy's evaluator, counting the nodes it visits against one budget shared with its macros' evaluators."""

    def __init__(self, ast: lark.Tree, activation: Activation, budget: _Budget) -> None:
        super().__init__(ast, activation)
        self.budget = budget

    def _visit_tree(self, tree: lark.Tree) -> Any:
        self.budget.left -= 1
        if self.budget.left < 0:
            raise BudgetExceeded(f"it takes more than {STEPS:,} evaluation steps, the limit of one expression")
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        return BudgetedEvaluator(ast, activation=self.activation, budget=self.budget)

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        # celpy reads ``list.min()`` as a macro of its own; Kubernetes' min (an error on an empty list) is a
        # function, which the library supplies.
        if tree.children[1] == "min" and "min" in self.activation.functions.maps[0]:
            member, ident, *rest = self.visit_children(tree)
            return self.method_eval(member, ident, *rest)
        return super().member_dot_arg(tree)


class BudgetedRunner(celpy.InterpretedRunner):
    """Evaluates a compiled expression with a fresh budget of :data:`STEPS` each time."""

    def evaluate(self, context: Any) -> Any:
        evaluator = BudgetedEvaluator(self.ast, self.new_activation(), _Budget(STEPS))
        return evaluator.evaluate(context)
