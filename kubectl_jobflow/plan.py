"""``plan -f FILE``: what the engine would do with a JobFlow if it were created now; nothing is created.

The answer is the engine's own: :func:`jobflow_core.plan`, with

* the JobTemplates of the file, and those it still needs from the JobFlow's namespace on the cluster;
* the vcjobs already on the cluster with the names the flows would get (a JobFlow that does not exist yet owns
  none of them, so each is a name conflict, as it would be);
* no HTTP or TCP probe results (nothing is probed), so a flow with such a probe is shown waiting for it.

``--local`` asks nothing of the cluster: the file's JobTemplates are all there is, and no vcjobs exist.

``--queue`` adds what its Volcano queue would make of each JobFlow, were it alone created now
(:mod:`jobflow_core.queueing.whatif`): its place in line, whether its widest stage fits, its expected start, end
and cost, and its ``spec.deadline``. It reads, and only reads, what the engine reads (:func:`queue_view`): the
Queue, the nodes when the Queue has no ``capability``, every JobFlow in line and the engine's PriorityClasses; and
the statistics of the file's JobTemplates from those of the same name on the cluster (a JobTemplate in a file has
never run). The plan itself is then the one the engine would make with that queue: a JobFlow that must wait for
room starts nothing now, an at-risk one goes ahead.

For each JobFlow of the file: the phase it would have, the flows whose vcjobs would be created now (with the
JobTemplate each comes from), the flows that would wait and on what, and what blocks it (an invalid spec, a
missing JobTemplate, a name conflict). The exit status is 1 when something blocks a JobFlow (waiting for room in
its queue does not). ``-o yaml|json`` adds the vcjob manifests that would be created.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from apiclient.cluster import KubeError
from display.times import expected, parse_time
from jobflow_core import needs, observe, plan_observation
from jobflow_core.models import JobFlow, JobTemplate, VcJob
from jobflow_core.queueing.line import (AT_RISK_PRIORITY_CLASS, PRIORITY_CLASS, QueueView, capability_of, in_line,
                                        nodes_capacity)
from jobflow_core.queueing.whatif import WhatIf, queue_name, what_if
from jobflow_core.vocabulary import resources
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, QUEUE, VCJOB, ApiType
from jobflow_core.vocabulary.kube_events import Reason
from jobflow_core.vocabulary.naming import job_name, template_name
from kubectl_jobflow import documents, exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import formatted, utc_now

if TYPE_CHECKING:
    from apiclient.cluster import Cluster
    from kubectl_jobflow.context import Context


INVALID = "InvalidSpec"
RERUN_ADVICE = re.compile(r" \(then rerun it: .*\)$")
"""The core's advice to rerun a failed JobFlow, which a JobFlow that exists only in a file cannot follow."""
NODE = ApiType("", "v1", "Node", "nodes")
PRIORITYCLASS = ApiType("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses")
Views = dict[str, tuple[QueueView, tuple[str, ...]]]
"""The queues read for ``--queue`` by name, with what could not be read: each read once per command."""


def run(ctx: Context) -> int:
    docs = documents.read(ctx.args.file)
    flows = [doc for doc in docs if doc.kind == JOBFLOW.kind]
    if not flows:
        raise CommandError(f"no JobFlow in {', '.join(ctx.args.file)}: plan needs one (kind: JobFlow)",
                           code=exits.USAGE)
    if ctx.args.queue and ctx.args.local:
        raise CommandError("--queue reads the queue, its line and the JobTemplates' statistics from the cluster, "
                           "which --local does not ask: drop one of them", code=exits.USAGE)
    templates = [doc for doc in docs if doc.kind == JOBTEMPLATE.kind]
    views: Views = {}
    try:
        plans = [_plan_one(ctx, doc, templates, views) for doc in flows]
    except KubeError as error:
        if exits.code_of(error) != exits.UNREACHABLE:
            raise
        raise KubeError(f"{str(error).rstrip('.')}. To plan without the cluster (only the file's JobTemplates, no "
                        f"vcjobs): kubectl jobflow plan --local -f {' -f '.join(ctx.args.file)}",
                        status=error.status) from error
    if ctx.args.output:
        ctx.write(formatted(plans if len(plans) > 1 else plans[0], ctx.args.output))
    else:
        ctx.write("\n".join(_text(item) for item in plans))
    if any(item["reason"] == INVALID for item in plans):
        return exits.USAGE
    return exits.FAILED if any(_blocked(item) for item in plans) else exits.OK


def _blocked(item: dict[str, Any]) -> bool:
    """Something keeps it from going on; waiting for room in its queue does not (it goes on as room frees)."""
    return bool(item["reason"]) and item["reason"] != Reason.WAITING_FOR_QUEUE


def _parse(model, body: dict[str, Any], source: str):
    try:
        return model.model_validate(body)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise CommandError(f"{source} cannot be read as a {model.__name__}: {problems} (fix these fields)",
                           code=exits.USAGE) from error


