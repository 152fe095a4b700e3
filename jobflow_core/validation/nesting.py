"""What admission checks of a JobFlow's whole tree of child JobFlows: the levels a single spec cannot see.

A flow ``jobFlow: {template: T}`` makes a child JobFlow from JobFlowTemplate ``T``
(:mod:`jobflow_core.flows.children`), named like the vcjob the flow would have had, and the child's vcjobs and
children are named under that name. So a
JobFlow is only as good as the templates below it, at every depth. Given the namespace's JobFlowTemplates (the
webhook lists them, :mod:`jobflow_core.validation.review`), this module walks the tree once, depth first, and
refuses:

* a **cycle**: a JobFlowTemplate that includes itself, directly or through others (``a -> b -> a``, each step a flow
  that runs the next template), which would nest until :data:`~jobflow_core.flows.children.MAX_DEPTH` stops it;
* what the planner would block the child flow with when it starts
  (:func:`jobflow_core.validation.children.child_errors`, run on the child each flow would create, with its longest
  name: last item or iteration, last retry): a **parameter** its template does not declare, a nesting **deeper**
  than ``MAX_DEPTH``, and the child's vcjob names and ``createdByJobFlow`` label grown **too long** under the
  parent's name. Of the child's other errors (its own DAG, its CEL...) none is reported here: they do not depend on
  the parent, and the template's own admission refused them;
* a **name collision across levels**: every vcjob and child JobFlow name the tree can generate must differ from every
  other's. Flow ``b`` of the child of flow ``a`` of JobFlow ``p`` makes ``p-a-b``, the vcjob of ``p``'s own flow
  ``a-b``. Collisions between flows of one JobFlow are refused by its own checks
  (:mod:`jobflow_core.validation.jobflows`), so only pairs from two different JobFlows of the tree are reported here.

Names are compared relative to the root's name as **patterns** of ``-``-separated tokens (:func:`common_name`): the
tokens of each flow name on the way down, then ``-<index>`` where the flow has ``forEach`` or ``repeat`` (always
there: item and iteration 0 is ``-0``) and an optional ``-r<k>`` (a retry, or a rerun, makes another attempt,
however many retries the flow allows). Two patterns collide when some choice of indexes and attempts spells both,
which a small dynamic program over the two token sequences decides: a literal token meets an index when it is ``0``
or ``[1-9][0-9]*``, an attempt when it is ``r[1-9][0-9]*``; an index never meets an attempt.

A JobFlowTemplate is checked as its run with the longest name (:data:`~jobflow_core.schedules.runs.LONGEST_SUFFIX`),
its stored version replaced by the one under review: that is how an update that closes a cycle is caught. A child
flow naming a JobFlowTemplate that does not exist is not refused (it may be created later; the planner holds the flow
until then): it is a note (the webhook's warning), as is a tree too big to check whole (:data:`MAX_CHILDREN`,
:data:`MAX_COMPARISONS`).
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from jobflow_core.flows.children import child_manifest
from jobflow_core.flows.items import MAX_ITEMS, expand
from jobflow_core.flows.parameters import Item, values
from jobflow_core.flows.retries import with_retry_policies
from jobflow_core.models import Flow, JobFlow, JobFlowSpec, JobFlowTemplate
from jobflow_core.schedules.runs import LONGEST_SUFFIX
from jobflow_core.validation.children import child_errors
from jobflow_core.validation.jobflowtemplates import NAME_CODES
from jobflow_core.vocabulary.spec_errors import SpecError

MAX_CHILDREN: Final = 500
"""Child JobFlows examined per check (each is validated as the planner would): enough for any tree we know of, and a
bound on a review's time when templates fan out at every level (10 child flows, 5 levels: 100,000 children)."""

MAX_COMPARISONS: Final = 100_000
"""Pairs of names compared (each a :func:`common_name`, a few µs when they differ early), another bound on a review's
time: in a tree whose flow names differ only in digits (``step-1`` ... ``step-2000``, each a child flow of one
template) every child's flows would be compared with every other child's."""

PARENT_CHECKS: Final = ("UnknownParameter", "TooDeep")
"""The codes of :func:`~jobflow_core.validation.children.child_errors` about the flow itself; of the rest, only the
names the parent's name lengthens (:data:`~jobflow_core.validation.jobflowtemplates.NAME_CODES`) are kept."""


