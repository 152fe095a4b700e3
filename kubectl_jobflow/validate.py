"""``validate -f FILE``: the validating webhook's checks, with the webhook's messages, and no field left unchecked.

Each JobFlow, JobTemplate and JobFlowTemplate of the file is put to :func:`jobflow_core.validation.review.decide` as
the API server would send it on CREATE, so the verdict and the text are exactly what the webhook answers (the API
server prefixes it with ``admission webhook "..." denied the request:``), and every field is checked against the
kind's schema, with its path and the nearest known name (:mod:`jobflow_core.validation.fields`): where the API server
would refuse it under kubectl's strict field validation, and where it would keep it unseen (a JobFlowTemplate's
``jobFlow.spec``, a vcjob spec). A vcjob spec is checked against Volcano's vcjob CRD of the cluster when one can be
reached (within a second or two); offline it is not, and a line on stderr says so. The problems are listed one per
line, each with what to do. ``create`` runs the same checks before it sends anything (:func:`problems`).

A JobFlow (or a JobFlowTemplate's run) with child flows is also checked with the tree of child JobFlows below it, as
the webhook does (:mod:`jobflow_core.validation.nesting`): against the JobFlowTemplates of the file and of the
cluster (the file's win, as if it were applied first). Offline, or when the cluster's cannot be listed, only the
file's are used, and a line on stderr says so; a JobFlowTemplate found in neither is a warning under the object.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from apiclient.cluster import KubeError
from jobflow_core.models import JobFlowTemplate
from jobflow_core.validation.fields import VCJOB_CRD, unknown_fields, vcjob_spec_schema
from jobflow_core.validation.review import KINDS, FlowTemplates, decide, look_down
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE
from kubectl_jobflow import documents, exits
from kubectl_jobflow.output import formatted

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context

CHECKED = {JOBFLOW.kind: JOBFLOW, JOBTEMPLATE.kind: JOBTEMPLATE, JOBFLOWTEMPLATE.kind: JOBFLOWTEMPLATE}
SCHEMA_TIMEOUT = (1.0, 3.0)
"""Connect and read timeouts of the one request for Volcano's vcjob schema: an offline validate stays quick."""


@dataclass(frozen=True)
class Review:
    source: str
    kind: str
    namespace: str
    name: str
    valid: bool
    problems: list[str]
    """Each problem with what to do, as the webhook words it."""
    message: str | None
    """The webhook's whole denial message (the problems joined), None when allowed."""
    warnings: list[str] = field(default_factory=list)
    """The webhook's warnings: what it could not check (a JobFlowTemplate that does not exist yet). In ``-o`` output
    only when there are some, so that the output of objects without a tree stays as it was."""


def _row(review: Review) -> dict[str, Any]:
    row = asdict(review)
    if not row["warnings"]:
        del row["warnings"]
    return row


def vcjob_spec(ctx: Context) -> tuple[dict[str, Any] | None, str | None]:
    """Volcano's schema of a vcjob's spec from the cluster, or None and why it could not be read. Without any
    kubeconfig (and outside a pod) no cluster is asked, and the Kubernetes client is never imported."""
    if not any(path.exists() for path in ctx.target.kubeconfig_files()) and not os.environ.get(
            "KUBERNETES_SERVICE_HOST"):
        return None, "no kubeconfig (pass --kubeconfig, or set KUBECONFIG, to check them against a cluster's Volcano)"
    try:
        crd = ctx.cluster.crd(VCJOB_CRD, timeout=SCHEMA_TIMEOUT)
    except KubeError as error:
        return None, str(error)
    schema = vcjob_spec_schema(crd)
    return (schema, None) if schema is not None else (None, f"the cluster has no CRD {VCJOB_CRD} (no Volcano)")