def _plan_one(ctx: Context, doc: documents.Document, template_docs: list[documents.Document],
              views: Views) -> dict[str, Any]:
    jobflow: JobFlow = _parse(JobFlow, doc.with_namespace(ctx.namespace), doc.source)
    now = utc_now()
    if jobflow.metadata.creation_timestamp is None:  # not created yet: as if created now, for the forecast
        jobflow = jobflow.model_copy(update={"metadata": jobflow.metadata.model_copy(
            update={"creation_timestamp": now.replace(microsecond=0)})})
    namespace = jobflow.namespace
    templates: dict[str, JobTemplate] = {}
    origin: dict[str, str] = {}
    for template_doc in template_docs:
        if (template_doc.namespace or namespace) == namespace and template_doc.name not in templates:
            templates[template_doc.name] = _parse(JobTemplate, template_doc.with_namespace(namespace),
                                                  template_doc.source)
            origin[template_doc.name] = template_doc.source
    jobs: list[VcJob] = []
    exists = False
    if not ctx.args.local:
        names = {job_name(jobflow=jobflow.name, flow=flow.name) for flow in jobflow.spec.flows or ()}
        jobs = [VcJob.model_validate(job) for job in ctx.cluster.list(VCJOB, namespace)["items"]
                if job["metadata"]["name"] in names]
        exists = ctx.cluster.find(JOBFLOW, namespace, jobflow.name) is not None
    observation = observe(jobflow, jobs=jobs, now=now)
    if not ctx.args.local:
        for name in needs(observation).templates:
            if name not in templates:
                found = ctx.cluster.find(JOBTEMPLATE, namespace, name)
                if found is not None:
                    templates[name] = JobTemplate.model_validate(found)
                    origin[name] = "the cluster"
    view, notes = None, ()
    if ctx.args.queue:
        _with_statistics(ctx.cluster, templates, origin, namespace=namespace)
        queue = queue_name(observation, templates)
        if queue not in views:
            views[queue] = queue_view(ctx.cluster, queue, namespace=namespace)
        view, notes = views[queue]
    result = plan_observation(observation, templates=templates, queues={view.name: view} if view else None)
    state = result.status.state
    runs = {flow.name: template_name(flow) for flow in jobflow.spec.flows or ()}
    starts = [{"flow": create.flow, "job": create.job_name, "template": f"{namespace}/{runs[create.flow]}",
               "templateFrom": origin.get(runs[create.flow])} for create in result.creates]
    return {
        "namespace": namespace,
        "name": jobflow.name,
        "source": doc.source,
        "existsOnCluster": exists,
        "phase": state.phase.value if state and state.phase else None,
        "reason": state.reason if state else None,
        "message": state.message if state else None,
        "start": starts,
        "wait": [{"flow": entry.name, "job": entry.job_name, "waitingFor": entry.waiting_for or [],
                  "message": entry.message, "expectedStart": _time(entry.expected_start)}
                 for entry in result.status.waiting_flows or ()],
        "expectedCompletion": _time(result.status.expected_completion),
        "criticalPath": result.status.critical_path or [],
        "now": _time(now),
        "skip": [{"flow": entry.name, "job": entry.job_name, "message": entry.message}
                 for entry in result.status.skipped_flows or ()],
        "jobs": [create.manifest for create in result.creates],
        **({"queue": _queue_data(what_if(observation, templates=templates, view=view, now=now), notes)}
           if view else {}),
    }


def queue_view(cluster: Cluster, name: str, *, namespace: str) -> tuple[QueueView, tuple[str, ...]]:
    """Volcano queue ``name`` as the engine reads it (``handlers/queues.py``), from GETs and LISTs only, and what
    could not be read. Its capacity: the Queue's ``capability``, else every ready, schedulable node's allocatable;
    its line: every JobFlow, or only those of ``namespace`` when listing every namespace is refused; and whether
    the engine's PriorityClasses are installed (an at-risk JobFlow's first vcjobs get one)."""
    capacity, source = _capacity(cluster, name)
    try:
        listed, notes = cluster.list(JOBFLOW, None)["items"], ()
    except KubeError as error:
        if error.status != 403:
            raise
        listed = cluster.list(JOBFLOW, namespace)["items"]
        notes = (f"only the JobFlows of namespace {namespace} are counted in the line: listing every namespace's "
                 f"was refused ({error}); JobFlows of other namespaces may stand ahead of it too",)
    started, at_risk = (cls if _installed(cluster, cls) else None for cls in (PRIORITY_CLASS, AT_RISK_PRIORITY_CLASS))
    view = QueueView(name=name, capacity=capacity, capacity_source=source, jobflows=tuple(map(in_line, listed)),
                     priority_class=started, at_risk_priority_class=at_risk)
    return view, notes


