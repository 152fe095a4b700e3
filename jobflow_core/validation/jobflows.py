"""Checks a JobFlow spec can pass before anything runs, returned as values.

A spec is valid when its flows form a DAG over names it defines, and when every name it will produce fits
Kubernetes' limits. Each problem is a :class:`SpecError`; an empty list means "valid". The checks, in the order
their errors are listed:

1. every ``dependsOn.targets`` entry names a flow (only the first offender in spec order is reported, with
   upstream's exact text ``jobflow Flow is not DAG: vertex is not defined: <name>``);
2. no cycle, a flow depending on itself included (``jobflow Flow is not DAG: a -> b -> a``, the cycle spelled
   out where upstream only says "not DAG");
3. no two flows share a name (upstream silently kept the last one and then never finished, issue #5868);
4. the label value ``<namespace>.<jobflow>`` fits in 63 characters;
5. for each flow, in spec order: its vcjob name ``<jobflow>-<flow>`` (and, with ``retry``, its last retry's
   ``<jobflow>-<flow>-r<limit>``) is a DNS-1123 label (it also names the vcjob's pods and services), and the label value
   ``<namespace>.<flow>`` fits in 63 characters;
6. for each flow's ``dependsOn.probe``, in spec order: every item names a task (a DNS-1123 label, as vcjob task
   names are), HTTP and TCP probes have a port from 1 to 65535, and a taskStatus probe names a pod phase
   (the phases ``taskStatusCount`` counts). A probe that breaks these rules could never pass, so its flow would
   wait forever;
7. for each flow, in spec order: its ``when`` is a CEL expression that compiles; no other flow is named like one
   of its retries' vcjobs (``<flow>-r<k>``);
   ``dependsOn.outcome`` is not combined with a probe (the probe decides when the
   flow starts); a flow that is not ``finally`` does not depend on a ``finally`` flow (those run after every
   other flow), and a ``finally`` flow depends only on ``finally`` flows (it already waits for all the others);
8. the parameters and placeholders (:func:`jobflow_core.flows.parameters.errors`): each parameter has a valid, unique
   name and a value, and every ``{{...}}`` placeholder of a patch names something that exists;
9. each ``forEach`` (:func:`jobflow_core.flows.items.errors`): one source, a list where a list is needed, at most
   :data:`~jobflow_core.flows.items.MAX_ITEMS` items, valid vcjob names for its last item's last retry, no other flow
   named like one of its items, no ``finally`` fan-out, no probe on a fan-out;
10. each ``repeat`` (:func:`jobflow_core.flows.loops.errors`): ``until`` compiles, a limit from 1 to 2,000, not with
    ``forEach`` nor ``finally``, a valid vcjob name for its last iteration's last retry;
0. (first) ``retryPolicy`` (:func:`jobflow_core.flows.retries.policy_errors`): durations Kubernetes can read, at most
   100 retries; then every check sees each flow's retries as ``retryPolicy`` gives them;
11. each ``{{targets...}}`` placeholder of a patch (:func:`jobflow_core.flows.outputs.errors`): it names a field we
    know of a flow among the flow's targets (directly or through them), and stands where a result may go;
12. each ``memoize`` (:func:`jobflow_core.flows.memo.errors`): not on a fan-out or a loop, a key that is CEL, a maxAge
    that is a duration;
13. each approval gate (:func:`jobflow_core.flows.gates.errors`): nothing about a vcjob on it, a timeout over 0;
14. each child flow (:func:`jobflow_core.flows.children.errors`): nothing about a vcjob on it, a template named,
    each parameter set once (what the child template makes is checked when the child is about to start,
    :mod:`jobflow_core.validation.children`);
15. each dependency on another JobFlow (:func:`jobflow_core.validation.awaits.errors`): exactly one of ``name`` and
    ``template``, each a valid object name, ``name`` not the JobFlow's own, ``withinSeconds`` (0 or more) only with
    ``template``, ``timeoutSeconds`` 1 or more, two on one JobFlow or template that agree, and no
    ``spec.dependsOn.outcome`` without ``spec.dependsOn.jobFlows`` (a cycle through other JobFlows is admission's,
    :func:`jobflow_core.validation.awaits.template_cycle`).

The validating webhook (:mod:`jobflow_core.validation.review`) rejects a JobFlow with any of these errors; the planner
fails a JobFlow that slipped past it, with the same messages.

Every check is linear in flows plus edges. The cycle search is the standard library's
:class:`graphlib.TopologicalSorter`: its ``prepare()`` raises :class:`graphlib.CycleError` with one cycle, found by
a depth-first search with an explicit stack (CPython's ``graphlib.py``), so it is linear and never meets Python's
recursion limit, where upstream's recursive path search is exponential on layered diamonds (reference G.8).
graphlib spells the cycle the way work flows, each flow a target of the next; the message spells it the other
way, each flow followed by a flow it depends on, and starts at the cycle's first flow in spec order, so one spec
always gets one message. An undefined target has no targets of its own, so it is never on a cycle: it does not
disturb this check, and is reported by the first one.

JobTemplate specs are checked by :mod:`jobflow_core.validation.jobtemplates`.
"""

