"""What the planner sees of each flow: its *units* (a vcjob and its attempts) and its *node* (the flow in the DAG).

A plain flow has one unit, named ``<jobflow>-<flow>``. A ``forEach`` flow (:mod:`jobflow_core.flows.items`) has one unit
per item, ``<jobflow>-<flow>-<index>``; while its items are not known yet (a target's result is not in), or cannot
be worked out, or there are none, it has one *placeholder* unit that never gets a vcjob but carries the flow's
waiting, blocked or skipped decision. Units are what the start table decides on (:mod:`jobflow_core.planning.starts`)
and what the status records; nodes are what dependencies, outcomes and the JobFlow phase read.

A unit's attempts: the first keeps the unit's name; with ``retry``, attempt ``n`` is named by
:func:`~jobflow_core.vocabulary.naming.attempt_job_name`. Each attempt pairs the live vcjob this JobFlow controls (owner
reference UID) with what the previous status recorded about it: the status is the record of vcjobs that are gone,
for instance deleted by ``ttlSecondsAfterFinished``.
"""

from dataclasses import dataclass
from functools import cached_property
from datetime import datetime

from jobflow_core.flows.parameters import Item
from jobflow_core.flows.retries import retries
from jobflow_core.models import Flow, FlowCondition, FlowJobStatus, VcJob, VcJobPhase
from jobflow_core.vocabulary.naming import attempt_job_name
from jobflow_core.vocabulary.phase import JobCategory, category_of, is_final


def unit_key(flow: str, item: Item | None) -> str:
    """A unit's name among its JobFlow's units: the flow's, or ``<flow>-<index>`` for an item or an iteration
    (unique: admission refuses a flow named like that)."""
    return flow if item is None else f"{flow}-{item.index}"


@dataclass(frozen=True)
class Attempt:
    """One attempt of a unit: its vcjob (live, or only recorded in the previous status)."""

    number: int
    job_name: str
    job: VcJob | None
    record: FlowJobStatus | None
    condition: FlowCondition | None

    @property
    def phase(self) -> VcJobPhase | None:
        """The live vcjob's phase; else the recorded one; ``None`` if it never had a vcjob."""
        if self.job is not None:
            return self.job.phase
        return self.record.state if self.record else None

    @property
    def ended_at(self) -> datetime | None:
        """When its vcjob reached a final phase, if it did and the time is known."""
        if self.job is not None:
            state = self.job.status.state if self.job.status else None
            return state.last_transition_time if state and is_final(self.job.phase) else None
        return self.record.end_timestamp if self.record else None


@dataclass(frozen=True)
class FlowView:
    """One unit: a plain flow, one item of a ``forEach`` flow, or a ``forEach`` flow's placeholder. Frozen, so
    what the planner asks of it many times per plan (phase, whether it needs a vcjob) is worked out once."""

    jobflow: str
    """The JobFlow's name."""
    flow: Flow
    attempts: tuple[Attempt, ...]
    """Every attempt so far, in order; at least the first, which may have no vcjob yet."""
    foreign: VcJob | None
    """A live vcjob this JobFlow does not control, holding the name :attr:`next_job_name` needs."""
    first: int = 1
    """The first attempt that counts: a rerun from failure (:mod:`jobflow_core.dag.reruns`) makes the ones before it
    history, kept in the status but no longer the flow's outcome."""
    item: Item | None = None
    """The item this unit runs, for a ``forEach`` flow."""
    placeholder: bool = False
    """A ``forEach`` flow's stand-in while it has no items to run: never gets a vcjob."""

    @property
    def name(self) -> str:
        return self.flow.name

    @property
    def key(self) -> str:
        return unit_key(self.flow.name, self.item)

    @property
    def current(self) -> Attempt:
        return self.attempts[-1]

    @cached_property
    def superseded(self) -> bool:
        """A rerun asked for a new attempt, not created yet: the last one is history."""
        return self.current.number < self.first

    @property
    def job_name(self) -> str:
        return self.next_job_name if self.superseded else self.current.job_name

    @cached_property
    def job(self) -> VcJob | None:
        return None if self.superseded else self.current.job

    @property
    def record(self) -> FlowJobStatus | None:
        return None if self.superseded else self.current.record

    @property
    def condition(self) -> FlowCondition | None:
        return None if self.superseded else self.current.condition

    @cached_property
    def phase(self) -> VcJobPhase | None:
        """The current attempt's phase: its live vcjob's, else the recorded one; ``None`` without any vcjob (or
        when a rerun made it history)."""
        return None if self.superseded else self.current.phase

    @cached_property
    def retrying(self) -> bool:
        """The current attempt ended in a way ``retry`` runs again, and attempts of this run are left."""
        return not self.superseded and retries(self.flow, attempt=self.current.number - self.first + 1,
                                               phase=self.phase)

    @cached_property
    def needs_job(self) -> bool:
        """A retry is due, or there is no live vcjob and none that finished: a vcjob that vanished before it
        finished is needed again. A placeholder always "needs" one: its decision says why it gets none."""
        return self.placeholder or self.retrying or (self.job is None and not is_final(self.phase))

    @cached_property
    def running(self) -> bool:
        """It has a live vcjob that has not ended (it holds a ``parallelism`` slot)."""
        return self.job is not None and not is_final(self.job.phase)

    @cached_property
    def next_attempt(self) -> int:
        """The attempt a vcjob created now would be."""
        if self.superseded:
            return self.first
        return self.current.number + 1 if self.retrying else self.current.number

    @property
    def next_job_name(self) -> str:
        return attempt_job_name(jobflow=self.jobflow, flow=self.name, attempt=self.next_attempt,
                                index=self.item.index if self.item else None)