def _installed(cluster: Cluster, priority_class: str) -> bool:
    try:
        return cluster.find(PRIORITYCLASS, None, priority_class) is not None  # cluster-scoped
    except KubeError as error:
        if error.status != 403:  # this user may not read PriorityClasses: as the engine, count it missing
            raise
        return False


def _capacity(cluster: Cluster, name: str) -> tuple[resources.Resources | None, str]:
    try:
        queue = cluster.find(QUEUE, None, name)  # cluster-scoped: no namespace
    except KubeError as error:
        if error.status not in (403, 404):
            raise
        queue = None
    capability = capability_of(queue)
    if capability:
        return capability, "capability"
    try:
        nodes = cluster.list(NODE, None)["items"]
    except KubeError as error:
        if error.status != 403:
            raise
        return None, f"Volcano queue {name} has no capability and the nodes cannot be read ({error})"
    capacity = nodes_capacity(nodes)
    if capacity is None:
        return None, f"Volcano queue {name} has no capability and no node is ready"
    return capacity, "nodes' allocatable"


def _with_statistics(cluster: Cluster, templates: dict[str, JobTemplate], origin: dict[str, str], *,
                     namespace: str) -> None:
    """The file's JobTemplates with the statistics (``status``) of the cluster's of the same name: how long their
    runs took is what the expected times and cost are made of, and a JobTemplate in a file never ran."""
    for name, template in list(templates.items()):
        if origin.get(name) != "the cluster" and template.status is None:
            found = cluster.find(JOBTEMPLATE, namespace, name)
            if found and found.get("status"):
                templates[name] = template.model_copy(update={"status": JobTemplate.model_validate(found).status})


def _queue_data(answer: WhatIf, notes: tuple[str, ...]) -> dict[str, Any]:
    """``-o json|yaml``'s ``queue``: the what-if as data, with its lines as text shows them."""
    view, widest, deadline = answer.view, answer.widest, answer.deadline
    return {
        "name": view.name,
        "capacity": resources.to_wire(view.capacity) if view.capacity is not None else None,
        "capacitySource": view.capacity_source,
        "needs": resources.to_wire(answer.needs),
        "position": answer.position,
        "neverRuns": list(answer.never_runs),
        "widestStage": {"flows": list(widest.flows), "needs": resources.to_wire(widest.needs),
                        "exceeds": resources.exceeding(widest.needs, view.capacity or {})} if widest else None,
        "expectedStart": _time(answer.start),
        "expectedCompletion": _time(answer.end),
        "criticalPath": list(answer.critical_path),
        "unknown": answer.unknown,
        "expectedCost": answer.cost.to_wire() if answer.cost else None,
        "costUnknown": answer.cost_unknown,
        "deadline": {"at": _time(deadline.at), "state": deadline.state.value, "message": deadline.why,
                     "goesAheadOf": deadline.overtakes, "steeredPosition": deadline.steered_position,
                     "steeredCompletion": _time(deadline.steered_end)} if deadline else None,
        "notes": list(notes),
        "lines": answer.lines(),
    }


def _time(value: datetime | None) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value else None


def _text(item: dict[str, Any]) -> str:
    lines = [f"JobFlow {item['namespace']}/{item['name']} ({item['source']}): would be {item['phase']}"]
    if item["existsOnCluster"]:
        lines.append("  note: it already exists on the cluster, so creating it would fail; "
                     f"kubectl jobflow status {item['name']} shows how it runs")
    if item["reason"]:
        message = item["message"] or ""
        if not item["existsOnCluster"]:  # nothing to rerun yet: the file is what to fix
            message = RERUN_ADVICE.sub(" (fix the file and plan again)", message)
        lines.append(f"  {'blocked' if _blocked(item) else 'waiting'}, {item['reason']}: {message}")
    lines.append("  start now:" if item["start"] else "  start now: nothing")
    for start in item["start"]:
        lines.append(f"    {start['flow']}   vcjob {start['job']} from JobTemplate {start['template']}"
                     + (f" ({start['templateFrom']})" if start["templateFrom"] else ""))
    now = parse_time(item["now"])
    if item["wait"]:
        lines.append("  wait:")
        lines += [f"    {entry['flow']}   {entry['message']}"
                  + (f" (expected to start {expected(parse_time(entry['expectedStart']), now=now)})"
                     if entry["expectedStart"] else "") for entry in item["wait"]]
    if item["expectedCompletion"] and "queue" not in item:  # --queue tells the end from its place in line
        lines.append(f"  expected to end {expected(parse_time(item['expectedCompletion']), now=now)}, critical "
                     f"path {' -> '.join(item['criticalPath'])} (from earlier runs of its JobTemplates)")
    if item["skip"]:
        lines.append("  skipped (will never run):")
        lines += [f"    {entry['flow']}   {entry['message']}" for entry in item["skip"]]
    if "queue" in item:
        lines += [f"  {line}" for line in item["queue"]["lines"]]
        lines += [f"  note: {note}" for note in item["queue"]["notes"]]
    return "\n".join(lines) + "\n"