from collections.abc import Sequence
from graphlib import CycleError, TopologicalSorter

from jobflow_core.flows import children, gates, loops, memo, outputs, parameters
from jobflow_core.flows.conditions import compile_error
from jobflow_core.flows.items import errors as for_each_errors
from jobflow_core.flows.retries import policy_errors, with_retry_policies
from jobflow_core.models import Flow, JobFlow, Probe
from jobflow_core.validation.awaits import errors as await_errors
from jobflow_core.vocabulary.api import CREATED_BY_JOBFLOW, CREATED_BY_JOBTEMPLATE
from jobflow_core.vocabulary.name_rules import MAX_NAME_LENGTH, is_dns1123_label, is_dns1123_subdomain
from jobflow_core.vocabulary.naming import (attempt_job_name, job_name, jobflow_label_value, jobtemplate_label_value,
                                 template_name)
from jobflow_core.vocabulary.spec_errors import SpecError


MAX_PORT = 65535

POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
"""The keys of a vcjob's ``taskStatusCount[task].phase``: Kubernetes pod phases."""



def validate(jobflow: JobFlow) -> list[SpecError]:
    """Every problem with ``jobflow``'s spec, in the order described in the module docstring."""
    errors = policy_errors(jobflow)
    jobflow = with_retry_policies(jobflow)
    flows = jobflow.spec.flows or []
    return [
        *errors,
        *_undefined_target(flows),
        *_cycle(flows),
        *_duplicates(flows),
        *_names(jobflow, flows),
        *_probes(flows),
        *_control_flow(flows),
        *parameters.errors(jobflow),
        *for_each_errors(jobflow),
        *loops.errors(jobflow),
        *outputs.errors(jobflow),
        *memo.errors(jobflow),
        *gates.errors(jobflow),
        *children.errors(jobflow),
        *await_errors(jobflow),
    ]


def _targets(flow: Flow) -> list[str]:
    return (flow.depends_on.targets if flow.depends_on else None) or []


def _undefined_target(flows: Sequence[Flow]) -> list[SpecError]:
    defined = {flow.name for flow in flows}
    for flow in flows:
        for target in _targets(flow):
            if target not in defined:
                return [
                    SpecError(
                        code="UndefinedTarget",
                        message=f"jobflow Flow is not DAG: vertex is not defined: {target}",
                        hint=f'flow "{flow.name}" depends on "{target}", which is not a flow of this JobFlow: '
                        f'add a flow named "{target}" or remove it from dependsOn.targets',
                    )
                ]
    return []


def _cycle(flows: Sequence[Flow]) -> list[SpecError]:
    sorter: TopologicalSorter[str] = TopologicalSorter()
    for flow in flows:
        sorter.add(flow.name, *_targets(flow))
    try:
        sorter.prepare()
    except CycleError as error:
        cycle = _dependency_cycle(error.args[1], flows=flows)
        return [
            SpecError(
                code="Cycle",
                message=f"jobflow Flow is not DAG: {' -> '.join(cycle)}",
                hint="a flow must not depend on itself, directly or through other flows: "
                "remove one of these dependencies",
            )
        ]
    return []