class Wild(Enum):
    """A token of a generated name that stands for many: an item's index, or an attempt's ``r<k>``."""

    INDEX = re.compile(r"0|[1-9][0-9]*")
    """Required: a ``forEach`` or ``repeat`` flow names every item and iteration ``-<index>``."""
    ATTEMPT = re.compile(r"r[1-9][0-9]*")
    """Optional: the first attempt has no ``-r<k>``."""


Token = str | Wild
Pattern = tuple[Token, ...]
EXAMPLES: Final = {Wild.INDEX: "0", Wild.ATTEMPT: "r1"}


def _meet(a: Token, b: Token) -> str | None:
    """The one token both ``a`` and ``b`` can be (the literal when there is one), or None."""
    if isinstance(a, Wild) and isinstance(b, Wild):
        return EXAMPLES[a] if a is b else None
    if isinstance(a, str) and isinstance(b, str):
        return a if a == b else None
    literal, wild = (a, b) if isinstance(a, str) else (b, a)
    assert isinstance(literal, str) and isinstance(wild, Wild)
    return literal if wild.value.fullmatch(literal) else None


def common_name(a: Pattern, b: Pattern) -> str | None:
    """A name (tokens joined by ``-``) that both patterns can spell, or None when none can.

    A dynamic program over the states ``(i, j)``: ``a[:i]`` and ``b[:j]`` spelled the same tokens. From one, an
    optional attempt is skipped on either side, or ``a[i]`` and ``b[j]`` meet (:func:`_meet`); the two spell one name
    when ``(len(a), len(b))`` is reached. Only the states reached are visited (a depth-first search, each state once),
    so two names that differ early cost a step or two; the spelling is read back from how each state was reached,
    skipping attempts where it can. At most quadratic in the tokens: a few dozen at most."""
    end = (len(a), len(b))
    came: dict[tuple[int, int], tuple[tuple[int, int], str | None] | None] = {}
    stack: list[tuple[tuple[int, int], tuple[tuple[int, int], str | None] | None]] = [((0, 0), None)]
    while stack:
        state, step = stack.pop()
        if state in came:
            continue
        came[state] = step
        if state == end:
            return "-".join(reversed(_spelled(state, came)))
        i, j = state
        token = _meet(a[i], b[j]) if i < end[0] and j < end[1] else None
        if token is not None:
            stack.append(((i + 1, j + 1), (state, token)))
        if j < end[1] and b[j] is Wild.ATTEMPT:
            stack.append(((i, j + 1), (state, None)))
        if i < end[0] and a[i] is Wild.ATTEMPT:  # pushed last, so tried first: a spelling without attempts first
            stack.append(((i + 1, j), (state, None)))
    return None


def _spelled(state: tuple[int, int], came: Mapping[tuple[int, int], tuple[tuple[int, int], str | None] | None]
             ) -> list[str]:
    """The tokens spelled on the way to ``state``, last first."""
    tokens = []
    step = came[state]
    while step is not None:
        state, token = step
        if token is not None:
            tokens.append(token)
        step = came[state]
    return tokens


def name_pattern(flow: Flow, *, under: Pattern = ()) -> Pattern:
    """The names of ``flow``'s vcjobs (or child JobFlows), relative to the root's name, in a JobFlow named
    ``under``."""
    fanned = flow.for_each is not None or flow.repeat is not None
    return (*under, *flow.name.split("-"), *((Wild.INDEX,) if fanned else ()), Wild.ATTEMPT)


@dataclass(frozen=True)
class Place:
    """Where a flow is in the tree: the flows from one of the root's down to it, and the JobFlowTemplate holding each
    (the first is the root's: None for a JobFlow, its own for a JobFlowTemplate)."""

    flows: tuple[str, ...]
    owners: tuple[str | None, ...]

    def below(self, flow: str, owner: str | None) -> "Place":
        return Place((*self.flows, flow), (*self.owners, owner))

    @property
    def parent(self) -> tuple[str, ...]:
        return self.flows[:-1]

    def __str__(self) -> str:
        flows = 'flow "' + '" > "'.join(self.flows) + '"'
        templates = [owner for owner in self.owners[1:] if owner is not None]
        if not templates:
            return flows
        return f'{flows} (JobFlowTemplate{"s" if len(templates) > 1 else ""} "' + '" > "'.join(templates) + '")'


@dataclass(frozen=True)
class Site:
    """One flow of the tree, and the names it generates."""

    place: Place
    pattern: Pattern


