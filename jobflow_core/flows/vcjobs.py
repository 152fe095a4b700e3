"""The vcjob manifest of a flow, built from its JobTemplate exactly as upstream builds it.

For flow ``b`` of JobFlow ``test`` in namespace ``default`` the manifest is::

    apiVersion: batch.volcano.sh/v1alpha1
    kind: Job
    metadata:
      name: test-b
      namespace: default
      labels:      {volcano.sh/createdByJobTemplate: default.b, volcano.sh/createdByJobFlow: default.test}
      annotations: {the same two keys and values}
      ownerReferences: [{apiVersion: flow.volcano.sh/v1alpha1, kind: JobFlow, name: test, uid: <uid>,
                         controller: true, blockOwnerDeletion: true}]
      finalizers: [flow.volcano.sh/keep-record]   (only with spec.ttlSecondsAfterFinished, see below)
    spec: <the JobTemplate's spec, with the flow's patch.jobSpec merged in (jobflow_core.flows.patching), its
           {{params.NAME}} placeholders replaced by the JobFlow's parameters (jobflow_core.flows.parameters) and its
           {{targets.NAME.result}} ones by its targets' results (jobflow_core.flows.outputs)>

A flow with ``retry`` (and any attempt after the first, a rerun's too) also gets the label and annotation
``flow.volcano.sh/attempt: "<n>"``, on the vcjob and on
every task's pod template (so a container can read which attempt it is, through the downward API), and its
attempt ``n`` (from the second on) is named ``<jobflow>-<flow>-r<n-1>`` (:mod:`jobflow_core.flows.retries`). An item
of a ``forEach`` flow gets ``flow.volcano.sh/item-index: "<i>"`` the same way, and its name
(:mod:`jobflow_core.flows.items`); an iteration of a ``repeat`` flow ``flow.volcano.sh/iteration: "<i>"``
(:mod:`jobflow_core.flows.loops`).

The finalizer is ours (upstream has none), and only on a vcjob with ``ttlSecondsAfterFinished``, which Volcano
deletes by itself once it ends: it holds that vcjob until the handler has recorded its final phase in the
JobFlow's status, and is released right then (``Plan.releases``), ended or deleted. Without it, a vcjob that
completed and vanished before any handler looked would be taken for one that never finished, and run again
(upstream's bug G.3(d)). A vcjob without a TTL is only deleted by a person, and its end is recorded within
milliseconds while the engine runs; it carries no finalizer, so deleting a namespace never waits for an engine
that is not running (``kubectl jobflow release`` lets go of the rest before an uninstall).

The spec is a fresh deep copy of the template's: nothing done to the manifest can reach the template, and every
template field, including ones we do not model, reaches the vcjob.
"""

import copy
import json
from collections.abc import Mapping
from typing import Any

from jobflow_core.flows.parameters import Item, substitute, values
from jobflow_core.flows.patching import merge_job_spec
from jobflow_core.models import Flow, JobFlow, JobTemplate, VcJob
from jobflow_core.vocabulary import resources
from jobflow_core.vocabulary.api import ATTEMPT, COMMAND, GANG_REQUESTS, ITEM_INDEX, ITERATION, RECORD_FINALIZER, VCJOB
from jobflow_core.vocabulary.naming import attempt_job_name, created_by, owner_reference