def _dependency_cycle(found: Sequence[str], *, flows: Sequence[Flow]) -> list[str]:
    """graphlib's cycle ``found`` (``[a, b, a]``, each a target of the next), as each flow then one it depends on.

    The answer starts and ends at the cycle's first flow in spec order.
    """
    position: dict[str, int] = {}
    for index, flow in enumerate(flows):
        position.setdefault(flow.name, index)
    backwards = list(reversed(found[1:]))  # found[0] == found[-1]: drop one end, then each flow depends on the next
    start = min(range(len(backwards)), key=lambda index: position[backwards[index]])
    loop = backwards[start:] + backwards[:start]
    return [*loop, loop[0]]


def _duplicates(flows: Sequence[Flow]) -> list[SpecError]:
    first_index: dict[str, int] = {}
    errors = []
    for index, flow in enumerate(flows):
        if flow.name in first_index:
            errors.append(
                SpecError(
                    code="DuplicateFlowName",
                    message=f'duplicate flow name "{flow.name}": each flow must be unique',
                    hint=f"flows[{index}] repeats flows[{first_index[flow.name]}]: rename or remove one of them",
                )
            )
        else:
            first_index[flow.name] = index
    return errors


def _names(jobflow: JobFlow, flows: Sequence[Flow]) -> list[SpecError]:
    errors = []
    jobflow_label = jobflow_label_value(namespace=jobflow.namespace, jobflow=jobflow.name)
    if len(jobflow_label) > MAX_NAME_LENGTH:
        errors.append(
            label_too_long(
                CREATED_BY_JOBFLOW, jobflow_label, hint="shorten the JobFlow name (or use a shorter namespace)"
            )
        )
    seen: set[str] = set()
    for flow in flows:
        if flow.name in seen:
            continue
        seen.add(flow.name)
        vcjob = job_name(jobflow=jobflow.name, flow=flow.name)
        if not is_dns1123_label(vcjob):
            errors.append(
                SpecError(
                    code="InvalidJobName",
                    message=f'vcjob name "{vcjob}" of flow "{flow.name}" is not a DNS-1123 label '
                    f"(at most {MAX_NAME_LENGTH} lowercase letters, digits and '-', "
                    "starting and ending with a letter or digit)",
                    hint="shorten or rename the JobFlow or the flow (and its JobTemplate)",
                )
            )
        elif flow.retry is not None and flow.retry.limit > 0:
            last = attempt_job_name(jobflow=jobflow.name, flow=flow.name, attempt=1 + flow.retry.limit)
            if not is_dns1123_label(last):
                errors.append(SpecError(
                    code="InvalidJobName",
                    message=f'vcjob name "{last}" of the last retry of flow "{flow.name}" is not a DNS-1123 label '
                    f"(at most {MAX_NAME_LENGTH} characters)",
                    hint="shorten the JobFlow or the flow, or lower retry.limit",
                ))
        template = template_name(flow)
        template_label = jobtemplate_label_value(namespace=jobflow.namespace, flow=template)
        if len(template_label) > MAX_NAME_LENGTH:
            errors.append(
                label_too_long(
                    CREATED_BY_JOBTEMPLATE, template_label, hint=f'shorten flow "{flow.name}" (and its JobTemplate)'
                    if template == flow.name else f'shorten the name of JobTemplate "{template}"'
                )
            )
        elif flow.job_template is not None and not is_dns1123_subdomain(flow.job_template):
            errors.append(SpecError(code="InvalidTemplateName",
                                    message=f'flow "{flow.name}": jobTemplate "{flow.job_template}" is not a valid '
                                    "JobTemplate name", hint="name an existing JobTemplate: lowercase letters, "
                                    "digits, '-' and '.'"))
    return errors


def label_too_long(key: str, value: str, *, hint: str) -> SpecError:
    return SpecError(
        code="LabelValueTooLong",
        message=f'label {key} value "{value}" is {len(value)} characters long, more than {MAX_NAME_LENGTH}',
        hint=hint,
    )


