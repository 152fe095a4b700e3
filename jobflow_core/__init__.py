"""The pure core of a serverless JobFlow engine for Volcano: decisions only, no I/O.

A JobFlow (``flow.volcano.sh/v1alpha1``) is a DAG of flows; each flow runs one Volcano job (vcjob) made from
the JobTemplate of the same name, once the vcjobs of the flows it depends on are Completed. This package
decides *what should happen*; the shell (``handlers/``) reads the cluster, plans (:func:`observe`, then
:func:`plan_observation`), and carries out the plan's actions in order. Nothing here imports a web framework or a Kubernetes client, reads a clock, or draws random
numbers, so every decision can be tested from YAML alone and repeated safely.

Where each fact is decided:

* :mod:`~jobflow_core.models`: the API objects, field for field, with upstream's JSON names.
* :mod:`~jobflow_core.naming`: vcjob names, ``createdBy`` labels, owner references, ownership.
* :mod:`~jobflow_core.validation`: whether a spec is a DAG of well-named flows with well-formed probes;
  :mod:`~jobflow_core.template_validation`: whether a JobTemplate would make a valid vcjob;
  :mod:`~jobflow_core.admission` and :mod:`~jobflow_core.update_warnings`: the webhooks' AdmissionReview core.
* :mod:`~jobflow_core.phase`: the JobFlow phase, from one table.
* :mod:`~jobflow_core.dependencies`: whether a flow may start; :mod:`~jobflow_core.probes`: ``dependsOn.probe``.
* :mod:`~jobflow_core.jobs`: the vcjob manifest of a flow; :mod:`~jobflow_core.patching`: ``patch.jobSpec``.
* :mod:`~jobflow_core.templates`: a JobTemplate's ``jobDependsOnList``.
* :mod:`~jobflow_core.graph` and :mod:`~jobflow_core.conversion`: DAG order and JobTemplate <-> vcjob, for the CLI.
* :mod:`~jobflow_core.observation`: each flow next to its vcjob and its previous record, gathered once.
* :mod:`~jobflow_core.decisions`: whether each flow starts, waits or is blocked, from one table.
* :mod:`~jobflow_core.status`: the status, from one observation.
* :mod:`~jobflow_core.events`: the events and reason words.
* :mod:`~jobflow_core.planner`: all of the above, as a list of actions for the shell: :func:`plan`.
* :mod:`~jobflow_core.routing`: which JobFlows an incoming event concerns, and what a resync looks at.
* :mod:`~jobflow_core.api`: the API identity (group, version, kind, plural, label keys) every component uses.
"""

from jobflow_core.decisions import templates_needed
from jobflow_core.events import Event, EventType, Reason
from jobflow_core.observation import Observation, observe
from jobflow_core.planner import (
    Abort,
    Create,
    Delete,
    Plan,
    UpdateTemplate,
    Release,
    WriteStatus,
    plan,
    plan_observation,
)
from jobflow_core.probes import CheckKind, CheckResult, NetworkCheck

__all__ = ["Abort", "CheckKind", "CheckResult", "Create", "Delete", "Event", "EventType", "NetworkCheck", "Observation",
           "Plan", "Reason", "Release", "UpdateTemplate", "WriteStatus", "observe", "plan", "plan_observation",
           "templates_needed"]
