"""What would be wrong with a JobFlow's dependencies on other JobFlows (:mod:`jobflow_core.dag.awaits`).

A JobFlow waits for others in ``spec.dependsOn.jobFlows`` and in its flows' ``dependsOn.jobFlows``. Each dependency
of the spec alone (:func:`errors`, one of :func:`jobflow_core.validation.jobflows.validate`'s checks) must name
exactly one of ``name`` (a JobFlow) and ``template`` (the newest run of a JobFlowTemplate), as a Kubernetes object
name (a DNS-1123 subdomain); ``withinSeconds`` only with ``template``, at least 0; ``timeoutSeconds`` at least 1;
``name`` not the JobFlow's own (it would wait for itself). A JobFlow or template named by two dependencies is one
dependency, bound once: the two must agree on ``withinSeconds`` and ``timeoutSeconds``
(:func:`~jobflow_core.dag.awaits.disagreements`). ``spec.dependsOn.outcome`` says how to read
``spec.dependsOn.jobFlows``, so it is not set without them. Each problem names its field's path
(``spec.flows[1].dependsOn.jobFlows[0].name``).

What one spec cannot see, a **cycle** through others, is checked at admission with the namespace's objects:

* :func:`template_cycle`: the runs of a JobFlowTemplate that wait for runs of another, whose runs wait (through
  others, maybe) for runs of the first, could bind to each other and never start. A template whose runs wait for its
  own is no cycle: each binds to a run created before it (:func:`~jobflow_core.dag.awaits.choose`).
* :func:`jobflow_cycle`: a JobFlow that waits by ``name`` for a JobFlow that waits by name (through others, maybe)
  for it. The engine also finds such a cycle once both are bound (reason ``Cycle``); this refuses it before.
"""

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from jobflow_core.dag.awaits import ENDED, JOBFLOW_KEY, TEMPLATE_KEY, declared, disagreements, key_of
from jobflow_core.models import JobFlow, JobFlowDependency, JobFlowSpec
from jobflow_core.vocabulary.name_rules import is_dns1123_subdomain
from jobflow_core.vocabulary.spec_errors import SpecError

if TYPE_CHECKING:  # only admission reads templates: a cold start of the handler does not load their model
    from jobflow_core.models import JobFlowTemplate


TEMPLATE_NAME_MAX = 63
"""A JobFlowTemplate's runs carry its name as a label value (``flow.volcano.sh/jobflow-template``), at most 63
characters: a longer template has no run to wait for, and its runs' selector would be refused."""


def placed(spec: JobFlowSpec) -> list[tuple[str, JobFlowDependency]]:
    """Every dependency of ``spec`` with the path of its field, the JobFlow's own first, then its flows'."""
    found = [(f"spec.dependsOn.jobFlows[{index}]", dependency)
             for index, dependency in enumerate((spec.depends_on.job_flows or ()) if spec.depends_on else ())]
    for at, flow in enumerate(spec.flows or ()):
        found += [(f"spec.flows[{at}].dependsOn.jobFlows[{index}]", dependency)
                  for index, dependency in enumerate((flow.depends_on.job_flows or ()) if flow.depends_on else ())]
    return found


def errors(jobflow: JobFlow) -> list[SpecError]:
    """Every problem of ``jobflow``'s dependencies on other JobFlows, in spec order, then those of two that
    disagree."""
    spec = jobflow.spec
    found: list[SpecError] = []
    if spec.depends_on is not None and spec.depends_on.outcome is not None and not spec.depends_on.job_flows:
        found.append(SpecError(
            code="OutcomeWithoutJobFlows",
            message="spec.dependsOn.outcome is set, but spec.dependsOn.jobFlows names no JobFlow to wait for",
            hint="add the JobFlows to wait for to spec.dependsOn.jobFlows, or remove spec.dependsOn.outcome (a "
                 "flow's own dependsOn.outcome is how it waits for its targets)"))
    every = placed(spec)
    for where, dependency in every:
        found += _dependency_errors(where, dependency, own=jobflow.name)
    if not found:  # two dependencies compared only once each is valid: a broken one has no key to agree on
        found += _disagreements(jobflow, every)
    return found


