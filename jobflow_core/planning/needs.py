"""What the shell must read before it plans: one answer, :func:`needs`, asked again as the answers come in.

Besides the JobFlow and its vcjobs, a plan can need what only the world outside the core holds:

- **probes**: the HTTP/TCP checks of the probes of flows that may start (:meth:`Observation.network_checks`);
- **results**: the results (pods' termination messages) of ended vcjobs that a ``when``, a patch, a ``forEach`` or
  a memoized run reads and the status does not hold yet (:meth:`Observation.results_needed`);
- **templates**: the JobTemplates of flows no readiness rule holds back, every flow's on a JobFlow's first reconcile
  (its run-time estimate), and every flow's while a ``wholeFlowAdmission`` JobFlow waits to start
  (:func:`~jobflow_core.planning.starts.templates_needed`);
- **memo**: the namespace's memoized runs, when a memoized flow may start;
- **queues**: the Volcano queues the plan's vcjobs would join (of the JobTemplates read), and those of its vcjobs
  still Pending (whether their queue can ever hold them).

They come in three stages, each asked of what the one before answered: the live answers (probes and results) can
change which flows may start, so the rest is asked of the observation that has them; the queues are those of the
JobTemplates read. So the shell asks :func:`needs` of each stage, reads exactly what it says, and plans: nothing
else decides what is read (``handlers/reads.py``, the command line's ``plan``).
"""

from collections.abc import Mapping
from functools import cached_property

from jobflow_core.dag.probes import NetworkCheck
from jobflow_core.models import JobTemplate, VcJobPhase
from jobflow_core.planning.observation import Observation
from jobflow_core.planning.starts import flow_templates_needed, templates_needed
from jobflow_core.queueing.line import DEFAULT_QUEUE, queue_of


class Needs:
    """What one observation needs read, each part worked out when first asked (a reconcile that needs no live
    answer never asks for the JobTemplates twice, and a plan that reads none asks for no queue)."""

    def __init__(self, observation: Observation) -> None:
        self.observation = observation

    @cached_property
    def probes(self) -> tuple[NetworkCheck, ...]:
        """The HTTP/TCP checks not answered yet."""
        answered = self.observation.probe_results
        return tuple(check for check in self.observation.network_checks() if check not in answered)

    @cached_property
    def results(self) -> tuple[str, ...]:
        """The vcjobs whose result is needed and not known yet."""
        return tuple(self.observation.results_needed())

    @property
    def live(self) -> bool:
        """Live answers are needed first: the observation taken with them may need more, or less, of the rest."""
        return bool(self.probes or self.results)

    @cached_property
    def templates(self) -> tuple[str, ...]:
        """The JobTemplates to read."""
        return tuple(templates_needed(self.observation))

    @cached_property
    def flow_templates(self) -> tuple[str, ...]:
        """The JobFlowTemplates of the child flows that may start (:mod:`jobflow_core.flows.children`)."""
        return tuple(flow_templates_needed(self.observation))

    @cached_property
    def memo(self) -> bool:
        """Whether the namespace's memoized runs are needed: a memoized flow may start."""
        return any(view.flow.memoize is not None for view in self.observation.candidates)

    def queues(self, templates: Mapping[str, JobTemplate]) -> tuple[str, ...]:
        """The Volcano queues, given the JobTemplates read for :attr:`templates`."""
        observation = self.observation
        pending = {job.spec.queue or DEFAULT_QUEUE for job in observation.owned
                   if job.spec is not None and job.phase in (VcJobPhase.PENDING, VcJobPhase.NEW)}
        if observation.starts_nothing:
            return tuple(sorted(pending))
        return tuple(sorted(pending | {queue_of(template.spec.to_wire()) for template in templates.values()}))


def needs(observation: Observation) -> Needs:
    """What to read for ``observation``: ask :attr:`Needs.live` first (and again of the observation with those
    answers), then the JobTemplates and memoized runs, then the queues of the templates read."""
    return Needs(observation)