def _probes(flows: Sequence[Flow]) -> list[SpecError]:
    errors = []
    seen: set[str] = set()
    for flow in flows:
        if flow.name in seen or flow.depends_on is None or flow.depends_on.probe is None:
            continue
        seen.add(flow.name)
        errors.extend(_probe_errors(flow.name, flow.depends_on.probe))
    return errors


def _probe_errors(flow: str, probe: Probe) -> list[SpecError]:
    errors = []
    for kind, items in (
        ("httpGetList", probe.http_get_list),
        ("tcpSocketList", probe.tcp_socket_list),
        ("taskStatusList", probe.task_status_list),
    ):
        for index, item in enumerate(items or ()):
            where = f'flow "{flow}": dependsOn.probe.{kind}[{index}]'
            if item.task_name is None or not is_dns1123_label(item.task_name):
                errors.append(
                    _invalid_probe(
                        f"{where}.taskName",
                        item.task_name,
                        "a DNS-1123 label",
                        hint="name a task of the target flows' JobTemplates "
                        "(lowercase letters, digits and '-', at most 63)",
                    )
                )
            if kind == "taskStatusList":
                if item.phase not in POD_PHASES:
                    errors.append(
                        _invalid_probe(
                            f"{where}.phase",
                            item.phase,
                            "a pod phase",
                            hint=f"use one of {', '.join(POD_PHASES)} (the phases a vcjob's taskStatusCount counts)",
                        )
                    )
            elif item.port is None or not 1 <= item.port <= MAX_PORT:
                errors.append(
                    _invalid_probe(
                        f"{where}.port",
                        item.port,
                        f"a port from 1 to {MAX_PORT}",
                        hint="set the port the task's server listens on",
                    )
                )
    return errors


def _invalid_probe(field: str, value: object, should_be: str, *, hint: str) -> SpecError:
    if value is None:
        message = f"{field} is missing: it must be {should_be}"
    else:
        shown = f'"{value}"' if isinstance(value, str) else str(value)
        message = f"{field} {shown} is not {should_be}"
    return SpecError(code="InvalidProbe", message=message, hint=hint)


def _control_flow(flows: Sequence[Flow]) -> list[SpecError]:
    final = {flow.name for flow in flows if flow.final}
    names = {flow.name for flow in flows}
    errors = []
    for flow in flows:
        problem = compile_error(flow.when) if flow.when else None
        if problem is not None:
            errors.append(SpecError(
                code="InvalidCondition",
                message=f'flow "{flow.name}": when is not a valid CEL expression: {problem}',
                hint="fix flows[].when (CEL, as in Kubernetes validation rules), e.g. "
                "targets.train.result.accuracy >= 0.9",
            ))
        retries = flow.retry.limit if flow.retry else 0
        for taken in sorted(names & {f"{flow.name}-r{k}" for k in range(1, retries + 1)}):
            errors.append(SpecError(
                code="RetryNameTaken",
                message=f'flow "{taken}" has the vcjob name of a retry of flow "{flow.name}"',
                hint=f'rename flow "{taken}", or lower retry.limit of "{flow.name}"',
            ))
        depends = flow.depends_on
        if depends is not None and depends.outcome is not None and depends.probe is not None:
            errors.append(SpecError(
                code="OutcomeWithProbe",
                message=f'flow "{flow.name}": dependsOn.outcome cannot be combined with dependsOn.probe',
                hint="a probe decides when the flow starts: remove dependsOn.outcome, or the probe",
            ))
        for target in _targets(flow):
            if flow.final and target not in final:
                errors.append(SpecError(
                    code="FinallyDependsOnFlow",
                    message=f'finally flow "{flow.name}" depends on "{target}", which is not finally',
                    hint=f'a finally flow already waits for every other flow to end: remove "{target}" from its '
                    "dependsOn.targets; to react to one flow's outcome, use dependsOn.outcome on a flow that is "
                    "not finally",
                ))
            elif not flow.final and target in final:
                errors.append(SpecError(
                    code="DependsOnFinally",
                    message=f'flow "{flow.name}" depends on finally flow "{target}"',
                    hint=f'finally flows run after every other flow: remove "{target}" from the dependsOn.targets '
                    f'of "{flow.name}", or make "{flow.name}" finally too',
                ))
    return errors