@dataclass(frozen=True)
class FlowNode:
    """One flow of the DAG and its units; what its dependents, its outcome and the JobFlow phase read."""

    flow: Flow
    units: tuple[FlowView, ...]
    items: tuple[Item, ...] | None = None
    """A ``forEach`` flow's items, once known (None: not known yet, or ``items_error``)."""
    items_error: str | None = None
    """Why a ``forEach`` flow's items cannot be worked out, or why a ``repeat`` flow's loop failed."""
    done: bool | None = None
    """A ``repeat`` flow's loop: True, ``until`` held; False, it failed (``items_error``); None, not ended."""
    unread: str | None = None
    """A ``repeat`` flow's last iteration, Completed, whose result must be read before the loop goes on."""

    @property
    def name(self) -> str:
        return self.flow.name

    @property
    def fan_out(self) -> bool:
        """The flow runs several vcjobs: one per item (``forEach``) or per iteration (``repeat``)."""
        return self.flow.for_each is not None or self.flow.repeat is not None

    @property
    def repeats(self) -> bool:
        return self.flow.repeat is not None

    @property
    def empty(self) -> bool:
        """A ``forEach`` flow with no items: it succeeds once its dependencies are met."""
        return self.items is not None and not self.items

    @property
    def only(self) -> FlowView:
        """The unit of a plain flow."""
        return self.units[0]

    @property
    def needs_job(self) -> bool:
        """Something of this flow is still to start: its vcjob, or items (or a placeholder waiting for them)."""
        return any(unit.needs_job for unit in self.units)

    @property
    def running(self) -> bool:
        return any(unit.running for unit in self.units)

    @property
    def retrying(self) -> bool:
        return any(unit.retrying for unit in self.units)

    @property
    def phase(self) -> VcJobPhase | None:
        """A plain flow's effective job phase. A fan-out's, aggregated: none before any item had a vcjob; once
        all ended, Completed if each did, else the first failed item's phase; Running in between."""
        if not self.fan_out:
            return self.only.phase
        if self.repeats:
            return self._loop_phase
        real = [unit for unit in self.units if not unit.placeholder]
        phases = [unit.phase for unit in real]
        if not real or all(phase is None for phase in phases):
            return None
        if self.needs_job or any(not is_final(phase) for phase in phases):
            return VcJobPhase.RUNNING
        failed = [phase for phase in phases if category_of(phase) is JobCategory.FAILED]
        return failed[0] if failed else VcJobPhase.COMPLETED

    @property
    def _loop_phase(self) -> VcJobPhase | None:
        """A ``repeat`` flow: Completed once ``until`` held, Failed when the loop failed or an iteration failed for
        good, Running in between, none before its first iteration had a vcjob (:mod:`jobflow_core.flows.loops`)."""
        if self.done is not None:
            return VcJobPhase.COMPLETED if self.done else VcJobPhase.FAILED
        last = self.units[-1]
        if last.phase is not None and category_of(last.phase) is JobCategory.FAILED and not last.retrying:
            return last.phase
        return VcJobPhase.RUNNING if any(unit.phase is not None for unit in self.units) else None

    @property
    def job(self) -> VcJob | None:
        """A plain flow's live vcjob (a fan-out has no single one)."""
        return None if self.fan_out else self.only.job

    @property
    def ended_at(self) -> datetime | None:
        """When its last vcjob ended (None while one has not, or none ever ran)."""
        ends = [unit.current.ended_at for unit in self.units if not unit.placeholder]
        return None if not ends or None in ends else max(end for end in ends if end is not None)

    @property
    def attempts(self) -> int:
        """How many attempts its unit has had (0: never a vcjob); for a fan-out, over all its items."""
        return sum(unit.current.number for unit in self.units if unit.phase is not None)
