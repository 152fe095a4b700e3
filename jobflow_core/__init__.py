"""The pure core of a serverless JobFlow engine for Volcano: decisions only, no I/O.

A JobFlow (``flow.volcano.sh/v1alpha1``) is a DAG of flows; each flow runs one Volcano job (vcjob) made from
the JobTemplate of the same name, once the vcjobs of the flows it depends on are Completed. This package
decides *what should happen*; the shell (``handlers/``) reads the cluster, plans (:func:`observe`, then
:func:`plan_observation`), and carries out the plan's actions in order. Nothing here imports a web framework or a
Kubernetes client, reads a clock, or draws random numbers, so every decision can be tested from YAML alone and repeated
safely.

The folders are the map. Each room (a sub-package) owns one kind of decision; the list below goes from the bottom
room to the top one, and a room imports only rooms listed before it (``.importlinter``, checked by the unit tests;
docs/architecture.md, "The rooms and their order"). Every module, with the one decision it owns (the same list as
docs/architecture.md's table; ``tests/unit/test_decision_maps.py`` fails when a module is missing from either):

The objects (:mod:`~jobflow_core.models`):

* :mod:`~jobflow_core.models`: the API objects, one import for every model.
* :mod:`~jobflow_core.models.base`: how Kubernetes JSON becomes Python objects and back: JSON names, timestamps,
  unknown fields kept.
* :mod:`~jobflow_core.models.jobflow`: the JobFlow, field for field, with upstream's JSON names.
* :mod:`~jobflow_core.models.jobtemplate`: the JobTemplate, field for field.
* :mod:`~jobflow_core.models.vcjob`: the Volcano job (vcjob), the fields the engine reads and keeps.
* :mod:`~jobflow_core.models.jobflowtemplate`: the JobFlowTemplate (ours): a JobFlow that starts itself.

The shared words (:mod:`~jobflow_core.vocabulary`):

* :mod:`~jobflow_core.vocabulary`: the words every room uses: API names, vcjob names, durations, gang requests,
  events, phases.
* :mod:`~jobflow_core.vocabulary.api`: the API identity: group, version, kind, plural, label and annotation keys.
* :mod:`~jobflow_core.vocabulary.naming`: vcjob names, ``createdBy`` labels, owner references, whether a vcjob is
  ours.
* :mod:`~jobflow_core.vocabulary.durations`: how a duration is written (Go's ``time.Duration.String``).
* :mod:`~jobflow_core.vocabulary.label_selectors`: what a label selector (kubectl's ``-l``) matches.
* :mod:`~jobflow_core.vocabulary.name_rules`: Kubernetes' naming rules (DNS-1123 labels).
* :mod:`~jobflow_core.vocabulary.spec_errors`: what a spec error says: what is wrong and what to do.
* :mod:`~jobflow_core.vocabulary.phase`: the JobFlow phase, from one table.
* :mod:`~jobflow_core.vocabulary.resources`: what a vcjob's gang requests at once, in Kubernetes quantities.
* :mod:`~jobflow_core.vocabulary.kube_events`: the Kubernetes Events a plan records, and every reason word.

CEL (:mod:`~jobflow_core.cel`):

* :mod:`~jobflow_core.cel`: CEL as Kubernetes users write it: their libraries, a cost limit, the functions called.
* :mod:`~jobflow_core.cel.library`: the functions of Kubernetes' CEL libraries (strings, lists, regex, quantity).
* :mod:`~jobflow_core.cel.budget`: when an evaluation is stopped: a budget of steps, as Kubernetes limits a cost.
* :mod:`~jobflow_core.cel.calls`: which functions an expression calls, and which of them the engine does not have.

One flow (:mod:`~jobflow_core.flows`):

* :mod:`~jobflow_core.flows`: what one flow's spec asks for, and the vcjob it makes.
* :mod:`~jobflow_core.flows.units`: what a flow is made of: its units (a vcjob and its attempts) and its node in the
  DAG.
* :mod:`~jobflow_core.flows.parameters`: ``spec.parameters`` and placeholders: the values one run uses.
* :mod:`~jobflow_core.flows.items`: a ``forEach`` flow's items: how they are worked out, named and counted.
* :mod:`~jobflow_core.flows.loops`: a ``repeat`` flow's iterations: whether another one runs.
* :mod:`~jobflow_core.flows.retries`: whether a failed vcjob runs again, and after which backoff.
* :mod:`~jobflow_core.flows.deadlines`: when time alone ends a wait or a vcjob: ``activeDeadlineSeconds``,
  ``timeoutSeconds``, probe timeouts.
* :mod:`~jobflow_core.flows.children`: a child JobFlow as its flow's run: its manifest, phase, result and cost, and
  what a stop, suspend or rerun of its parent asks of it.
* :mod:`~jobflow_core.flows.conditions`: the value of a flow's ``when`` condition (CEL).
* :mod:`~jobflow_core.flows.vcjobs`: the vcjob manifest of a flow, and the command that aborts a vcjob.
* :mod:`~jobflow_core.flows.patching`: how a flow's ``patch.jobSpec`` merges into its JobTemplate's spec.
* :mod:`~jobflow_core.flows.outputs`: which targets' results a patch reads, where they may go, how big they may be.
* :mod:`~jobflow_core.flows.memo`: a memoized flow's cache key, whether a recent Completed run is reused, what is
  stored.
* :mod:`~jobflow_core.flows.gates`: an approval gate's answer: whose counts, which came first, when it times out.

Between flows (:mod:`~jobflow_core.dag`):

* :mod:`~jobflow_core.dag`: flows between flows: the graph, dependencies and probes, skips, outcomes, reruns.
* :mod:`~jobflow_core.dag.reruns`: which flows a rerun request runs again, and from which attempt.
* :mod:`~jobflow_core.dag.graph`: a JobFlow's flows as a DAG: order, edges and levels.
* :mod:`~jobflow_core.dag.dependencies`: whether a flow's targets let it start now, and what it waits for.
* :mod:`~jobflow_core.dag.probes`: whether ``dependsOn.probe`` passes, and which network checks the shell makes for
  it.
* :mod:`~jobflow_core.dag.skips`: why a flow is Skipped, from one table.
* :mod:`~jobflow_core.dag.awaits`: another JobFlow a JobFlow waits for: what it binds to, and how it ended.
* :mod:`~jobflow_core.dag.outcomes`: each flow's outcome, which failures are handled, when a JobFlow that fails fast
  stops.

Runs that start themselves (:mod:`~jobflow_core.schedules`):

* :mod:`~jobflow_core.schedules`: runs that start themselves (JobFlowTemplates): cron, their runs, when one fires,
  triggers.
* :mod:`~jobflow_core.schedules.cron`: which minutes a cron schedule names in its time zone, and when it next fires.
* :mod:`~jobflow_core.schedules.runs`: a run's name by what started it, its JobFlow, and what is read back from one.
* :mod:`~jobflow_core.schedules.firing`: whether a scheduled run starts, waits, is missed or replaces one, from one
  table.
* :mod:`~jobflow_core.schedules.triggers`: which CloudEvents start a run, and with which parameters (CEL).

May it be stored (:mod:`~jobflow_core.validation`):

* :mod:`~jobflow_core.validation`: may this object be stored: the three kinds, update warnings, the webhook's
  answer.
* :mod:`~jobflow_core.validation.fields`: which fields of an object its schema does not have, by path, with the
  nearest known name.
* :mod:`~jobflow_core.validation.jobflows`: whether a JobFlow spec is a DAG of well-named flows with well-formed
  probes.
* :mod:`~jobflow_core.validation.jobtemplates`: whether a JobTemplate would make a vcjob Volcano accepts.
* :mod:`~jobflow_core.validation.approvals`: who may answer an approval gate, checked when the answer is written.
* :mod:`~jobflow_core.validation.children`: what would be wrong with a child JobFlow, checked before it is created.
* :mod:`~jobflow_core.validation.awaits`: what would be wrong with a JobFlow's dependencies on other JobFlows, and
  cycles of JobFlows (or JobFlowTemplates' runs) waiting for each other.
* :mod:`~jobflow_core.validation.nesting`: what is wrong down a tree of child JobFlows: template cycles, depth,
  parameters, names.
* :mod:`~jobflow_core.validation.review`: the validating webhook's answer, an AdmissionReview in and out.
* :mod:`~jobflow_core.validation.update_warnings`: which spec updates warn, because vcjobs created earlier will not
  see them.
* :mod:`~jobflow_core.validation.jobflowtemplates`: whether a JobFlowTemplate's schedule, triggers and run are
  valid.

What can be told (:mod:`~jobflow_core.insight`):

* :mod:`~jobflow_core.insight`: what can be told beyond what must be done: forecasts, cost, a JobTemplate's
  statistics.
* :mod:`~jobflow_core.insight.eta`: when each waiting flow is expected to start, the expected completion and the
  critical path.
* :mod:`~jobflow_core.insight.cost`: what a run cost: its gang's requests x the seconds it ran, per vcjob, JobFlow
  and JobTemplate.
* :mod:`~jobflow_core.insight.template_stats`: a JobTemplate's statistics (runs, failure rate, durations), each run
  counted once.
* :mod:`~jobflow_core.insight.logs`: which containers' logs a selection of a JobFlow means, in which order and under
  which prefix, and what is said of the flows that have none.
* :mod:`~jobflow_core.insight.log_lines`: where a cut log stream picks up again, so that no line is shown twice or
  skipped.

Sharing a queue (:mod:`~jobflow_core.queueing`):

* :mod:`~jobflow_core.queueing`: JobFlows sharing a Volcano queue: the line, and the status a place in line shows.
* :mod:`~jobflow_core.queueing.line`: when a JobFlow may start on a Volcano queue it shares: started JobFlows and
  older ones first, what can never run never started.
* :mod:`~jobflow_core.queueing.status`: ``status.queue`` (Waiting, Admitted), and the vcjobs a queue can no longer
  hold.
* :mod:`~jobflow_core.queueing.wake`: who a change of the line wakes: the JobFlows waiting for the room it left.
* :mod:`~jobflow_core.queueing.deadline`: whether a JobFlow will succeed by its deadline (on time, at risk, missed,
  with hysteresis), and how an at-risk one is steered ahead.
* :mod:`~jobflow_core.queueing.outlook`: when a JobFlow waiting in line is expected to start: the line played forward.
* :mod:`~jobflow_core.queueing.whatif`: what a queue would make of a JobFlow not created yet: its place,
  start, end, cost and deadline.

Which JobFlow an event is about (:mod:`~jobflow_core.routing`):

* :mod:`~jobflow_core.routing`: which JobFlows an event concerns, which changes matter, what a snapshot holds.
* :mod:`~jobflow_core.routing.relevance`: which changes to an object can matter to the engine, which may wait a
  moment, which JobFlow a vcjob's change is about.
* :mod:`~jobflow_core.routing.concerns`: which JobFlows an incoming event concerns, and what a resync looks at.
* :mod:`~jobflow_core.routing.snapshots`: what an event's snapshot of a JobFlow holds, how big it may be, how it is
  signed.

The plan (:mod:`~jobflow_core.planning`):

* :mod:`~jobflow_core.planning`: observation in, plan out: the start table, failures, the status, the planner.
* :mod:`~jobflow_core.planning.observation`: each flow next to its vcjob and its previous record, gathered once per
  attempt.
* :mod:`~jobflow_core.planning.needs`: what the shell must read before it plans, stage by stage.
* :mod:`~jobflow_core.planning.starts`: whether each flow starts, waits, is held or is blocked, from one table.
* :mod:`~jobflow_core.planning.failures`: why a JobFlow failed (``state.reason`` and its advice), from one table.
* :mod:`~jobflow_core.planning.status`: the status, from one observation.
* :mod:`~jobflow_core.planning.template_status`: a JobTemplate's ``jobDependsOnList``.
* :mod:`~jobflow_core.planning.notifications`: which transitions become CloudEvents out, kept in the status until
  delivered.
* :mod:`~jobflow_core.planning.planner`: all of the above as a list of actions for the shell: ``plan``,
  ``plan_observation``.
"""

from jobflow_core.dag.probes import CheckKind, CheckResult, NetworkCheck
from jobflow_core.planning.observation import Observation, observe
from jobflow_core.planning.planner import (
    Abort,
    Create,
    Delete,
    Memoize,
    PatchChild,
    Plan,
    Relabel,
    UpdateTemplate,
    Release,
    WriteStatus,
    plan,
    plan_observation,
)
from jobflow_core.planning.needs import Needs, needs
from jobflow_core.vocabulary.kube_events import Event, EventType, Reason

__all__ = ["Abort", "CheckKind", "CheckResult", "Create", "Delete", "Event", "EventType", "Memoize", "Needs",
           "NetworkCheck", "Observation", "PatchChild", "Plan", "Reason", "Relabel", "Release", "UpdateTemplate", "WriteStatus", "needs",
           "observe", "plan", "plan_observation"]