def _dependency_errors(where: str, dependency: JobFlowDependency, *, own: str | None) -> list[SpecError]:
    found = []
    has_name, has_template = dependency.name is not None, dependency.template is not None
    if has_name == has_template:
        found.append(SpecError(
            code="InvalidJobFlowDependency",
            message=f"{where} sets {'both' if has_name else 'neither'} of name and template: it needs exactly one",
            hint="set name to wait for one JobFlow, or template to wait for the newest run of a JobFlowTemplate"))
    for field, value, kind in (("name", dependency.name, "JobFlow"), ("template", dependency.template,
                                                                       "JobFlowTemplate")):
        if value is not None and not is_dns1123_subdomain(value):
            found.append(SpecError(
                code="InvalidJobFlowDependency",
                message=f'{where}.{field} "{value}" is not a valid {kind} name',
                hint=f"name a {kind} of this namespace: at most 253 lowercase letters, digits, '-' and '.', starting "
                     "and ending with a letter or digit"))
    if dependency.template is not None and len(dependency.template) > TEMPLATE_NAME_MAX:
        found.append(SpecError(
            code="InvalidJobFlowDependency",
            message=f'{where}.template "{dependency.template}" is longer than {TEMPLATE_NAME_MAX} characters, so no '
                    "run of it can exist (a run carries its template's name as a label value)",
            hint=f"name a JobFlowTemplate of at most {TEMPLATE_NAME_MAX} characters"))
    if has_name and own and dependency.name == own:
        found.append(SpecError(
            code="WaitsForItself",
            message=f'{where}.name "{own}" is this JobFlow: it would wait for itself and never start',
            hint="name another JobFlow, or remove the dependency"))
    if has_name and dependency.within_seconds is not None:
        found.append(SpecError(
            code="InvalidJobFlowDependency",
            message=f"{where}.withinSeconds is set on a dependency by name: it only applies to template",
            hint="remove withinSeconds (a named JobFlow is the one of that name, however old), or wait for a run "
                 "of a JobFlowTemplate with template"))
    if dependency.within_seconds is not None and dependency.within_seconds < 0:
        found.append(SpecError(
            code="InvalidJobFlowDependency",
            message=f"{where}.withinSeconds {dependency.within_seconds} is negative",
            hint="set how old a run may be, in seconds (0 or more), or remove withinSeconds to accept any run"))
    if dependency.timeout_seconds is not None and dependency.timeout_seconds < 1:
        found.append(SpecError(
            code="InvalidJobFlowDependency",
            message=f"{where}.timeoutSeconds {dependency.timeout_seconds} is less than 1",
            hint="set how long to wait, in seconds (1 or more), or remove timeoutSeconds to wait as long as it takes"))
    return found


def _disagreements(jobflow: JobFlow, every: Iterable[tuple[str, JobFlowDependency]]) -> list[SpecError]:
    found = []
    for key in disagreements(jobflow):
        paths = [where for where, dependency in every if key_of(dependency) == key]
        what = f'JobFlow "{key.removeprefix(JOBFLOW_KEY)}"' if key.startswith(JOBFLOW_KEY) else \
            f'JobFlowTemplate "{key.removeprefix(TEMPLATE_KEY)}"'
        found.append(SpecError(
            code="DisagreeingJobFlowDependency",
            message=f"{' and '.join(paths)} wait for {what} with different withinSeconds or timeoutSeconds: it is one "
                    "dependency, with one binding",
            hint="make them agree (the same withinSeconds and timeoutSeconds), or keep one of them"))
    return found


def waits_for_templates(spec: JobFlowSpec) -> list[str]:
    """The JobFlowTemplates whose runs a JobFlow of ``spec`` waits for, in spec order (only when there is one does
    admission read the namespace's templates, for :func:`template_cycle`)."""
    return [key.removeprefix(TEMPLATE_KEY) for key in declared(JobFlow(spec=spec)) if key.startswith(TEMPLATE_KEY)]


