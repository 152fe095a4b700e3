"""A JobFlow that waits for another JobFlow: what each such dependency binds to, and what it says of its flows.

A JobFlow waits for others in ``spec.dependsOn.jobFlows`` (the whole JobFlow: a dependency of each flow that has no
targets and is not ``finally``) or in a flow's ``dependsOn.jobFlows``. Each names a JobFlow of the same namespace,
``name``, or a JobFlowTemplate, ``template``: the newest of its runs created at most ``withinSeconds`` before this
JobFlow (or after it), so tonight's evaluation does not bind to yesterday's training. Its key, ``JobFlow/<name>`` or
``JobFlowTemplate/<name>``, is a target of the flows that wait for it (flow names hold no ``/``): ``dependsOn.outcome``
reads it like a flow's outcome (the run's ``Succeed`` is Succeeded, its ``Failed`` is Failed), so a flow waits for it
to succeed, to fail or to end, is skipped when it cannot, and a failure nothing handles fails the JobFlow
(:mod:`jobflow_core.dag.outcomes`).

**Binding.** The run a dependency waits for is chosen once and recorded in ``status.awaitedJobFlows`` (its name and
UID), and never chosen again: by name, the JobFlow of that name when first seen; by template, the newest run (by
creation, then name) within the window, other than this JobFlow itself; a run of that very template binds only a run
created before it (tonight's run waits for last night's, never for tomorrow's, which would wait for it).

**What it says**, :data:`AWAIT_RULES`, the first row that holds:

==============================================================  =========================================  ========
when                                                            the dependency                             reason
==============================================================  =========================================  ========
the status records how it ended                                 as recorded (it never changes: a deleted
                                                                run's recorded end stands)
its bound run is seen ended (same UID) within its timeout       the run's phase: Succeed or Failed
its ``timeoutSeconds`` passed (since this JobFlow was created,  Failed                                     TimedOut
or since its last rerun was accepted)
its bound run is gone (not found, or another UID by that name)  Failed                                     Deleted
its bound run waits, bound, for this JobFlow                    Failed (neither could ever start)          Cycle
otherwise                                                       not ended: its flows wait
==============================================================  =========================================  ========

A rerun accepted for this JobFlow forgets the recorded ends that failed (not a ``Succeed``, nor the bindings), so a
rerun after the awaited run itself was rerun waits for it again.

**Waking.** This JobFlow carries one label per dependency that has not ended (:func:`wait_labels`):
``jobflow.waits.flow.volcano.sh/<run>`` once bound or named, else ``jobflowtemplate.waits.flow.volcano.sh/<template>``,
so when a JobFlow ends (or goes) the engine finds those that wait for it with one label-selected LIST (two for a
template's run), and reconciles them (``handlers/dispatch.py``). A plan that adds a label is planned again once it is
written (``handlers/jobflows.py``), reading what it waits for after the label exists: an end between the first read
and the label would otherwise find nobody to wake.
"""

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Callable, Final

from jobflow_core.models import (AwaitedJobFlow, DependsOn, Flow, JobFlow, JobFlowDependency, JobFlowPhase,
                                 format_time)
from jobflow_core.vocabulary.api import RUN_OF
from jobflow_core.vocabulary.phase import FlowOutcome

JOBFLOW_KEY: Final = "JobFlow/"
TEMPLATE_KEY: Final = "JobFlowTemplate/"
WAITS_FOR_JOBFLOW: Final = "jobflow.waits.flow.volcano.sh/"
"""Label prefix of a JobFlow that waits for the JobFlow named after it (``kubectl get jf -l <label>`` lists them)."""
WAITS_FOR_TEMPLATE: Final = "jobflowtemplate.waits.flow.volcano.sh/"
"""Label prefix of a JobFlow that waits for a run (not chosen yet) of the JobFlowTemplate named after it."""
_LABEL_NAME_MAX = 63
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

ENDED: Final = {JobFlowPhase.SUCCEED: FlowOutcome.SUCCEEDED, JobFlowPhase.FAILED: FlowOutcome.FAILED}


