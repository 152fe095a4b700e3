"""Results of targets in a flow's patch: what ``{{targets.NAME.result}}`` reads, where it may stand, how big it may be.

A target's result is its pods' termination message (:mod:`jobflow_core.flows.conditions`); a flow's ``patch.jobSpec``
may put it into its own vcjob, as Argo passes an output parameter to the next step:

=================================  ================================================================================
``{{targets.NAME.result}}``        the result as written (a plain flow, a ``repeat`` flow's last iteration)
``{{targets.NAME.result.KEY}}``    one field of the parsed result (JSON object, or ``key=value`` pairs)
``{{targets.NAME.results}}``       a ``forEach`` target's results, in index order, as a compact JSON list
``{{targets.NAME.total}}``,        a ``forEach`` target's item counts
``.succeeded``, ``.failed``
``{{jobflow.name}}``,              the JobFlow's name and namespace
``{{jobflow.namespace}}``
``{{jobflow.outcome}}``,           in a ``finally`` flow: ``Succeeded`` or ``Failed``, the flows whose failure
``.failedFlows``, ``.firstError``  nothing handles (comma-separated), the first one's error
                                   (:func:`jobflow_core.dag.outcomes.jobflow_outcome`)
=================================  ================================================================================

``NAME`` must be a target of the flow, directly or through its targets (admission names the one that is not), so
it has ended before the flow starts. A result is written by a user's pod, so it may land only where it cannot widen
what the next pod may do (:func:`may_hold_results`): container and init container ``env[].value``, ``args`` and
``command`` items, and the pod template's ``metadata.annotations`` values (but not of a key the kubelet, the
scheduler, Volcano or a mesh reads: :data:`RESERVED_ANNOTATION_DOMAINS`); never an image, a service account,
a volume, a security context, a scheduler or queue field, a name or a label. Anywhere else admission refuses it,
and the vcjob builder leaves it as written.

Escaping and size: values are put into the vcjob's JSON, never into YAML text, so quotes, colons, newlines or
``{{`` in a result cannot change its structure; a substituted value is not read again for placeholders. Control
characters other than tab and newline are dropped (:func:`clean`). One substituted value is at most
:data:`MAX_VALUE_LENGTH` characters (a termination message is at most 4 KiB, so only a fan-in's list can be
longer): a longer one, or a ``KEY`` the result does not have, blocks the flow (``InvalidResult``) with a message
saying which, until the JobFlow is fixed.
"""

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobflow_core.models import Flow, JobFlow
from jobflow_core.vocabulary.spec_errors import SpecError

ANY_TARGET_PLACEHOLDER = re.compile(r"\{\{\s*((?:targets|jobflow)\.[^{}]*?)\s*\}\}")
TARGET_PATH = re.compile(r"targets\.([a-z0-9][-a-z0-9]*)\.(result(?:\.([A-Za-z_][A-Za-z0-9_-]*))?|results|total|"
                         r"succeeded|failed)")
JOBFLOW_PATH = re.compile(r"jobflow\.(name|namespace|outcome|failedFlows|firstError)")
OUTCOME_FIELDS = ("outcome", "failedFlows", "firstError")
"""What only a ``finally`` flow may read: the rest of the JobFlow has ended when it starts."""
FAN_IN_FIELDS = ("results", "total", "succeeded", "failed")
MAX_VALUE_LENGTH = 16384
"""One substituted value, in characters: the same bound as a parameter's value
(:mod:`jobflow_core.flows.parameters`)."""
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class Reference:
    """One ``{{targets...}}`` placeholder of a patch: where it stands and what it reads."""

    path: tuple[str | int, ...]
    """Where in ``patch.jobSpec`` (``("tasks", 0, "template", "spec", "containers", 0, "args", 1)``)."""
    text: str
    """The placeholder's path as written, without braces (``targets.prepare.result.path``)."""
    target: str | None
    """The flow it reads; None for the JobFlow's own fields and a placeholder that names no field we know."""
    field: str | None
    """``result``, ``results``, ...; ``jobflow.outcome``, ...; None: it names nothing we know."""
    key: str | None = None


RESERVED_ANNOTATION_DOMAINS = ("kubernetes.io", "k8s.io", "volcano.sh", "istio.io")
"""Pod annotations under these domains (or a subdomain: ``container.apparmor.security.beta.kubernetes.io``,
``seccomp.security.alpha.kubernetes.io``, ``scheduling.volcano.sh``, ``sidecar.istio.io``) are read by the kubelet,
the scheduler, Volcano, the engine or a mesh to decide what the pod may do, where it runs, or which sidecar it gets:
a result there would let one pod widen the next."""


def is_reserved_annotation(key: str) -> bool:
    """Whether pod annotation ``key`` has a prefix of :data:`RESERVED_ANNOTATION_DOMAINS` (an unprefixed key has
    none)."""
    prefix, slash, _ = key.partition("/")
    return bool(slash) and any(prefix == domain or prefix.endswith("." + domain)
                               for domain in RESERVED_ANNOTATION_DOMAINS)


