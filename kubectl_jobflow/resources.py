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
from kubectl_jobflow import documents, exits, run_options, validate
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.formats import per_object
from kubectl_jobflow.output import (dump_all, formatted, objects_text, resource_of, utc_now, vcctl_row, vcctl_widths,
                                    without_managed_fields)

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context


@dataclass(frozen=True)
class Noun:
    """How one type of object is named in vcctl's messages and which table it gets."""

    api_type: ApiType
    word: str
    """vcctl's word in errors: ``jobflow``, ``job template``."""
    headers: tuple[str, ...]
    row: Callable[[dict[str, Any]], list[str]]
    wide_headers: tuple[str, ...]
    """``-o wide``'s further columns: the CRD's printer columns vcctl's table lacks."""
    wide_row: Callable[[dict[str, Any]], list[str]]

    @property
    def resource(self) -> str:
        return resource_of(self.api_type)

    def table(self, objects: list[dict[str, Any]], wide: bool) -> tuple[tuple[str, ...], list[list[str]]]:
        if not wide:
            return self.headers, [self.row(obj) for obj in objects]
        return (*self.headers, *self.wide_headers), [[*self.row(obj), *self.wide_row(obj)] for obj in objects]


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


def _jobflow_wide(flow: dict[str, Any]) -> list[str]:
    status = flow.get("status") or {}
    queue = status.get("queue") or {}
    position = queue.get("position")
    return [queue.get("state") or "<none>", "<none>" if position is None else str(position),
            (status.get("state") or {}).get("message") or "<none>"]


def _template_row(template: dict[str, Any]) -> list[str]:
    return [template["metadata"]["name"], template["metadata"]["namespace"]]


def _template_wide(template: dict[str, Any]) -> list[str]:
    status = template.get("status") or {}
    rate = status.get("failureRate")
    return [",".join(status.get("jobDependsOnList") or ()) or "<none>", str(status.get("runs", "<none>")),
            "<none>" if rate is None else f"{rate:g}", age(template["metadata"].get("creationTimestamp"),
                                                           now=utc_now())]


NOUNS = {
    JOBFLOW.kind: Noun(JOBFLOW, "jobflow", ("Name", "Namespace", "Phase", "Age", "Progress"), _jobflow_row,
                       ("Queue", "Position", "Message"), _jobflow_wide),
    JOBTEMPLATE.kind: Noun(JOBTEMPLATE, "job template", ("Name", "Namespace"), _template_row,
                           ("Jobs", "Runs", "Failure-Rate", "Age"), _template_wide),
}


CREATED = {api_type.kind: api_type for api_type in (JOBFLOW, JOBTEMPLATE, JOBFLOWTEMPLATE)}
"""The kinds ``create -f`` sends, by ``kind``."""


def create(ctx: Context, kind: str) -> int:
    noun = NOUNS[kind]
    docs = _documents(ctx, noun, also=(JOBFLOWTEMPLATE.kind,))
    params = run_options.parse_parameters(getattr(ctx.args, "param", None))
    generate_name = bool(getattr(ctx.args, "generate_name", False))
    holding = ctx.args.validate and any(validate.holds_vcjob_spec(doc.body) for doc in docs)
    schema = validate.vcjob_spec(ctx)[0] if holding else None
    codes = []
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
                raise CommandError(f"{doc.source}: {'; '.join(problems)} (or skip this check with --validate=false)",
                                   code=exits.USAGE)
            created = ctx.cluster.create(api_type, namespace, body)
        except (KubeError, CommandError) as error:
            if _stops_everything(error):
                raise
            ctx.fail(f"Failed to create {api_type.kind}: {error}")
            codes.append(exits.code_of(error))
            continue
        ctx.say(f"Created {api_type.kind}: {created['metadata']['namespace']}/{created['metadata']['name']}")
    return max(codes, default=exits.OK)


def delete(ctx: Context, kind: str) -> int:
    noun = NOUNS[kind]
    if ctx.args.file:
        targets = [(NOUNS[doc.kind or noun.api_type.kind].api_type, doc.namespace or ctx.namespace, doc.name)
                   for doc in _documents(ctx, noun)]
    else:
        targets = [(noun.api_type, ctx.namespace, _name(ctx, f"{noun.word} name must be specified"))]
    codes = []
    for api_type, namespace, name in targets:
        try:
            ctx.cluster.delete(api_type, namespace, name)
        except KubeError as error:
            if _stops_everything(error):
                raise
            ctx.fail(f"Failed to delete {api_type.kind}: {error}")
            codes.append(exits.code_of(error))
            continue
        ctx.say(f"Deleted {api_type.kind}: {namespace}/{name}")
    return max(codes, default=exits.OK)


def _stops_everything(error: Exception) -> bool:
    """A failure that every other object would meet too (the API server unreachable, the user not allowed): reported
    once, by the command line, instead of once per object."""
    return isinstance(error, KubeError) and exits.code_of(error) == exits.UNREACHABLE


