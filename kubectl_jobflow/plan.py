"""``plan -f FILE``: what the engine would do with a JobFlow if it were created now; nothing is created.

The answer is the engine's own: :func:`jobflow_core.plan`, with

* the JobTemplates of the file, and those it still needs from the JobFlow's namespace on the cluster;
* the vcjobs already on the cluster with the names the flows would get (a JobFlow that does not exist yet owns
  none of them, so each is a name conflict, as it would be);
* no HTTP or TCP probe results (nothing is probed), so a flow with such a probe is shown waiting for it.

``--local`` asks nothing of the cluster: the file's JobTemplates are all there is, and no vcjobs exist.

For each JobFlow of the file: the phase it would have, the flows whose vcjobs would be created now (with the
JobTemplate each comes from), the flows that would wait and on what, and what blocks it (an invalid spec, a
missing JobTemplate, a name conflict). The exit status is 1 when something blocks a JobFlow. ``-o yaml|json``
adds the vcjob manifests that would be created.
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
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB
from jobflow_core.vocabulary.naming import job_name, template_name
from kubectl_jobflow import documents, exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import formatted, utc_now

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context


INVALID = "InvalidSpec"
RERUN_ADVICE = re.compile(r" \(then rerun it: .*\)$")
"""The core's advice to rerun a failed JobFlow, which a JobFlow that exists only in a file cannot follow."""


def run(ctx: Context) -> int:
    docs = documents.read(ctx.args.file)
    flows = [doc for doc in docs if doc.kind == JOBFLOW.kind]
    if not flows:
        raise CommandError(f"no JobFlow in {', '.join(ctx.args.file)}: plan needs one (kind: JobFlow)",
                           code=exits.USAGE)
    templates = [doc for doc in docs if doc.kind == JOBTEMPLATE.kind]
    try:
        plans = [_plan_one(ctx, doc, templates) for doc in flows]
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
    return exits.FAILED if any(item["reason"] for item in plans) else exits.OK


def _parse(model, body: dict[str, Any], source: str):
    try:
        return model.model_validate(body)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise CommandError(f"{source} cannot be read as a {model.__name__}: {problems} (fix these fields)",
                           code=exits.USAGE) from error


def _plan_one(ctx: Context, doc: documents.Document, template_docs: list[documents.Document]) -> dict[str, Any]:
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
    result = plan_observation(observation, templates=templates)
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
        lines.append(f"  blocked, {item['reason']}: {message}")
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
    if item["expectedCompletion"]:
        lines.append(f"  expected to end {expected(parse_time(item['expectedCompletion']), now=now)}, critical "
                     f"path {' -> '.join(item['criticalPath'])} (from earlier runs of its JobTemplates)")
    if item["skip"]:
        lines.append("  skipped (will never run):")
        lines += [f"    {entry['flow']}   {entry['message']}" for entry in item["skip"]]
    return "\n".join(lines) + "\n"