@dataclass(frozen=True)
class Nesting:
    """What the walk found: ``errors`` refuse the object; ``notes`` (warnings) say what was not checked, and why."""

    errors: list[SpecError]
    notes: list[str]


def has_children(spec: JobFlowSpec) -> bool:
    """Whether a JobFlow's (or a JobFlowTemplate's run's) ``spec`` has a child flow: only then is there a tree to
    look down (and, for a JobFlowTemplate, a cycle to close)."""
    return any(flow.job_flow is not None for flow in spec.flows or ())


def jobflow_nesting(jobflow: JobFlow, *, templates: Mapping[str, JobFlowTemplate]) -> Nesting:
    """The problems of ``jobflow``'s tree of children, its JobFlowTemplates looked up in ``templates`` (by name)."""
    walk = _Walk(templates, root=jobflow.name)
    walk.visit(jobflow, place=Place((), ()), owner=None, under=())
    return walk.result()


def template_nesting(template: JobFlowTemplate, *, templates: Mapping[str, JobFlowTemplate]) -> Nesting:
    """The problems of the tree of ``template``'s runs, with the namespace's other ``templates`` (by name; a stored
    version of ``template`` among them is replaced by it)."""
    run = JobFlow.model_validate({"metadata": {"name": template.name + LONGEST_SUFFIX, "namespace": template.namespace},
                                  "spec": template.spec.job_flow.spec.to_wire()})
    walk = _Walk({**templates, template.name: template}, root=run.name)
    walk.visit(run, place=Place((), ()), owner=template.name, under=())
    found = walk.result()
    return Nesting([error if error.code == "TemplateCycle" else
                    SpecError(error.code, f"spec.jobFlow: {error.message}", error.hint) for error in found.errors],
                   [f"spec.jobFlow: {note}" for note in found.notes])