def build_job(jobflow: JobFlow, *, flow: str, template: JobTemplate, attempt: int = 1,
              item: Item | None = None, targets: Mapping[str, str] | None = None,
              priority_class: str | None = None) -> dict[str, Any]:
    """The vcjob manifest for attempt ``attempt`` of ``flow`` (of its ``item``) of ``jobflow``, ready to POST;
    ``targets``: the values of its patch's ``{{targets...}}`` placeholders (:mod:`jobflow_core.flows.outputs`);
    ``priority_class`` is set as its ``priorityClassName`` unless the template names one."""
    spec_flow = _flow_named(jobflow, flow)
    keys = created_by(jobflow, template.name)
    spec = job_spec(template, flow=spec_flow, params=values(jobflow), item=item, targets=targets)
    if priority_class is not None and not spec.get("priorityClassName"):
        spec["priorityClassName"] = priority_class
    pod_keys = {}
    if attempt > 1 or (spec_flow is not None and spec_flow.retry is not None):
        pod_keys[ATTEMPT] = str(attempt)
    if item is not None:
        pod_keys[ITERATION if spec_flow is not None and spec_flow.repeat is not None else ITEM_INDEX] = str(item.index)
    keys.update(pod_keys)
    for task in spec.get("tasks") or () if pod_keys else ():
        pod = task.setdefault("template", {}).setdefault("metadata", {})
        pod.setdefault("annotations", {}).update(pod_keys)
    return {
        "apiVersion": VCJOB.api_version,
        "kind": VCJOB.kind,
        "metadata": {
            "name": attempt_job_name(jobflow=jobflow.name, flow=flow, attempt=attempt,
                                     index=item.index if item else None),
            "namespace": jobflow.namespace,
            "labels": dict(keys),
            "annotations": {**keys, **gang_annotation(spec)},
            "ownerReferences": [owner_reference(jobflow)],
            **({"finalizers": [RECORD_FINALIZER]} if spec.get("ttlSecondsAfterFinished") is not None else {}),
        },
        "spec": spec,
    }


def gang_annotation(spec: dict[str, Any]) -> dict[str, str]:
    """The :data:`~jobflow_core.vocabulary.api.GANG_REQUESTS` annotation of a vcjob spec (none for a spec that requests
    nothing, or whose quantities do not parse: the template's own check reports those)."""
    try:
        gang = resources.gang_requests(spec)
    except (resources.QuantityError, TypeError, ValueError):
        return {}
    return {GANG_REQUESTS: json.dumps(resources.to_wire(gang), separators=(",", ":"))} if gang else {}


def gang_of(job: VcJob) -> resources.Resources:
    """What a vcjob's gang requests, from its annotation (none: a vcjob created before the engine wrote it)."""
    text = (job.metadata.annotations or {}).get(GANG_REQUESTS)
    try:
        return resources.of_wire(json.loads(text)) if text else {}
    except (ValueError, AttributeError, resources.QuantityError):
        return {}


def abort_command(job: VcJob, *, reason: str, message: str) -> dict[str, Any]:
    """The Volcano Command that aborts ``job`` (its pods are deleted, it ends ``Aborted``), as ``vcctl job suspend``
    sends it. Its name is fixed per vcjob, so asking twice creates it once."""
    return {
        "apiVersion": COMMAND.api_version,
        "kind": COMMAND.kind,
        "metadata": {"name": f"{job.name}-abort", "namespace": job.namespace},
        "action": "AbortJob",
        "target": {"apiVersion": VCJOB.api_version, "kind": VCJOB.kind, "name": job.name, "uid": job.metadata.uid,
                   "controller": True},
        "reason": reason,
        "message": message[:1024],
    }


def job_spec(template: JobTemplate, *, flow: Flow | None = None, params: Mapping[str, str] | None = None,
             item: Item | None = None, targets: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The vcjob spec: the template's spec with the flow's ``patch.jobSpec`` merged in (none: verbatim), its
    placeholders replaced first (:mod:`jobflow_core.flows.parameters`)."""
    patch = flow.patch.job_spec if flow is not None and flow.patch is not None else None
    base = copy.deepcopy(template.spec.to_wire())
    if patch is None:
        return base
    return merge_job_spec(base, substitute(patch.to_wire(), params=params or {}, item=item, targets=targets))


def _flow_named(jobflow: JobFlow, name: str) -> Flow | None:
    return next((flow for flow in jobflow.spec.flows or () if flow.name == name), None)