def may_hold_results(path: Sequence[str | int]) -> bool:
    """Whether a string at ``path`` of a ``patch.jobSpec`` may receive a target's result (see the module
    docstring): env values, args, command and pod annotations other than reserved ones, nothing that widens what a
    pod may do."""
    match tuple(path):
        case ("tasks", int(), "template", "metadata", "annotations", str(key)):
            return not is_reserved_annotation(key)
        case ("tasks", int(), "template", "spec", "containers" | "initContainers", int(), "env", int(), "value"):
            return True
        case ("tasks", int(), "template", "spec", "containers" | "initContainers", int(), "args" | "command", int()):
            return True
        case ("jobFlow", "parameters", int(), "value"):  # a child JobFlow's parameter: its template places it
            return True
    return False


def references(document: Any, path: tuple[str | int, ...] = ()) -> list[Reference]:
    """Every ``{{targets...}}`` placeholder in ``document``'s strings, in order."""
    if isinstance(document, str):
        return [_reference(path, match.group(1)) for match in ANY_TARGET_PLACEHOLDER.finditer(document)]
    if isinstance(document, dict):
        return [ref for key, value in document.items() for ref in references(value, (*path, key))]
    if isinstance(document, list):
        return [ref for i, value in enumerate(document) for ref in references(value, (*path, i))]
    return []


def _reference(path: tuple[str | int, ...], text: str) -> Reference:
    own = JOBFLOW_PATH.fullmatch(text)
    if own is not None:
        return Reference(path, text, None, f"jobflow.{own.group(1)}")
    match = TARGET_PATH.fullmatch(text)
    if match is None:
        return Reference(path, text, None, None)
    return Reference(path, text, match.group(1), match.group(2).split(".")[0], match.group(3))


def flow_references(flow: Flow) -> list[Reference]:
    """The ``{{targets...}}`` placeholders of ``flow``'s patch, or of its child JobFlow's parameters (paths from
    ``jobFlow``, :mod:`jobflow_core.flows.children`)."""
    found = references(flow.patch.job_spec.to_wire()) if flow.patch and flow.patch.job_spec else []
    if flow.job_flow is not None and flow.job_flow.parameters:
        found += references({"jobFlow": {"parameters": [p.to_wire() for p in flow.job_flow.parameters]}})
    return found


def referenced_targets(flow: Flow) -> list[str]:
    """The flows whose results ``flow``'s patch reads, in order, once each."""
    return list(dict.fromkeys(ref.target for ref in flow_references(flow) if ref.target is not None))


def results_read(flow: Flow) -> list[str]:
    """The flows whose results (termination messages) ``flow``'s patch reads, so their pods are read first
    (counts of a fan-out's items need none)."""
    return list(dict.fromkeys(ref.target for ref in flow_references(flow)
                              if ref.target is not None and ref.field in ("result", "results")))


def clean(text: str) -> str:
    """A result as it is put into a vcjob: control characters other than tab and newline dropped."""
    return _CONTROL.sub("", text)


