"""``flows[].repeat``: a flow that runs again, one iteration after another, until a condition on its result holds.

::

    - name: train
      repeat: {until: "double(result) < 0.01", limit: 10}

Iteration ``i`` (from 0) runs as vcjob ``<jobflow>-<flow>-<i>`` (its retries ``...-<i>-r<k>``), labelled and
annotated ``flow.volcano.sh/iteration: "<i>"`` (on its pods too); its patch reads ``{{index}}``. When an iteration's
vcjob Completed, its result (the pods' termination message, :mod:`jobflow_core.flows.conditions`) is read and ``until``
evaluated with ``result`` (parsed), ``resultText``, ``iteration`` (how many iterations ran, from 1) and ``params``:

=========================================================  ===============================================
after an iteration ...                                     the flow
=========================================================  ===============================================
Completed, ``until`` holds                                 succeeded
Completed, ``until`` false, fewer than ``limit`` ran       runs the next iteration
Completed, ``until`` false, ``limit`` ran                  failed (``RepeatLimit``): it did not converge
Completed, ``until`` cannot be evaluated                   failed, with the CEL message
failed (after its retries)                                 failed, like any flow
=========================================================  ===============================================

Its dependents see only that outcome; their conditions read ``targets.<flow>.iterations`` (how many ran),
``.result`` and ``.resultText`` (the last iteration's), and ``.items``/``.results`` (every iteration's). Each
iteration is recorded in the status with its result.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from jobflow_core.flows.conditions import compile_error, evaluate, parse_result
from jobflow_core.flows.parameters import Item
from jobflow_core.flows.units import FlowView
from jobflow_core.models import Flow, JobFlow, VcJobPhase
from jobflow_core.vocabulary.name_rules import MAX_NAME_LENGTH, is_dns1123_label
from jobflow_core.vocabulary.naming import attempt_job_name
from jobflow_core.vocabulary.phase import is_final
from jobflow_core.vocabulary.spec_errors import SpecError

MAX_ITERATIONS = 2000


@dataclass(frozen=True)
class Loop:
    """The iterations so far, and how the loop stands."""

    units: tuple[FlowView, ...]
    done: bool | None = None
    """True: ``until`` held; False: ``limit`` iterations ran without it (or it could not be evaluated); None:
    not ended."""
    error: str | None = None
    """Why the loop failed without an iteration failing: the limit, or a CEL error."""
    unread: str | None = None
    """The vcjob of the last iteration, Completed, whose result must be read before the loop can go on."""


def iterate(flow: Flow, *, unit_of: Callable[[Item], FlowView], results: Mapping[str, str],
            params: Mapping[str, str]) -> Loop:
    """The iterations of a ``repeat`` flow, from its vcjobs and their results (by vcjob name)."""
    repeat = flow.repeat
    assert repeat is not None, "only a repeat flow iterates"
    units: list[FlowView] = []
    for index in range(min(repeat.limit, MAX_ITERATIONS)):
        unit = unit_of(Item(index, None))
        units.append(unit)
        if unit.retrying or unit.phase is not VcJobPhase.COMPLETED:
            return Loop(tuple(units))  # runs, will run, or failed for good (the flow's phase says which)
        text = results.get(unit.job_name)
        if text is None:
            if unit.job is not None and is_final(unit.job.phase):
                return Loop(tuple(units), unread=unit.job_name)
            text = ""  # gone before its result was read: evaluated as empty
        verdict = evaluate(repeat.until, variables={"result": parse_result(text), "resultText": text,
                                                    "iteration": index + 1, "params": dict(params)})
        if verdict.error is not None:
            return Loop(tuple(units), done=False, error=f"its until condition {repeat.until!r} {verdict.error} "
                                                         "(fix flows[].repeat.until)")
        if verdict.holds:
            return Loop(tuple(units), done=True)
    return Loop(tuple(units), done=False,
                error=f"{repeat.limit} iterations ran and until ({repeat.until}) never held "
                      f"(last result: {(results.get(units[-1].job_name) or '')[:80]!r})")


def errors(jobflow: JobFlow) -> list[SpecError]:
    """What is wrong with each ``repeat``, in spec order."""
    found = []
    for flow in jobflow.spec.flows or ():
        repeat = flow.repeat
        if repeat is None:
            continue
        problem = compile_error(repeat.until)
        if problem is not None:
            found.append(_error(flow, f"repeat.until is not a valid CEL expression: {problem}",
                                "fix it, e.g. double(result) < 0.01"))
        if not 1 <= repeat.limit <= MAX_ITERATIONS:
            found.append(_error(flow, f"repeat.limit must be from 1 to {MAX_ITERATIONS}", "set it in that range"))
        if flow.for_each is not None:
            found.append(_error(flow, "repeat cannot be combined with forEach",
                                "repeat a flow that depends on the fan-out, or fan out over a repeat's dependents"))
        if flow.final:
            found.append(_error(flow, "a finally flow cannot repeat", "move the loop into a flow that is not finally"))
        last = attempt_job_name(jobflow=jobflow.name, flow=flow.name, index=max(0, repeat.limit - 1),
                                attempt=1 + (flow.retry.limit if flow.retry else 0))
        if not is_dns1123_label(last):
            found.append(SpecError(code="InvalidJobName",
                                   message=f'vcjob name "{last}" of the last iteration of flow "{flow.name}" is not '
                                   f"a DNS-1123 label (at most {MAX_NAME_LENGTH} characters)",
                                   hint="shorten the JobFlow or the flow, or lower repeat.limit"))
    return found


def _error(flow: Flow, message: str, hint: str) -> SpecError:
    return SpecError(code="InvalidRepeat", message=f'flow "{flow.name}": {message}', hint=hint)