def template_cycle(template: "JobFlowTemplate", *, templates: Mapping[str, "JobFlowTemplate"]
                   ) -> list[SpecError]:
    """A cycle of JobFlowTemplates whose runs wait for each other through ``template`` (its stored version in
    ``templates``, the namespace's by name, replaced by it), or nothing. A template's own runs are no step."""
    every = {**templates, template.name: template}
    edges = {name: [other for other in waits_for_templates(each.spec.job_flow.spec) if other != name]
             for name, each in every.items()}
    came: dict[str, str] = {}
    stack = [(template.name, other) for other in reversed(edges[template.name])]
    while stack:  # depth first from the template, each template once; the first path back to it is the cycle
        parent, name = stack.pop()
        if name in came or name not in every:
            continue
        came[name] = parent
        if template.name in edges[name]:
            chain = _back(came, name, to=template.name)
            return [SpecError(
                code="AwaitCycle",
                message=f'spec.jobFlow: the runs of JobFlowTemplate "{template.name}" would wait for runs that wait '
                        f"for them: {' -> '.join(chain)} (the runs of each wait for a run of the next, in "
                        "spec.dependsOn.jobFlows or a flow's dependsOn.jobFlows): they could wait for each other and "
                        "never start",
                hint="remove one of these template dependencies (a template's runs may wait for its own earlier "
                     "runs, not for runs that wait for them)")]
        stack += [(name, other) for other in reversed(edges[name]) if other not in came]
    return []


def jobflow_cycle(jobflow: JobFlow, *, jobflows: Mapping[str, JobFlow]) -> list[SpecError]:
    """A cycle of JobFlows waiting for each other by name through ``jobflow`` (the namespace's other JobFlows in
    ``jobflows``, by name), or nothing."""
    own = jobflow.name
    if not own:
        return []
    every = {**jobflows, own: jobflow}
    edges = {name: _waits_by_name(each, stored=name != own) for name, each in every.items()}
    came: dict[str, str] = {}
    stack = [(own, other) for other in reversed(edges[own]) if other != own]
    while stack:
        parent, name = stack.pop()
        if name in came or name not in every or name == own:
            continue
        came[name] = parent
        if own in edges[name]:
            chain = _back(came, name, to=own)
            return [SpecError(
                code="AwaitCycle",
                message=f"dependsOn.jobFlows: this JobFlow waits by name for JobFlows that wait for it: "
                        f"{' -> '.join(chain)} (each waits for the next, in spec.dependsOn.jobFlows or a flow's "
                        "dependsOn.jobFlows): none of them could ever start",
                hint="remove one of these dependencies, or wait for a JobFlow that does not wait for this one")]
        stack += [(name, other) for other in reversed(edges[name]) if other not in came and other != own]
    return []


def _back(came: Mapping[str, str], last: str, *, to: str) -> list[str]:
    """The path ``to`` ... ``last`` ... ``to`` the search took (``came``: each node's parent), a cycle spelled out."""
    chain = [last]
    while chain[-1] != to:
        chain.append(came[chain[-1]])
    return [*reversed(chain), to]


def _waits_by_name(jobflow: JobFlow, *, stored: bool) -> list[str]:
    """The JobFlows ``jobflow`` waits for by name; a ``stored`` one's as its status has it: none once it ended, and
    not those whose end it recorded."""
    status = jobflow.status if stored else None
    if status is not None and status.state is not None and status.state.phase in ENDED:
        return []
    over = {entry.name for entry in ((status.awaited_job_flows if status is not None else None) or ())
            if entry.phase is not None or entry.reason is not None}
    return [key.removeprefix(JOBFLOW_KEY) for key in declared(jobflow)
            if key.startswith(JOBFLOW_KEY) and key not in over]


def waits_by_name(jobflow: JobFlow) -> bool:
    """Whether ``jobflow`` waits for another JobFlow by name (only then does admission read the namespace's JobFlows,
    for :func:`jobflow_cycle`)."""
    return any(key.startswith(JOBFLOW_KEY) for key in declared(jobflow))
