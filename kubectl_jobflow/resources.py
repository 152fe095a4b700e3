"""``create``, ``delete``, ``list``, ``get``, ``describe``: vcctl's commands, for JobFlows and for JobTemplates.

The flags, messages and tables are vcctl's (reference D): ``-N/--name`` (or the name as an argument),
``-n/--namespace``, ``-f/--file``, ``--all-namespaces`` (also ``-A``); ``Created JobFlow: <ns>/<name>``,
``Deleted JobTemplate: <ns>/<name>``; tables ``Name Namespace Phase Age`` for JobFlows (plus ``Progress``) and
``Name Namespace`` for JobTemplates. What differs is what vcctl got wrong (G.16):

* the exit status is 1 when anything failed (vcctl exits 0 after printing ``Failed to create ...``);
* files are parsed as YAML documents, not split on the text ``---``; a file that does not parse creates nothing;
* ``create`` runs the validating webhook's checks first (:mod:`kubectl_jobflow.validate`), so a cycle or an unknown
  field is refused even on clusters without the webhook (``--validate=false`` sends the object as it is), and asks
  the API server for strict field validation, as kubectl does: a field the CRD does not have is refused, never
  dropped;
* ``create -f`` and ``delete -f`` take the JobTemplates and JobFlows of a file together (``kind`` decides);
  ``create -f`` takes JobFlowTemplates too;
* an unsupported ``-o`` is refused, and ``describe`` of a whole namespace prints each object with its
  ``apiVersion`` and ``kind``, as YAML documents separated by ``---``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from apiclient.cluster import KubeError
from display.times import age
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, ApiType
from jobflow_core.vocabulary.naming import job_name
from kubectl_jobflow import documents, run_options, validate
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import dump, dump_all, utc_now, vcctl_table, without_managed_fields

if TYPE_CHECKING:
    from kubectl_jobflow.cli import Context


@dataclass(frozen=True)
class Noun:
    """How one type of object is named in vcctl's messages and which table it gets."""

    api_type: ApiType
    word: str
    """vcctl's word in errors: ``jobflow``, ``job template``."""
    headers: tuple[str, ...]
    row: Callable[[dict[str, Any]], list[str]]


def _progress(flow: dict[str, Any]) -> str:
    """``status.progress``; for a status written by upstream's controller, Completed flows over flows."""
    status = flow.get("status") or {}
    if status.get("progress"):
        return status["progress"]
    names = list(dict.fromkeys(f.get("name") for f in (flow.get("spec") or {}).get("flows") or ()))
    completed = set(status.get("completedJobs") or ())
    done = sum(job_name(jobflow=flow["metadata"]["name"], flow=name) in completed for name in names)
    return f"{done}/{len(names)}"


def _jobflow_row(flow: dict[str, Any]) -> list[str]:
    meta = flow["metadata"]
    phase = ((flow.get("status") or {}).get("state") or {}).get("phase") or ""
    return [meta["name"], meta["namespace"], phase, age(meta.get("creationTimestamp"), now=utc_now()),
            _progress(flow)]


def _template_row(template: dict[str, Any]) -> list[str]:
    return [template["metadata"]["name"], template["metadata"]["namespace"]]


NOUNS = {
    JOBFLOW.kind: Noun(JOBFLOW, "jobflow", ("Name", "Namespace", "Phase", "Age", "Progress"), _jobflow_row),
    JOBTEMPLATE.kind: Noun(JOBTEMPLATE, "job template", ("Name", "Namespace"), _template_row),
}


CREATED = {api_type.kind: api_type for api_type in (JOBFLOW, JOBTEMPLATE, JOBFLOWTEMPLATE)}
"""The kinds ``create -f`` sends, by ``kind``."""