def key_of(dependency: JobFlowDependency) -> str:
    return f"{JOBFLOW_KEY}{dependency.name}" if dependency.name else f"{TEMPLATE_KEY}{dependency.template}"


def is_key(target: str) -> bool:
    """Whether a target is a JobFlow dependency's key, not a flow's name."""
    return "/" in target


def declared(jobflow: JobFlow) -> dict[str, JobFlowDependency]:
    """Every dependency of the JobFlow by key, the JobFlow's own first, then its flows' in spec order (validation
    makes two of one key agree: :func:`disagreements`)."""
    found: dict[str, JobFlowDependency] = {}
    spec = jobflow.spec
    for dependency in (spec.depends_on.job_flows or ()) if spec.depends_on else ():
        found.setdefault(key_of(dependency), dependency)
    for flow in spec.flows or ():
        for dependency in (flow.depends_on.job_flows or ()) if flow.depends_on else ():
            found.setdefault(key_of(dependency), dependency)
    return found


def disagreements(jobflow: JobFlow) -> list[str]:
    """Keys declared twice with different ``withinSeconds`` or ``timeoutSeconds``: one dependency, one binding."""
    first = declared(jobflow)
    spec = jobflow.spec
    every = [*((spec.depends_on.job_flows or ()) if spec.depends_on else ()),
             *(d for flow in spec.flows or () for d in ((flow.depends_on.job_flows or ()) if flow.depends_on else ()))]
    return list(dict.fromkeys(key_of(d) for d in every if d != first[key_of(d)]))


def awaited_by(jobflow: JobFlow, flow: Flow) -> tuple[str, ...]:
    """The keys ``flow`` waits for: its own, and the JobFlow's when it has no targets and is not ``finally``."""
    own = [key_of(d) for d in ((flow.depends_on.job_flows or ()) if flow.depends_on else ())]
    spec = jobflow.spec
    root = not (flow.depends_on and flow.depends_on.targets) and not flow.final
    whole = [key_of(d) for d in (spec.depends_on.job_flows or ())] if root and spec.depends_on else []
    return tuple(dict.fromkeys([*own, *whole]))


def with_awaited(jobflow: JobFlow, flow: Flow) -> Flow:
    """``flow`` as the outcome pass reads it: the keys it waits for added to its targets (with the JobFlow's
    ``dependsOn.outcome`` when they come from there and the flow sets none)."""
    keys = awaited_by(jobflow, flow)
    if not keys:
        return flow
    depends = flow.depends_on
    outcome = depends.outcome if depends and depends.outcome else (
        jobflow.spec.depends_on.outcome if jobflow.spec.depends_on else None)
    targets = [*((depends.targets or ()) if depends else ()), *keys]
    return flow.model_copy(update={"depends_on": (depends or DependsOn()).model_copy(
        update={"targets": targets, "outcome": outcome})})


@dataclass(frozen=True)
class Run:
    """Another JobFlow as a dependency sees it: read from its metadata and status only (its spec is not parsed:
    a JobFlow this one cannot make sense of can still be waited for)."""

    name: str
    uid: str
    created: datetime | None
    phase: JobFlowPhase | None
    ended: datetime | None
    template: str | None = None
    waits_for: frozenset[str] = frozenset()
    """UIDs of the runs it is bound to and has not seen end."""

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> "Run":
        meta, status = raw.get("metadata") or {}, raw.get("status") or {}
        phase = (status.get("state") or {}).get("phase")
        return cls(name=meta.get("name", ""), uid=meta.get("uid", ""),
                   created=_time(meta.get("creationTimestamp")),
                   phase=JobFlowPhase(phase) if phase in JobFlowPhase._value2member_map_ else None,
                   ended=_time(status.get("endTimestamp")), template=(meta.get("labels") or {}).get(RUN_OF),
                   waits_for=frozenset(entry.get("uid") for entry in status.get("awaitedJobFlows") or ()
                                       if entry.get("uid") and not entry.get("phase") and not entry.get("reason")))


