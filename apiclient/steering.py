"""The writes a person asks for, as ``kubectl jobflow`` and the dashboard both make them: suspend, resume, retry.

Each is one merge patch on the object (what ``kubectl patch --type=merge`` does), after a read that says whether
it is needed or possible; the engine, stateless, acts on the object as it then stands. Each returns what was done,
in a sentence, or raises :class:`Refused` saying why it cannot be done and what to do.

* suspend / resume a JobFlow: ``spec.suspend``; it starts nothing new while suspended (what runs keeps running);
* suspend / resume a JobFlowTemplate: its ``spec.suspend`` (as ``argo cron suspend``/``resume``); on resume, what
  the schedule does next (:func:`jobflow_core.schedules.firing.resume_outlook`);
* retry a Failed JobFlow: the annotation ``flow.volcano.sh/rerun`` set to a new id (and
  ``flow.volcano.sh/rerun-flows``), which the engine handles once (:mod:`jobflow_core.dag.reruns`).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from apiclient.cluster import Cluster
from jobflow_core.models import JobFlowTemplate
from jobflow_core.schedules.firing import resume_outlook
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, RERUN, RERUN_FLOWS


class Refused(RuntimeError):
    """The write cannot be made as asked (no such object, nothing to retry); the message says what to do."""


def set_suspend(cluster: Cluster, namespace: str, name: str, value: bool) -> str:
    """Suspend (``value``) or resume a JobFlow; what was done, in a sentence."""
    current = cluster.find(JOBFLOW, namespace, name)
    if current is None:
        raise Refused(f'JobFlow "{namespace}/{name}" not found: check the name and the namespace (-n)')
    if bool((current.get("spec") or {}).get("suspend")) == value:
        return f"JobFlow {namespace}/{name} is already {'suspended' if value else 'not suspended'}"
    cluster.merge_patch(JOBFLOW, namespace, name, {"spec": {"suspend": value}})
    return f"{'Suspended' if value else 'Resumed'} JobFlow: {namespace}/{name}"


def set_template_suspend(cluster: Cluster, namespace: str, name: str, value: bool, *, now: datetime) -> str:
    """Suspend (``value``) or resume a JobFlowTemplate's schedule; what was done (and, on resume, what the schedule
    does next as of ``now``), in a sentence."""
    current = cluster.find(JOBFLOWTEMPLATE, namespace, name)
    if current is None:
        raise Refused(f'JobFlowTemplate "{namespace}/{name}" not found: check the name and the namespace (-n); '
                      "kubectl get jft lists them")
    if bool((current.get("spec") or {}).get("suspend")) == value:
        return f"JobFlowTemplate {namespace}/{name} is already {'suspended' if value else 'not suspended'}"
    updated = cluster.merge_patch(JOBFLOWTEMPLATE, namespace, name, {"spec": {"suspend": value}})
    if value:
        return (f"Suspended JobFlowTemplate: {namespace}/{name}: no scheduled run starts until it is resumed (its "
                "active runs go on; runs by event or by hand still start)")
    return f"Resumed JobFlowTemplate: {namespace}/{name}: " + resume_outlook(JobFlowTemplate.model_validate(updated),
                                                                              now=now)


def request_retry(cluster: Cluster, namespace: str, name: str, flows: list[str]) -> str:
    """Ask the engine to rerun a Failed JobFlow's failed flows (or ``flows``); what was done, in a sentence."""
    current = cluster.find(JOBFLOW, namespace, name)
    if current is None:
        raise Refused(f'JobFlow "{namespace}/{name}" not found: check the name and the namespace (-n)')
    phase = ((current.get("status") or {}).get("state") or {}).get("phase")
    if phase != "Failed":
        raise Refused(f"JobFlow {namespace}/{name} is {phase or 'not planned yet'}: only a Failed JobFlow "
                      f"can be retried (see kubectl jobflow status {name})")
    flows = list(dict.fromkeys(flows))
    known = {flow.get("name") for flow in (current.get("spec") or {}).get("flows") or ()}
    unknown = [flow for flow in flows if flow not in known]
    if unknown:
        raise Refused(f"JobFlow {namespace}/{name} has no flow {', '.join(unknown)}: "
                      f"its flows are {', '.join(sorted(known))}")
    request = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    cluster.merge_patch(JOBFLOW, namespace, name, {"metadata": {"annotations": {
        RERUN: request, RERUN_FLOWS: ",".join(flows) or None}}})
    which = ", ".join(flows) if flows else "its failed flows"
    return (f"Retrying JobFlow: {namespace}/{name}: {which} and what follows them run again (request {request}; "
            f"follow it with kubectl jobflow status {name} --watch)")