def value_of(ref: Reference, variables: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The text ``ref`` stands for, from its target's variables as a condition sees them
    (:func:`jobflow_core.dag.outcomes.target_variables`), or why there is none: ``(value, None)`` or
    ``(None, error)``."""
    if ref.field is not None and ref.field.startswith("jobflow."):
        field = ref.field.removeprefix("jobflow.")
        if field not in variables:
            return None, f"{{{{{ref.text}}}}}: only a finally flow reads the JobFlow's outcome"
        value: Any = variables[field]
        if field == "failedFlows":
            value = ",".join(value)
    elif ref.field == "result" and ref.key is None:
        value = variables.get("resultText", "")
    elif ref.field == "result":
        parsed = variables.get("result")
        if not isinstance(parsed, dict) or ref.key not in parsed:
            keys = ", ".join(sorted(parsed)) if isinstance(parsed, dict) \
                else "none: it is not key=value or a JSON object"
            return None, (f'{{{{{ref.text}}}}}: the result of "{ref.target}" has no key "{ref.key}" '
                          f"(its keys: {keys})")
        value = parsed[ref.key]
    elif ref.field == "results":
        value = json.dumps(variables.get("results", []), separators=(",", ":"))
    else:
        value = variables.get(ref.field or "", 0)
    text = clean(value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))
    if len(text) > MAX_VALUE_LENGTH:
        return None, (f"{{{{{ref.text}}}}} is {len(text)} characters, more than {MAX_VALUE_LENGTH}: keep big data "
                      "in a volume or an object store and pass its path")
    return text, None


def errors(jobflow: JobFlow) -> list[SpecError]:
    """Each flow's ``{{targets...}}`` placeholders that cannot work: out of place, naming no field we know, or a
    flow that is not among its targets (directly or transitively), or the wrong field for the kind of target."""
    flows: dict[str, Flow] = {}
    for flow in jobflow.spec.flows or ():
        flows.setdefault(flow.name, flow)
    found: list[SpecError] = []
    for flow in flows.values():
        refs = flow_references(flow)
        if not refs:
            continue
        upstream = ancestors(flow.name, flows)
        for ref in refs:
            found += _reference_errors(flow, ref, upstream=upstream, flows=flows)
        if flow.depends_on is not None and flow.depends_on.probe is not None:
            found.append(SpecError(code="ResultWithProbe",
                                   message=f'flow "{flow.name}": its patch reads a target\'s result, but its probe '
                                   "lets it start before its targets end",
                                   hint="drop the probe, or pass the value another way"))
    return found


def _reference_errors(flow: Flow, ref: Reference, *, upstream: set[str],
                      flows: Mapping[str, Flow]) -> list[SpecError]:
    where = ("" if ref.path[:1] == ("jobFlow",) else "patch.jobSpec.") + ".".join(f"[{part}]" if isinstance(part, int) else part for part in ref.path) \
        .replace(".[", "[")
    placeholder = f"{{{{{ref.text}}}}}"
    if ref.field is None:
        return [SpecError(code="UndefinedPlaceholder", message=f'flow "{flow.name}": {placeholder} in {where} names '
                          "nothing", hint="write targets.NAME.result, targets.NAME.result.KEY, or for a forEach "
                          "target targets.NAME.results, .total, .succeeded or .failed; jobflow.name, .namespace, "
                          "or in a finally flow jobflow.outcome, .failedFlows, .firstError")]
    found = []
    if not may_hold_results(ref.path):
        found.append(SpecError(code="ResultOutOfPlace",
                               message=f'flow "{flow.name}": {placeholder} stands in {where}, where a result may '
                               "not go", hint="a result may go only into an env value, args, command or a pod "
                               "annotation (not one under kubernetes.io, k8s.io, volcano.sh or istio.io): pass it there and let "
                               "the container use it"))
    if ref.target is None:  # the JobFlow's own fields
        if ref.field.removeprefix("jobflow.") in OUTCOME_FIELDS and not flow.final:
            found.append(SpecError(code="OutcomeOutsideFinally",
                                   message=f'flow "{flow.name}": {placeholder}: only a finally flow reads the '
                                   "JobFlow's outcome (the other flows run before it is known)",
                                   hint=f'make "{flow.name}" a finally flow, or drop the placeholder'))
        return found
    if ref.target not in upstream:
        found.append(SpecError(code="NotATarget",
                               message=f'flow "{flow.name}": {placeholder} reads "{ref.target}", which is not among '
                               "its targets, directly or through them",
                               hint=f'add "{ref.target}" to dependsOn.targets, or fix the name'))
        return found
    target = flows[ref.target]
    fan_out = target.for_each is not None
    if fan_out and ref.field == "result":
        found.append(SpecError(code="UndefinedPlaceholder",
                               message=f'flow "{flow.name}": {placeholder}: "{ref.target}" runs forEach and has '
                               "one result per item", hint=f"use targets.{ref.target}.results (a JSON list)"))
    elif not fan_out and ref.field in FAN_IN_FIELDS:
        found.append(SpecError(code="UndefinedPlaceholder",
                               message=f'flow "{flow.name}": {placeholder}: "{ref.target}" is not a forEach flow',
                               hint=f"use targets.{ref.target}.result"))
    return found


def ancestors(name: str, flows: Mapping[str, Flow]) -> set[str]:
    """The flows ``name`` waits for, directly or through them (undefined targets left out)."""
    seen: set[str] = set()
    stack = [name]
    while stack:
        flow = flows.get(stack.pop())
        for target in (flow.depends_on.targets or ()) if flow is not None and flow.depends_on else ():
            if target in flows and target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def resolve(refs: Iterable[Reference], *, variables_of: Mapping[str, Mapping[str, Any]],
            jobflow: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Each placeholder text of ``refs`` that may hold results, with its value; and the errors of those that have
    none. ``variables_of``: each target's variables (:func:`jobflow_core.dag.outcomes.target_variables`); ``jobflow``:
    the JobFlow's name, namespace and, for a ``finally`` flow, its outcome
    (:func:`jobflow_core.dag.outcomes.jobflow_outcome`)."""
    values: dict[str, str] = {}
    problems: list[str] = []
    for ref in refs:
        if ref.field is None or ref.text in values or not may_hold_results(ref.path):
            continue
        variables = jobflow if ref.target is None else variables_of.get(ref.target, {})
        value, error = value_of(ref, variables)
        if error is not None:
            problems.append(error)
        else:
            values[ref.text] = value
    return values, list(dict.fromkeys(problems))
