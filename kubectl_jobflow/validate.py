"""``validate -f FILE``: the validating webhook's checks, with the webhook's messages, and no field left unchecked.

Each JobFlow, JobTemplate and JobFlowTemplate of the file is put to :func:`jobflow_core.validation.review.decide` as
the API server would send it on CREATE, so the verdict and the text are exactly what the webhook answers (the API
server prefixes it with ``admission webhook "..." denied the request:``), and every field is checked against the
kind's schema, with its path and the nearest known name (:mod:`jobflow_core.validation.fields`): where the API server
would refuse it under kubectl's strict field validation, and where it would keep it unseen (a JobFlowTemplate's
``jobFlow.spec``, a vcjob spec). A vcjob spec is checked against Volcano's vcjob CRD of the cluster when one can be
reached (within a second or two); offline it is not, and a line on stderr says so. The problems are listed one per
line, each with what to do. ``create`` runs the same checks before it sends anything (:func:`problems`).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from apiclient.cluster import KubeError
from jobflow_core.validation.fields import VCJOB_CRD, unknown_fields, vcjob_spec_schema
from jobflow_core.validation.review import KINDS, decide
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


def holds_vcjob_spec(body: dict[str, Any]) -> bool:
    """Whether ``body`` holds a vcjob spec (a JobTemplate's, a flow's ``patch.jobSpec``), which only Volcano's schema
    can check."""
    if body.get("kind") == JOBTEMPLATE.kind:
        return True
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    if body.get("kind") == JOBFLOWTEMPLATE.kind:
        run = spec.get("jobFlow") if isinstance(spec.get("jobFlow"), dict) else {}
        spec = run.get("spec") if isinstance(run.get("spec"), dict) else {}
    flows = spec.get("flows") if isinstance(spec.get("flows"), list) else []
    return any(isinstance(flow, dict) and isinstance(flow.get("patch"), dict) and "jobSpec" in flow["patch"]
               for flow in flows)


def review(body: dict[str, Any], *, namespace: str, source: str = "",
           vcjob_spec: dict[str, Any] | None = None) -> Review:
    """The webhook's verdict on ``body`` (a JobFlow, JobTemplate or JobFlowTemplate) as if it were created in
    ``namespace``, with its vcjob specs checked against ``vcjob_spec`` (none: not checked)."""
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
    verdict = decide(request, kind=kind, vcjob_spec=vcjob_spec)
    problems = [str(error) for error in unknown_fields(obj, kind.model, vcjob_spec=vcjob_spec)]
    try:
        problems += [str(error) for error in kind.check(kind.model.model_validate(obj))]
    except ValidationError:
        pass
    if not verdict.allowed and not problems:
        problems = [verdict.message or "denied"]
    return Review(source=source, kind=api_type.kind, namespace=metadata["namespace"],
                  name=str(metadata.get("name") or ""), valid=verdict.allowed, problems=problems,
                  message=None if verdict.allowed else verdict.message)


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
        reviews.append(review(doc.body, namespace=ctx.namespace, source=doc.source, vcjob_spec=schema))
    if ctx.args.output:
        ctx.write(formatted([asdict(item) for item in reviews], ctx.args.output))
    else:
        for item in reviews:
            what = f"{item.kind or 'object'} {item.namespace}/{item.name}"
            if item.valid:
                ctx.say(f"{item.source}: {what} is valid")
            else:
                ctx.say(f"{item.source}: {what} is invalid:")
                for problem in item.problems:
                    ctx.say(f"  - {problem}")
    return exits.OK if all(item.valid for item in reviews) else exits.USAGE