@dataclass
class _Walk:
    """One depth-first walk of a tree: the errors and notes met on the way, and every flow's names."""

    templates: Mapping[str, JobFlowTemplate]
    root: str
    errors: list[SpecError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sites: list[Site] = field(default_factory=list)
    cycles: set[frozenset[tuple[str, str]]] = field(default_factory=set)
    children: int = 0

    def visit(self, jobflow: JobFlow, *, place: Place, owner: str | None, under: Pattern) -> None:
        """Each flow of ``jobflow`` (held by JobFlowTemplate ``owner``; at ``place``, named under ``under``), and
        the child each child flow makes, with its longest name."""
        jobflow = with_retry_policies(jobflow)
        if jobflow.metadata.uid is None:  # not stored yet: the child's owner reference needs one, any will do
            jobflow = jobflow.model_copy(update={"metadata": jobflow.metadata.model_copy(update={"uid": "new"})})
        params = values(jobflow)
        seen: set[str] = set()
        for flow in jobflow.spec.flows or ():
            if flow.name in seen:  # a duplicate flow is refused by the JobFlow's own checks
                continue
            seen.add(flow.name)
            here = place.below(flow.name, owner)
            pattern = name_pattern(flow, under=under)
            self.sites.append(Site(here, pattern))
            template = self._template_of(flow, here)
            if template is None:
                continue
            manifest = child_manifest(jobflow, flow=flow, template=template,
                                      attempt=1 + (flow.retry.limit if flow.retry else 0),
                                      item=_last_item(flow, params))
            child = manifest["metadata"]["name"]
            problems = child_errors(jobflow, flow=flow, template=template, manifest=manifest)
            self.errors += [_located(error, here, child=child, template=template.name) for error in problems
                            if error.code in PARENT_CHECKS or (error.code in NAME_CODES and child in error.message)]
            if not any(error.code == "TooDeep" for error in problems):
                self.visit(JobFlow.model_validate(manifest), place=here, owner=template.name, under=pattern)

    def _template_of(self, flow: Flow, here: Place) -> JobFlowTemplate | None:
        """The JobFlowTemplate whose child the walk goes on into: None for a flow without one, a template that does
        not exist (a note), one already on the way down (a cycle), or past :data:`MAX_CHILDREN`."""
        name = flow.job_flow.template if flow.job_flow else None
        if not name:
            return None
        template = self.templates.get(name)
        if template is None:
            self.notes.append(f'{here}: JobFlowTemplate "{name}" does not exist (yet), so the JobFlows below this '
                              "flow were not checked; the flow waits for it")
            return None
        if name in here.owners:
            self._cycle(here, name)
            return None
        self.children += 1
        if self.children > MAX_CHILDREN:
            if self.children == MAX_CHILDREN + 1:
                self.notes.append(f"only the first {MAX_CHILDREN} child JobFlows of the tree were checked")
            return None
        return template

    def _cycle(self, here: Place, name: str) -> None:
        start = here.owners.index(name)
        chain, flows = [*here.owners[start:], name], here.flows[start:]
        edges = frozenset((str(owner), flow) for owner, flow in zip(chain, flows))
        if edges in self.cycles:
            return
        self.cycles.add(edges)
        how = ", ".join(f'flow "{flow}" of {owner}' for owner, flow in zip(chain, flows))
        self.errors.append(SpecError(
            code="TemplateCycle",
            message=f'JobFlowTemplate "{name}" includes itself: {" -> ".join(str(t) for t in chain)} ({how})',
            hint="a child JobFlow would make the same child again, level after level: remove one of these flows, or "
                 "make it run another JobFlowTemplate"))

    def result(self) -> Nesting:
        found, whole = collisions(self.sites, root=self.root)
        unsure = [] if whole else [f"only the first {MAX_COMPARISONS} pairs of similar names were compared"]
        return Nesting([*self.errors, *found], [*self.notes, *unsure])


def _last_item(flow: Flow, params: Mapping[str, str]) -> Item | None:
    """The item (or iteration) with the longest name: the last one the flow can have (:data:`MAX_ITEMS` when its list
    is not known before it runs)."""
    if flow.repeat is not None:
        return Item(max(0, flow.repeat.limit - 1), None)
    if flow.for_each is None:
        return None
    items = expand(flow, params=params, result_of=lambda _: None).items
    return items[-1] if items else Item(MAX_ITEMS - 1 if items is None else 0, None)


def _located(error: SpecError, here: Place, *, child: str, template: str) -> SpecError:
    """An error of the child that the flow at ``here`` makes, said with where it is."""
    if error.code in PARENT_CHECKS:
        return SpecError(error.code, f"{here}: {error.message}", error.hint)
    return SpecError(error.code, f'{here}, its child JobFlow "{child}" (JobFlowTemplate "{template}"): '
                                 f"{error.message}",
                     f"{error.hint}; a child's names are under its own, so shorter names above it help too")


def collisions(sites: Sequence[Site], *, root: str) -> tuple[list[SpecError], bool]:
    """Each pair of flows from two different JobFlows of the tree (root ``root``) that can generate the same name;
    and whether all pairs were compared (at most :data:`MAX_COMPARISONS`). Only sites of the same skeleton
    (:func:`_skeleton`) and different parents are compared, which leaves few pairs in any tree we know of. A pair's
    shallower flow is named first."""
    groups: dict[tuple[str, ...], dict[tuple[str, ...], list[Site]]] = {}
    for site in sites:
        groups.setdefault(_skeleton(site.pattern), {}).setdefault(site.place.parent, []).append(site)
    found, compared = [], 0
    for by_parent in groups.values():
        families = list(by_parent.values())
        for index, family in enumerate(families):
            for one in family:
                for other in (site for later in families[index + 1:] for site in later):
                    compared += 1
                    if compared > MAX_COMPARISONS:
                        return found, False
                    name = common_name(one.pattern, other.pattern)
                    if name is not None:
                        found.append(_collision(one, other, name=f"{root}-{name}"))
    return found, True


def _skeleton(pattern: Pattern) -> tuple[str, ...]:
    """The literal tokens of ``pattern`` that no index or attempt can stand for (``a`` in ``a-1``, not ``1``), in
    order. Two patterns that spell one name have the same skeleton: in that spelling each such token stands where
    the other pattern has a literal, equal to it, so one the same in both."""
    return tuple(token for token in pattern if isinstance(token, str)
                 and not any(wild.value.fullmatch(token) for wild in Wild))


def _collision(one: Site, other: Site, *, name: str) -> SpecError:
    first, second = sorted((one, other), key=lambda site: len(site.place.flows))
    return SpecError(code="NameCollision", message=f'{first.place} and {second.place} can generate the same name '
                     f'"{name}"', hint="rename one of the two flows: a flow's vcjobs and child JobFlows are named "
                     "<jobflow>-<flow>, then -<index> for an item or iteration, -r<k> for a retry or rerun, and a "
                     "child JobFlow's under its own name")
