"""``validate -f FILE``: the validating webhook's checks, offline, with the webhook's messages.

Each JobFlow and JobTemplate of the file is put to :func:`jobflow_core.validation.review.decide` as the API server would
send it on CREATE, so the verdict and the text are exactly what the webhook answers (the API server prefixes it
with ``admission webhook "..." denied the request:``). The problems are listed one per line, each with what to
do. ``create`` runs the same checks before it sends anything (:func:`problems`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from jobflow_core.validation.review import KINDS, decide
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE
from kubectl_jobflow import documents
from kubectl_jobflow.output import dump

if TYPE_CHECKING:
    from kubectl_jobflow.cli import Context

CHECKED = {JOBFLOW.kind: JOBFLOW, JOBTEMPLATE.kind: JOBTEMPLATE}


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


def review(body: dict[str, Any], *, namespace: str, source: str = "") -> Review:
    """The webhook's verdict on ``body`` (a JobFlow or JobTemplate) as if it were created in ``namespace``."""
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
    verdict = decide(request, kind=kind)
    try:
        problems = [str(error) for error in kind.check(kind.model.model_validate(obj))]
    except ValidationError:
        problems = []
    if not verdict.allowed and not problems:
        problems = [verdict.message or "denied"]
    return Review(source=source, kind=api_type.kind, namespace=metadata["namespace"],
                  name=str(metadata.get("name") or ""), valid=verdict.allowed, problems=problems,
                  message=None if verdict.allowed else verdict.message)


def problems(body: dict[str, Any], *, namespace: str) -> list[str]:
    """What the webhook would object to in ``body``; empty when it would be admitted."""
    return review(body, namespace=namespace).problems if body.get("kind") in CHECKED else []


def run(ctx: Context) -> int:
    reviews: list[Review] = []
    for doc in documents.read(ctx.args.file):
        if doc.kind not in CHECKED:
            what = f"a {doc.kind}" if doc.kind else "an object without kind"
            ctx.fail(f"{doc.source}: {what} is not checked: validate takes JobFlows and JobTemplates "
                     "(add kind: JobFlow or kind: JobTemplate if this is one)")
            if doc.kind is None:
                reviews.append(Review(doc.source, "", doc.namespace or ctx.namespace, doc.name, False,
                                      ["the object has no kind: add kind: JobFlow or kind: JobTemplate"], None))
            continue
        reviews.append(review(doc.body, namespace=ctx.namespace, source=doc.source))
    if ctx.args.output:
        ctx.write(dump([asdict(item) for item in reviews], ctx.args.output))
    else:
        for item in reviews:
            what = f"{item.kind or 'object'} {item.namespace}/{item.name}"
            if item.valid:
                ctx.say(f"{item.source}: {what} is valid")
            else:
                ctx.say(f"{item.source}: {what} is invalid:")
                for problem in item.problems:
                    ctx.say(f"  - {problem}")
    return 0 if all(item.valid for item in reviews) else 1
