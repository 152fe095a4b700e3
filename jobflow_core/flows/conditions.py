"""``flows[].when``: a CEL condition that decides, once a flow's dependencies are met, whether it runs.

CEL is the expression language Kubernetes uses for CRD validation rules and admission policies; it is evaluated
here by ``cel-python`` (a maintained implementation), never by a hand-written interpreter. The condition sees:

=======================================  ==========================================================================
``targets.<flow>.outcome``               ``"Succeeded"``, ``"Failed"`` or ``"Skipped"``
``targets.<flow>.phase``                 its vcjob's phase (``"Completed"``, ``"Failed"``, ...; ``""`` if none)
``targets.<flow>.result``                its result, parsed: the termination message of its pods (below)
``targets.<flow>.resultText``            the same, as written (``""`` if none)
``targets.<flow>.status``                its vcjob's ``status`` as Volcano writes it (``taskStatusCount``,
                                         ``retryCount``, ``succeeded``, ...)
``targets.<flow>.attempts``              how many attempts it took
``jobflow.name``, ``.namespace``,        the JobFlow's
``.labels``, ``.annotations``
``jobflow.outcome``, ``.failedFlows``,   in a ``finally`` flow: how the other flows ended
``.errors``                              (:func:`jobflow_core.dag.outcomes.jobflow_outcome`)
``params.<name>``                        a parameter's value, a string (``double(params.threshold)``)
=======================================  ==========================================================================

Use ``targets["a-b"]`` for a flow whose name has a dash. A target's **result** is the Kubernetes-native small
result of a job: ``status.containerStatuses[].state.terminated.message`` of its pods (a container writes it to
``/dev/termination-log``), the first non-empty one in pod-name order. It is parsed as JSON when it is JSON, else as
``key=value`` pairs (separated by newlines, commas, semicolons or spaces; numeric values become numbers), else kept
as the text: ``accuracy=0.93`` gives ``{"accuracy": 0.93}``, so ``targets.train.result.accuracy >= 0.9`` reads as
written. A switch is several flows with exclusive conditions on the same target; the one whose condition is false
is Skipped (``ConditionFalse``), and skipping propagates as for any skipped flow.

A condition that does not compile is refused at admission (:func:`compile_error`); one that fails when evaluated
(a field the target does not have, a type mismatch) blocks its flow with ``ConditionError`` and the CEL message,
until the JobFlow is fixed. Compiled programs are cached by their text, the :data:`CACHED_PROGRAMS` most recently
used: a reconcile compiles nothing twice, and a handler fed conditions it never saw (admission reviews, anyone's
JobFlows) holds at most that many (a program is some 50 KiB; a compile takes 1-2 ms).
"""

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

RESULT_SEPARATORS = re.compile(r"[\n,; \t]+")
READS_RESULTS = re.compile(r"\bresult(Text)?\b")


def reads_results(condition: str) -> bool:
    """Whether ``condition`` may read a target's result, so its pods must be read first. Textual, and so
    conservative: a condition that only mentions the word in a string makes one needless pod list, no more."""
    return READS_RESULTS.search(condition) is not None


@dataclass(frozen=True)
class Verdict:
    """A condition's value, or why it could not be evaluated."""

    holds: bool
    error: str | None = None


def result_of_pods(pods: Sequence[Mapping[str, Any]]) -> str:
    """A vcjob's result: the first non-empty termination message of its pods' containers, in pod-name order."""
    for pod in sorted(pods, key=lambda pod: str((pod.get("metadata") or {}).get("name", ""))):
        for container in (pod.get("status") or {}).get("containerStatuses") or ():
            message = ((container.get("state") or {}).get("terminated") or {}).get("message")
            if isinstance(message, str) and message.strip():
                return message.strip()
    return ""


def parse_result(text: str | None) -> Any:
    """A termination message as a value: JSON, else ``key=value`` pairs, else the text (see the module docstring)."""
    if not text:
        return ""
    try:
        return json.loads(text)
    except ValueError:
        pass
    pairs = [part.split("=", 1) for part in RESULT_SEPARATORS.split(text.strip()) if part]
    if pairs and all(len(pair) == 2 and pair[0] for pair in pairs):
        return {key: _number_or_text(value) for key, value in pairs}
    return text


def _number_or_text(value: str) -> Any:
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number


CACHED_PROGRAMS = 64
"""At most ~3 MiB of compiled conditions; more distinct conditions than this in use at once are compiled again."""