def create(ctx: Context, noun: Noun) -> int:
    docs = _documents(ctx, noun, also=(JOBFLOWTEMPLATE.kind,))
    params = run_options.parse_parameters(getattr(ctx.args, "param", None))
    generate_name = bool(getattr(ctx.args, "generate_name", False))
    holding = ctx.args.validate and any(validate.holds_vcjob_spec(doc.body) for doc in docs)
    schema = validate.vcjob_spec(ctx)[0] if holding else None
    failed = 0
    for doc in docs:
        api_type = CREATED[doc.kind or noun.api_type.kind]
        body = {"apiVersion": api_type.api_version, "kind": api_type.kind, **doc.with_namespace(ctx.namespace)}
        namespace = body["metadata"]["namespace"]
        try:
            if api_type is JOBFLOW:
                body = run_options.apply(body, params=params, generate_name=generate_name)
            problems = validate.problems(run_options.as_validated(body), namespace=namespace, vcjob_spec=schema) \
                if ctx.args.validate else []
            if problems:
                raise CommandError(f"{doc.source}: {'; '.join(problems)} (or skip this check with --validate=false)")
            created = ctx.cluster.create(api_type, namespace, body)
        except (KubeError, CommandError) as error:
            ctx.fail(f"Failed to create {api_type.kind}: {error}")
            failed += 1
            continue
        ctx.say(f"Created {api_type.kind}: {created['metadata']['namespace']}/{created['metadata']['name']}")
    return 1 if failed else 0


def delete(ctx: Context, noun: Noun) -> int:
    if ctx.args.file:
        targets = [(NOUNS[doc.kind or noun.api_type.kind].api_type, doc.namespace or ctx.namespace, doc.name)
                   for doc in _documents(ctx, noun)]
    else:
        targets = [(noun.api_type, ctx.namespace, _name(ctx, f"{noun.word} name must be specified"))]
    failed = 0
    for api_type, namespace, name in targets:
        try:
            ctx.cluster.delete(api_type, namespace, name)
        except KubeError as error:
            ctx.fail(f"Failed to delete {api_type.kind}: {error}")
            failed += 1
            continue
        ctx.say(f"Deleted {api_type.kind}: {namespace}/{name}")
    return 1 if failed else 0


def list_(ctx: Context, noun: Noun) -> int:
    listing = ctx.cluster.list(noun.api_type, None if ctx.args.all_namespaces else ctx.namespace)
    items = [without_managed_fields(item) for item in listing.get("items") or ()]
    if ctx.args.output:
        ctx.write(dump({**listing, "items": items}, ctx.args.output))
    elif not items:
        ctx.say("No resources found")
    else:
        ctx.write(vcctl_table(noun.headers, [noun.row(item) for item in items]))
    return 0


def get(ctx: Context, noun: Noun) -> int:
    name = _name(ctx, f"name is mandatory to get the particular {noun.word} details")
    obj = ctx.cluster.get(noun.api_type, ctx.namespace, name)
    if ctx.args.output:
        ctx.write(dump(without_managed_fields(obj), ctx.args.output))
    else:
        ctx.write(vcctl_table(noun.headers, [noun.row(obj)]))
    return 0


def describe(ctx: Context, noun: Noun) -> int:
    name = ctx.args.name or ctx.args.name_flag
    if name:
        objects = [ctx.cluster.get(noun.api_type, ctx.namespace, name)]
    else:
        objects = ctx.cluster.list(noun.api_type, ctx.namespace).get("items") or []
    shown = [{"apiVersion": noun.api_type.api_version, "kind": noun.api_type.kind, **without_managed_fields(obj)}
             for obj in objects]
    if shown:
        ctx.write(dump_all(shown, ctx.args.output))
    else:
        ctx.say("No resources found")
    return 0


def _name(ctx: Context, missing: str) -> str:
    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError(missing)
    return name


def _documents(ctx: Context, noun: Noun, *, also: tuple[str, ...] = ()) -> list[documents.Document]:
    """The documents of ``-f``, every one of a kind this command handles (or no kind: ``noun``'s, as vcctl);
    ``also``: more kinds the JobFlow command takes."""
    if not ctx.args.file:
        raise CommandError("no file given: pass -f FILE (or -f - for standard input)")
    docs = documents.read(ctx.args.file)
    accepted = (JOBFLOW.kind, JOBTEMPLATE.kind, *also) if noun.api_type is JOBFLOW else (JOBTEMPLATE.kind,)
    wrong = [doc for doc in docs if doc.kind is not None and doc.kind not in accepted]
    if wrong:
        kinds = " or ".join(accepted)
        raise CommandError("; ".join(f"{doc.source} is a {doc.kind}, not a {kinds}" for doc in wrong)
                           + " (use kubectl apply -f for other kinds; nothing was sent)")
    if not docs:
        raise CommandError(f"no objects in {', '.join(ctx.args.file)}")
    return docs