def get(ctx: Context, kind: str, *, vcctl: bool = False) -> int:
    """kubectl's ``get``: every object of the namespace (``-A``: of all; ``-l``: matching), or those named;
    ``vcctl``: as vcctl's ``list`` says that there are none (on standard output, in its words)."""
    noun = NOUNS[kind]
    args = ctx.args
    names = [*getattr(args, "names", ()), *([args.name_flag] if getattr(args, "name_flag", None) else [])]
    selector = args.selector
    if names and (args.all_namespaces or selector):
        raise CommandError("a resource cannot be retrieved by name across all namespaces"
                           if args.all_namespaces else "name cannot be provided when a selector is specified",
                           code=exits.USAGE)
    namespace = None if args.all_namespaces else ctx.namespace
    code = exits.OK
    if names:
        objects = []
        for name in names:
            try:
                objects.append(ctx.cluster.get(noun.api_type, ctx.namespace, name))
            except KubeError as error:
                if error.status != 404 or len(names) == 1:
                    raise
                ctx.fail(f"Error from server (NotFound): {error}")
                code = exits.FAILED
        version = None
    else:
        listing = ctx.cluster.list(noun.api_type, namespace, label_selector=selector)
        objects, version = listing.get("items") or [], listing["metadata"].get("resourceVersion")
    shown = [_complete(noun, obj) for obj in objects]
    if not shown and per_object(args.output):
        if vcctl:
            ctx.say("No resources found")
        else:
            ctx.fail("No resources found" + ("" if namespace is None else f" in {namespace} namespace") + ".")
    elif vcctl and not per_object(args.output):
        # vcctl's list printed the API server's list (kind JobFlowList), kubectl's get a kind: List.
        ctx.write(formatted({**listing, "items": [without_managed_fields(obj) for obj in objects]}, args.output))
    else:
        ctx.write(objects_text(shown, args.output, resource=noun.resource, table=noun.table,
                               no_headers=args.no_headers, single=len(names) == 1))
    if args.watch:
        return _watch(ctx, noun, namespace, names, version, objects)
    return code


def _watch(ctx: Context, noun: Noun, namespace: str | None, names: list[str], version: str | None,
           objects: list[dict[str, Any]]) -> int:
    """``get -w``: each change after the list, one row (or object) per change, until Ctrl-C or the watch is lost."""
    from apiclient.follow import follow

    if len(names) == 1 and objects:  # watch that one object from the version just read
        changes = follow(ctx.cluster, noun.api_type, ctx.namespace, field_selector=f"metadata.name={names[0]}",
                         since=objects[0]["metadata"]["resourceVersion"], seen=tuple(objects))
    else:
        changes = follow(ctx.cluster, noun.api_type, ctx.namespace if names else namespace,
                         label_selector=ctx.args.selector, since=None if names else version, seen=tuple(objects))
    wide = bool(ctx.args.output) and ctx.args.output.format == "wide"
    tabled = not ctx.args.output or wide
    headers, rows = noun.table(objects, wide)
    widths = vcctl_widths(headers, *rows)  # the list's columns, as printed above
    for kind, obj in changes:
        if (names and obj["metadata"]["name"] not in names) or (kind == "DELETED" and "spec" not in obj):
            continue  # another object, or one that vanished during a gap (only its name is known)
        if tabled:  # one row, in the columns printed so far (wider when a cell needs it), as kubectl keeps them
            [row] = noun.table([obj], wide)[1]
            widths = vcctl_widths(row, at_least=widths)
            ctx.write(vcctl_row(row, widths))
        else:
            ctx.write(objects_text([_complete(noun, obj)], ctx.args.output, resource=noun.resource,
                                   table=noun.table, no_headers=True, single=True))
    return exits.OK


def _complete(noun: Noun, obj: dict[str, Any]) -> dict[str, Any]:
    """An object as kubectl prints it: with its ``apiVersion`` and ``kind`` (a list's items lack them), without
    ``managedFields``."""
    return {"apiVersion": noun.api_type.api_version, "kind": noun.api_type.kind, **without_managed_fields(obj)}


def describe(ctx: Context, kind: str) -> int:
    noun = NOUNS[kind]
    name = ctx.args.name or ctx.args.name_flag
    if name:
        objects = [ctx.cluster.get(noun.api_type, ctx.namespace, name)]
    else:
        objects = ctx.cluster.list(noun.api_type, None if ctx.args.all_namespaces else ctx.namespace,
                                   label_selector=ctx.args.selector).get("items") or []
    shown = [_complete(noun, obj) for obj in objects]
    if shown:
        ctx.write(dump_all(shown, ctx.args.output.format))
    else:
        ctx.say("No resources found")
    return 0


def _name(ctx: Context, missing: str) -> str:
    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError(missing, code=exits.USAGE)
    return name


def _documents(ctx: Context, noun: Noun, *, also: tuple[str, ...] = ()) -> list[documents.Document]:
    """The documents of ``-f``, every one of a kind this command handles (or no kind: ``noun``'s, as vcctl);
    ``also``: more kinds the JobFlow command takes."""
    kustomized = getattr(ctx.args, "kustomize", None)
    if kustomized:
        docs = documents.kustomize(kustomized)
    elif not ctx.args.file:
        raise CommandError("no file given: pass -f FILE (-f - for standard input) or --kustomize DIR", code=exits.USAGE)
    else:
        docs = documents.read(ctx.args.file)
    accepted = (JOBFLOW.kind, JOBTEMPLATE.kind, *also) if noun.api_type is JOBFLOW else (JOBTEMPLATE.kind,)
    wrong = [doc for doc in docs if doc.kind is not None and doc.kind not in accepted]
    if wrong:
        kinds = " or ".join(accepted)
        raise CommandError("; ".join(f"{doc.source} is a {doc.kind}, not a {kinds}" for doc in wrong)
                           + " (use kubectl apply -f for other kinds; nothing was sent)", code=exits.USAGE)
    return docs