@lru_cache(maxsize=CACHED_PROGRAMS)
def _program(expression: str) -> Any:
    # Imported here: a JobFlow without conditions never pays for loading the CEL implementation.
    import celpy

    from jobflow_core.cel.budget import BudgetedRunner
    from jobflow_core.cel.library import FUNCTIONS

    environment = celpy.Environment(runner_class=BudgetedRunner)
    return environment.program(environment.compile(expression), functions=FUNCTIONS)


@lru_cache(maxsize=CACHED_PROGRAMS)
def compile_error(expression: str) -> str | None:
    """Why ``expression`` is not CEL the engine can run (a syntax error, a function it does not have), or None."""
    import celpy

    from jobflow_core.cel.calls import unknown
    from jobflow_core.cel.library import FUNCTIONS

    try:
        program = _program(expression)
    except celpy.CELParseError as error:
        lines = str(error).splitlines()
        where = f" at column {lines[1].index('^') + 1}" if len(lines) > 1 and "^" in lines[1] else ""
        return f"a CEL syntax error{where} of {expression!r}"
    problems = unknown(program.ast, available=FUNCTIONS)
    if problems:
        return (f"{'; '.join(problems)} in {expression!r} (besides CEL's standard functions, those of Kubernetes' "
                f"CEL libraries are: {', '.join(sorted(FUNCTIONS))})")
    return None


def evaluate(expression: str, *, variables: Mapping[str, Any]) -> Verdict:
    """The value of the condition ``expression`` over ``variables`` (plain JSON values)."""
    import celpy

    value, error = _run(expression, variables, prefix="it ")
    if error is not None:
        return Verdict(holds=False, error=error)
    if not isinstance(value, celpy.celtypes.BoolType):
        return Verdict(holds=False, error=f"it gives {type(value).__name__} {value}, not a bool")
    return Verdict(holds=bool(value))


def _run(expression: str, variables: Mapping[str, Any], *, prefix: str) -> tuple[Any, str | None]:
    """The CEL value of ``expression`` over ``variables``, or None and why there is none, in one sentence a user
    can act on (``prefix`` starts it); never the evaluator's internals."""
    import celpy

    from jobflow_core.cel.budget import BudgetExceeded

    problem = compile_error(expression)
    if problem is not None:
        return None, f"{prefix}is not CEL the engine can run: {problem}"
    try:
        value = _program(expression).evaluate(celpy.json_to_cel(dict(variables)))
    except BudgetExceeded as error:
        return None, f"{prefix}was stopped: {error}; simplify it"
    except celpy.CELEvalError as error:
        return None, f"{prefix}cannot be evaluated: {_reason(error)}"
    except Exception as error:  # noqa: BLE001 - celpy lets Python's own errors through (a malformed macro, a min of
        # values that do not compare): an expression's fault, never the handler's
        return None, f"{prefix}cannot be evaluated: {type(error).__name__}: {_first_line(error)}"
    if isinstance(value, celpy.CELEvalError):
        return None, f"{prefix}cannot be evaluated: {_reason(value)}"
    return value, None


def evaluate_value(expression: str, *, variables: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The value of the CEL ``expression`` over ``variables`` as plain Python (a string stays a string), or why it
    has none: ``(value, None)`` or ``(None, error)``."""
    value, error = _run(expression, variables, prefix="")
    return (None, error) if error is not None else (_plain(value), None)


def value_text(expression: str, *, variables: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The value of CEL ``expression`` over ``variables`` as a parameter's text (a string as it is, a bool as
    ``true``/``false``, anything else as compact JSON), or None and why it could not be evaluated
    (a JobFlowTemplate trigger's ``parameters``, :mod:`jobflow_core.schedules.triggers`)."""
    value, error = _run(expression, variables, prefix="it ")
    return (None, error) if error is not None else (_text(value), None)


def _text(value: Any) -> str:
    import celpy

    if isinstance(value, celpy.celtypes.BoolType):
        return "true" if value else "false"
    if isinstance(value, str):
        return str(value)
    return json.dumps(_plain(value), separators=(",", ":"))


def _plain(value: Any) -> Any:
    import celpy

    if isinstance(value, celpy.celtypes.BoolType):
        return bool(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return int(value)
    return str(value)


def _first_line(error: Exception) -> str:
    reason = error.args[0] if error.args else error
    return str(reason).splitlines()[0][:300]


_ACTIVATION = re.compile(r" \(in activation .*", re.DOTALL)


def _reason(error: Exception) -> str:
    """A CEL error's message without celpy's dump of the variables (``(in activation 'Activation(...)')``)."""
    return _ACTIVATION.sub("", _first_line(error))