def _flows(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The flows of a JobFlow, or of a JobFlowTemplate's run, as written."""
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    if body.get("kind") == JOBFLOWTEMPLATE.kind:
        run = spec.get("jobFlow") if isinstance(spec.get("jobFlow"), dict) else {}
        spec = run.get("spec") if isinstance(run.get("spec"), dict) else {}
    flows = spec.get("flows") if isinstance(spec.get("flows"), list) else []
    return [flow for flow in flows if isinstance(flow, dict)]


def holds_vcjob_spec(body: dict[str, Any]) -> bool:
    """Whether ``body`` holds a vcjob spec (a JobTemplate's, a flow's ``patch.jobSpec``), which only Volcano's schema
    can check."""
    if body.get("kind") == JOBTEMPLATE.kind:
        return True
    return any(isinstance(flow.get("patch"), dict) and "jobSpec" in flow["patch"] for flow in _flows(body))


def has_tree(body: dict[str, Any]) -> bool:
    """Whether ``body`` has child JobFlows below it: a JobFlow, or a JobFlowTemplate's run, with a child flow."""
    return body.get("kind") in (JOBFLOW.kind, JOBFLOWTEMPLATE.kind) and any("jobFlow" in flow
                                                                           for flow in _flows(body))


def flow_templates(ctx: Context, docs: list[documents.Document]) -> tuple[FlowTemplates, str | None]:
    """A namespace's JobFlowTemplates, those of the cluster (listed once per namespace) overlaid with those of the
    file; and why the cluster's could not be listed (no kubeconfig, an error), None when they could."""
    ours: dict[str, dict[str, JobFlowTemplate]] = {}
    for doc in docs:
        if doc.kind == JOBFLOWTEMPLATE.kind:
            try:
                template = JobFlowTemplate.model_validate(doc.with_namespace(ctx.namespace))
            except ValidationError:
                continue
            ours.setdefault(template.namespace, {})[template.name] = template
    unread: list[str] = []
    if not any(path.exists() for path in ctx.target.kubeconfig_files()) and not os.environ.get(
            "KUBERNETES_SERVICE_HOST"):
        unread.append("no kubeconfig (pass --kubeconfig, or set KUBECONFIG, to check them against a cluster's)")
    listed: dict[str, Mapping[str, JobFlowTemplate]] = {}

    def read(namespace: str) -> Mapping[str, JobFlowTemplate]:
        if namespace not in listed:
            listed[namespace] = {}
            if not unread:
                try:
                    items = ctx.cluster.list(JOBFLOWTEMPLATE, namespace).get("items", [])
                    listed[namespace] = {t.name: t for t in _parsed(items)}
                except KubeError as error:
                    unread.append(str(error))
        return {**listed[namespace], **ours.get(namespace, {})}

    for doc in docs:  # read now, so that the caller can say before the verdicts what was not read
        if has_tree(doc.body):
            read(doc.namespace or ctx.namespace)
    return read, unread[0] if unread else None


def _parsed(items: list[dict[str, Any]]) -> list[JobFlowTemplate]:
    found = []
    for item in items:
        try:
            found.append(JobFlowTemplate.model_validate(item))
        except ValidationError:
            continue
    return found


def review(body: dict[str, Any], *, namespace: str, source: str = "", vcjob_spec: dict[str, Any] | None = None,
           templates: FlowTemplates | None = None) -> Review:
    """The webhook's verdict on ``body`` (a JobFlow, JobTemplate or JobFlowTemplate) as if it were created in
    ``namespace``, with its vcjob specs checked against ``vcjob_spec`` (none: not checked) and its tree of child
    JobFlows against ``templates`` (none: not checked)."""
    api_type = CHECKED[body["kind"]]
    kind = KINDS[api_type.plural]
    metadata = {**(body.get("metadata") or {})}
    metadata.setdefault("namespace", namespace)
    obj = {**body, "metadata": metadata}
    request = {
        "uid": "kubectl-jobflow-validate",
        "operation": "CREATE",
        "kind": {"group": api_type.group, "version": api_type.version, "kind": api_type.kind},
        "namespace": metadata["namespace"],
        "object": obj,
    }
    verdict = decide(request, kind=kind, vcjob_spec=vcjob_spec, flow_templates=templates)
    problems = [str(error) for error in unknown_fields(obj, kind.model, vcjob_spec=vcjob_spec)]
    try:
        parsed = kind.model.model_validate(obj)
        problems += [str(error) for error in kind.check(parsed)]
        problems += [str(error) for error in look_down(parsed, kind=kind, flow_templates=templates)[0]]
    except ValidationError:
        pass
    if not verdict.allowed and not problems:
        problems = [verdict.message or "denied"]
    return Review(source=source, kind=api_type.kind, namespace=metadata["namespace"],
                  name=str(metadata.get("name") or ""), valid=verdict.allowed, problems=problems,
                  message=None if verdict.allowed else verdict.message, warnings=list(verdict.warnings))


def problems(body: dict[str, Any], *, namespace: str, vcjob_spec: dict[str, Any] | None = None) -> list[str]:
    """What the webhook would object to in ``body``, and every unknown field; empty when it would be admitted."""
    if body.get("kind") not in CHECKED:
        return []
    return review(body, namespace=namespace, vcjob_spec=vcjob_spec).problems


def run(ctx: Context) -> int:
    reviews: list[Review] = []
    docs = documents.read(ctx.args.file)
    schema, unread = vcjob_spec(ctx) if any(holds_vcjob_spec(doc.body) for doc in docs) else (None, None)
    if unread is not None:
        ctx.fail(f"note: vcjob specs are not checked for unknown fields, Volcano's schema of them could not be read: "
                 f"{unread}")
    templates, unlisted = flow_templates(ctx, docs) if any(has_tree(doc.body) for doc in docs) else (None, None)
    if unlisted is not None:
        ctx.fail("note: child JobFlows are checked against the file's JobFlowTemplates only, the cluster's could not "
                 f"be listed: {unlisted}")
    for doc in docs:
        if doc.kind not in CHECKED:
            what = f"a {doc.kind}" if doc.kind else "an object without kind"
            ctx.fail(f"{doc.source}: {what} is not checked: validate takes JobFlows, JobTemplates and "
                     "JobFlowTemplates (add kind: JobFlow, JobTemplate or JobFlowTemplate if this is one)")
            if doc.kind is None:
                reviews.append(Review(doc.source, "", doc.namespace or ctx.namespace, doc.name, False,
                                      ["the object has no kind: add kind: JobFlow, JobTemplate or JobFlowTemplate"],
                                      None))
            continue
        reviews.append(review(doc.body, namespace=ctx.namespace, source=doc.source, vcjob_spec=schema,
                              templates=templates))
    if ctx.args.output:
        ctx.write(formatted([_row(item) for item in reviews], ctx.args.output))
    else:
        for item in reviews:
            what = f"{item.kind or 'object'} {item.namespace}/{item.name}"
            if item.valid:
                ctx.say(f"{item.source}: {what} is valid")
            else:
                ctx.say(f"{item.source}: {what} is invalid:")
                for problem in item.problems:
                    ctx.say(f"  - {problem}")
            for warning in item.warnings:
                ctx.say(f"  warning: {warning}")
    return exits.OK if all(item.valid for item in reviews) else exits.USAGE