def _time(value: Any) -> datetime | None:
    """An RFC 3339 time of the API server's, as an aware datetime (None: absent or not a time)."""
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return parsed if parsed is None or parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Seen:
    """What the shell read for :func:`to_read`: the JobFlows by name (None: not found), the runs by template."""

    jobflows: Mapping[str, Run | None] = field(default_factory=dict)
    templates: Mapping[str, tuple[Run, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Reads:
    names: tuple[str, ...]
    """JobFlows to GET."""
    templates: tuple[str, ...]
    """JobFlowTemplates whose runs to LIST."""

    def __bool__(self) -> bool:
        return bool(self.names or self.templates)


def to_read(jobflow: JobFlow) -> Reads:
    """What to read for the dependencies that have not ended: the bound run (or the named JobFlow), else the runs
    of the template."""
    open_ = list(_awaiting(jobflow, _recorded(jobflow)))
    return Reads(tuple(dict.fromkeys(name for is_run, name in open_ if is_run)),
                 tuple(dict.fromkeys(name for is_run, name in open_ if not is_run)))


def _awaiting(jobflow: JobFlow, entries: Mapping[str, AwaitedJobFlow]) -> Iterator[tuple[bool, str]]:
    """What each dependency that has not ended waits for now, per its entry: ``(True, name)`` a JobFlow (the bound
    run, or the one named), ``(False, template)`` a run of the template not chosen yet. What is read and what the
    labels say follow from this one answer."""
    for key, dependency in declared(jobflow).items():
        entry = entries.get(key)
        if entry is not None and _ended(entry):
            continue
        if entry is not None and entry.job_flow:
            yield True, entry.job_flow
        elif dependency.name:
            yield True, dependency.name
        else:
            yield False, dependency.template or ""


def _recorded(jobflow: JobFlow) -> dict[str, AwaitedJobFlow]:
    return {entry.name: entry for entry in (jobflow.status.awaited_job_flows or ())} if jobflow.status else {}


def _ended(entry: AwaitedJobFlow) -> bool:
    return entry.phase is not None or entry.reason is not None


def outcome_of(entry: AwaitedJobFlow) -> FlowOutcome | None:
    """The dependency's outcome, as its flows read it."""
    if entry.reason is not None:
        return FlowOutcome.FAILED
    return ENDED.get(entry.phase) if entry.phase is not None else None


@dataclass(frozen=True)
class AwaitFacts:
    """What the rules may ask about one dependency."""

    jobflow: JobFlow
    key: str
    dependency: JobFlowDependency
    entry: AwaitedJobFlow
    """As recorded, with the binding chosen now when there was none."""
    run: Run | None
    """The bound run as read (None: not read, or not found)."""
    read: bool
    """Whether the bound run was read (a plan without reads, the command line's, decides nothing from it)."""
    deadline: datetime | None
    now: datetime | None


@dataclass(frozen=True)
class AwaitRule:
    when: str
    holds: Callable[[AwaitFacts], AwaitedJobFlow | None]
    """The entry to record when the row holds, else None."""


def _as_recorded(facts: AwaitFacts) -> AwaitedJobFlow | None:
    return facts.entry if _ended(facts.entry) else None


def _run_ended(facts: AwaitFacts) -> AwaitedJobFlow | None:
    run = facts.run
    if run is None or run.uid != facts.entry.uid or run.phase not in ENDED:
        return None
    end = run.ended or facts.now
    if facts.deadline is not None and end is not None and end > facts.deadline:
        return None
    return facts.entry.model_copy(update={"phase": run.phase, "end_timestamp": end,
                                          "message": f'JobFlow "{run.name}" ended {run.phase.value}'})


def _timed_out(facts: AwaitFacts) -> AwaitedJobFlow | None:
    if facts.deadline is None or facts.now is None or facts.now < facts.deadline:
        return None
    return facts.entry.model_copy(update={"reason": "TimedOut", "message": (
        f"{_what(facts)} did not end within timeoutSeconds ({facts.dependency.timeout_seconds}); raise "
        "timeoutSeconds, or run it, then rerun this JobFlow")})


def _deleted(facts: AwaitFacts) -> AwaitedJobFlow | None:
    entry = facts.entry
    if not facts.read or not entry.uid or (facts.run is not None and facts.run.uid == entry.uid):
        return None
    return entry.model_copy(update={"reason": "Deleted", "message": (
        f'JobFlow "{entry.job_flow}" (uid {entry.uid}) was deleted before it ended')})


def _cycle(facts: AwaitFacts) -> AwaitedJobFlow | None:
    run, uid = facts.run, facts.jobflow.metadata.uid
    if run is None or not uid or uid not in run.waits_for or run.uid != facts.entry.uid:
        return None
    return facts.entry.model_copy(update={"reason": "Cycle", "message": (
        f'JobFlow "{run.name}" waits for this JobFlow, which waits for it: neither can ever start (remove one of '
        "the dependencies, then rerun both)")})


AWAIT_RULES: Final = (
    AwaitRule("the status records how it ended", _as_recorded),
    AwaitRule("its bound run is seen ended within its timeout", _run_ended),
    AwaitRule("its timeoutSeconds passed", _timed_out),
    AwaitRule("its bound run is gone", _deleted),
    AwaitRule("its bound run waits, bound, for this JobFlow", _cycle),
)
"""The table of the module docstring, in order ("otherwise": not ended)."""


def _what(facts: AwaitFacts) -> str:
    entry, dependency = facts.entry, facts.dependency
    if entry.job_flow:
        return f'JobFlow "{entry.job_flow}"'
    if dependency.name:
        return f'JobFlow "{dependency.name}"'
    return f'a run of JobFlowTemplate "{dependency.template}"'


def _waiting(facts: AwaitFacts) -> str:
    entry, dependency, run = facts.entry, facts.dependency, facts.run
    if entry.job_flow:
        phase = run.phase.value if run is not None and run.phase else "not started"
        return f'waiting for JobFlow "{entry.job_flow}" to end (it is {phase})'
    if dependency.name:
        return f'waiting for JobFlow "{dependency.name}" to be created'
    since = window_start(facts.jobflow, dependency)
    return (f'waiting for a run of JobFlowTemplate "{dependency.template}"'
            + (f" created after {format_time(since)}" if since else ""))


def window_start(jobflow: JobFlow, dependency: JobFlowDependency) -> datetime | None:
    created = jobflow.metadata.creation_timestamp
    if dependency.within_seconds is None or created is None:
        return None
    return created - timedelta(seconds=dependency.within_seconds)


def choose(jobflow: JobFlow, dependency: JobFlowDependency, seen: Seen) -> Run | None:
    """The run a dependency that has none binds to now: the named JobFlow, or the newest run of the template within
    the window (not this JobFlow)."""
    if dependency.name:
        run = seen.jobflows.get(dependency.name)
        return run if run is not None and run.uid != jobflow.metadata.uid else None
    since = window_start(jobflow, dependency)
    own = (jobflow.metadata.labels or {}).get(RUN_OF) == dependency.template  # a run waiting for an earlier one
    me = (jobflow.metadata.creation_timestamp or _EPOCH, jobflow.name)
    runs = [run for run in seen.templates.get(dependency.template or "", ())
            if run.uid != jobflow.metadata.uid and run.template == dependency.template
            and (since is None or (run.created is not None and run.created >= since))
            and not (own and (run.created or _EPOCH, run.name) >= me)]
    return max(runs, key=lambda run: (run.created is not None, run.created or _EPOCH, run.name), default=None)


def settle(jobflow: JobFlow, seen: Seen | None, *, now: datetime | None,
           forget_ends: bool = False, since: datetime | None = None) -> dict[str, AwaitedJobFlow]:
    """Each dependency's entry for ``status.awaitedJobFlows``, by key, as of ``now``: bound (once) from ``seen``,
    decided by :data:`AWAIT_RULES`. ``seen`` None: nothing was read (nothing new is bound, no run is looked at).
    ``forget_ends``: a rerun was just accepted (its recorded failed ends are forgotten, its bindings kept);
    ``since``: when (the timeouts count from it, else from the JobFlow's creation)."""
    recorded = _recorded(jobflow)
    settled: dict[str, AwaitedJobFlow] = {}
    for key, dependency in declared(jobflow).items():
        entry = recorded.get(key) or AwaitedJobFlow(name=key)
        if forget_ends and outcome_of(entry) is FlowOutcome.FAILED:
            entry = entry.model_copy(update={"phase": None, "end_timestamp": None, "reason": None, "message": None})
        if not entry.uid and seen is not None and (chosen := choose(jobflow, dependency, seen)) is not None:
            entry = entry.model_copy(update={"job_flow": chosen.name, "uid": chosen.uid, "bound_at": now})
        name = entry.job_flow or dependency.name
        run = seen.jobflows.get(name) if seen is not None and name else None
        if run is None and seen is not None and entry.job_flow and dependency.template:
            run = next((r for r in seen.templates.get(dependency.template, ()) if r.name == entry.job_flow), None)
        start = since or jobflow.metadata.creation_timestamp
        deadline = start + timedelta(seconds=dependency.timeout_seconds) \
            if dependency.timeout_seconds is not None and start is not None else None
        read = seen is not None and bool(entry.job_flow) and (
            entry.job_flow in seen.jobflows or dependency.template in seen.templates)
        facts = AwaitFacts(jobflow, key, dependency, entry, run, read, deadline, now)
        decided = next((found for rule in AWAIT_RULES if (found := rule.holds(facts)) is not None), None)
        settled[key] = decided or entry.model_copy(update={"message": _waiting(facts)})
    return settled


def wait_labels(jobflow: JobFlow, entries: Mapping[str, AwaitedJobFlow]) -> dict[str, str]:
    """The labels that let a JobFlow's end wake this one (module docstring, "Waking"): one per dependency that has
    not ended."""
    return {(WAITS_FOR_JOBFLOW if is_run else WAITS_FOR_TEMPLATE) + label_name(name): "true"
            for is_run, name in _awaiting(jobflow, entries)}


def label_name(name: str) -> str:
    """A JobFlow's or template's name as a label key's name part: itself when it fits (63 characters), else its
    first 52 and a digest."""
    if len(name) <= _LABEL_NAME_MAX:
        return name
    return f"{name[:52].rstrip('.-')}-{hashlib.sha256(name.encode()).hexdigest()[:10]}"


def relabel(jobflow: JobFlow, wanted: Mapping[str, str]) -> dict[str, str | None] | None:
    """The merge patch of ``metadata.labels`` that makes the JobFlow's wait labels ``wanted`` (None: nothing to
    change)."""
    have = {key: value for key, value in (jobflow.metadata.labels or {}).items()
            if key.startswith((WAITS_FOR_JOBFLOW, WAITS_FOR_TEMPLATE))}
    patch: dict[str, str | None] = {key: None for key in have if key not in wanted}
    patch.update({key: value for key, value in wanted.items() if have.get(key) != value})
    return patch or None


def waiters_selectors(raw: Mapping[str, Any]) -> list[str]:
    """The label selectors that find the JobFlows waiting for this one (it ended, or went): by its name, and, for a
    template's run, by its template (those not bound yet)."""
    meta = raw.get("metadata") or {}
    selectors = [WAITS_FOR_JOBFLOW + label_name(meta.get("name", ""))]
    template = (meta.get("labels") or {}).get(RUN_OF)
    if template:
        selectors.append(WAITS_FOR_TEMPLATE + label_name(template))
    return selectors


def describe(entries: Mapping[str, AwaitedJobFlow], keys: Iterable[str]) -> str:
    """What the flows waiting on ``keys`` wait for, in words."""
    return "; ".join(entries[key].message or key for key in keys if key in entries)



def may_bind(waiter: JobFlow, *, template: str, name: str, created: datetime | None) -> bool:
    """Whether ``waiter``, not bound yet to a run of ``template``, could still bind the run ``name`` (created at
    ``created``) by :func:`choose`: a JobFlowTemplate's history limits keep such a run (``handlers/
    jobflowtemplates.py``), as they keep one a JobFlow is bound to and has not seen end."""
    recorded = _recorded(waiter)
    run = Run(name=name, uid="", created=created, phase=None, ended=None, template=template)
    return any(choose(waiter, dependency, Seen(templates={template: (run,)})) is not None
               for key, dependency in declared(waiter).items()
               if dependency.template == template and not (key in recorded and recorded[key].uid))
