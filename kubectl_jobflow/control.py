"""``suspend``, ``resume``, ``retry``, ``stop``, ``terminate``, ``approve``, ``reject``: steer a JobFlow through the
API server, so the engine (stateless) acts on it.

``suspend NAME`` sets ``spec.suspend: true``: the JobFlow starts nothing new (what runs keeps running) and shows
``Suspended``; ``resume NAME`` sets it back to false and the JobFlow goes on where it stopped. Both are plain merge
patches (``kubectl patch jf NAME --type=merge -p '{"spec":{"suspend":true}}'`` does the same) and idempotent:
suspending a suspended JobFlow says so and changes nothing.

``suspend jft/NAME`` and ``resume jft/NAME`` do the same to a JobFlowTemplate's ``spec.suspend`` (as ``argo cron
suspend``/``resume`` do to a CronWorkflow), in kubectl's ``TYPE/NAME`` form with the kind's short name (``jf/NAME``
names a JobFlow, as a bare NAME does): no scheduled run starts while it is suspended. On resume the command says
what the schedule does next (:func:`jobflow_core.schedules.firing.resume_outlook`): the time missed while suspended
that starts at once, unless ``startingDeadlineSeconds`` says it is too late or ``concurrencyPolicy`` holds it for (or
replaces) the active runs, and the next scheduled time.

``release [-A]`` takes the engine's finalizer (``flow.volcano.sh/keep-record``) off the vcjobs and child JobFlows of
a namespace (or of every namespace), as the engine would once it has recorded their end: the step before
uninstalling the engine, so that deleting them or their namespace never waits for an engine that is gone.

``retry NAME [--flow F ...]`` runs a Failed JobFlow's failed flows (or the named ones) and everything downstream
of them again, keeping what completed (:mod:`jobflow_core.dag.reruns`): it sets the annotation
``flow.volcano.sh/rerun`` to a new id (and ``flow.volcano.sh/rerun-flows``); the engine handles each id once. It
also removes ``spec.shutdown``: a stopped JobFlow runs again only when someone asks, and this is the asking.

``stop NAME`` sets ``spec.shutdown: Stop``: what runs is aborted, nothing new starts but the ``finally`` flows, and
the JobFlow ends Failed (reason ``Stopped``); ``terminate NAME`` sets ``Terminate``: the ``finally`` flows are aborted
too (reason ``Terminated``). As Argo's ``argo stop`` and ``argo terminate``; plain kubectl does the same with
``kubectl patch jf NAME --type=merge -p '{"spec":{"shutdown":"Stop"}}'``.

``approve NAME FLOW [-m TEXT]`` and ``reject NAME FLOW [-m TEXT]`` answer the approval gate ``FLOW`` (a flow with
``approval:``, :mod:`jobflow_core.flows.gates`) while it waits for an answer: they write the annotation
``approval.flow.volcano.sh/FLOW`` naming the gate's current record, the decision, your Kubernetes user (the API
server says who that is) and the message. The first answer stands; an answer to a gate that is not open yet, or
already answered, is refused saying why.

The writes themselves are :mod:`apiclient.steering`'s, which the dashboard's buttons make too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiclient.steering import answer_gate, request_retry, set_shutdown, set_suspend, set_template_suspend
from jobflow_core.models import ApprovalDecision, Shutdown
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, PARENT, RECORD_FINALIZER, VCJOB, ApiType
from jobflow_core.vocabulary.naming import FLOW_JOBS_SELECTOR
from kubectl_jobflow import exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import utc_now

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context


def suspend(ctx: Context) -> int:
    return _set_suspend(ctx, True)


def resume(ctx: Context) -> int:
    return _set_suspend(ctx, False)


SUSPENDABLE: dict[str, ApiType] = {
    "jf": JOBFLOW, "jobflow": JOBFLOW, "jobflows": JOBFLOW,
    "jft": JOBFLOWTEMPLATE, "jobflowtemplate": JOBFLOWTEMPLATE, "jobflowtemplates": JOBFLOWTEMPLATE,
}
"""The ``TYPE`` of ``TYPE/NAME`` for suspend and resume: kubectl's names of the two kinds that have ``spec.suspend``
(the short names of the CRDs, the kind and the plural), case aside."""


def suspendable(text: str, *, verb: str) -> tuple[ApiType, str]:
    """The kind and name ``NAME``, ``jf/NAME`` or ``jft/NAME`` designate (a bare NAME is a JobFlow)."""
    kind, slash, name = text.rpartition("/")
    api_type = SUSPENDABLE.get(kind.lower()) if slash else JOBFLOW
    if api_type is None or not name:
        raise CommandError(f"{verb} acts on a JobFlow (NAME or jf/NAME) or a JobFlowTemplate (jft/NAME), not "
                           f"{text!r}: e.g. kubectl jobflow {verb} jft/nightly", code=exits.USAGE)
    return api_type, name


def _set_suspend(ctx: Context, value: bool) -> int:
    verb = "suspend" if value else "resume"
    given = ctx.args.name or ctx.args.name_flag
    if not given:
        raise CommandError(f"name the JobFlow or the JobFlowTemplate: kubectl jobflow {verb} NAME, or "
                           f"{verb} jft/NAME for a JobFlowTemplate", code=exits.USAGE)
    api_type, name = suspendable(given, verb=verb)
    if api_type is JOBFLOWTEMPLATE:
        ctx.say(set_template_suspend(ctx.cluster, ctx.namespace, name, value, now=utc_now()))
    else:
        ctx.say(set_suspend(ctx.cluster, ctx.namespace, name, value))
    return 0


def retry(ctx: Context) -> int:
    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError("name the JobFlow: kubectl jobflow retry NAME [--flow FLOW ...]", code=exits.USAGE)
    ctx.say(request_retry(ctx.cluster, ctx.namespace, name, list(ctx.args.flow or ())))
    return 0


def stop(ctx: Context) -> int:
    return _set_shutdown(ctx, Shutdown.STOP)


def terminate(ctx: Context) -> int:
    return _set_shutdown(ctx, Shutdown.TERMINATE)


def _set_shutdown(ctx: Context, value: Shutdown) -> int:
    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError(f"name the JobFlow: kubectl jobflow {value.value.lower()} NAME", code=exits.USAGE)
    ctx.say(set_shutdown(ctx.cluster, ctx.namespace, name, value))
    return 0


def approve(ctx: Context) -> int:
    return _answer(ctx, ApprovalDecision.APPROVED)


def reject(ctx: Context) -> int:
    return _answer(ctx, ApprovalDecision.REJECTED)


def _answer(ctx: Context, decision: ApprovalDecision) -> int:
    verb = "approve" if decision is ApprovalDecision.APPROVED else "reject"
    if not ctx.args.name or not ctx.args.flow:
        raise CommandError(f"name the JobFlow and its approval gate: kubectl jobflow {verb} NAME FLOW "
                           "[--message TEXT]", code=exits.USAGE)
    ctx.say(answer_gate(ctx.cluster, ctx.namespace, ctx.args.name, ctx.args.flow, decision, ctx.args.message))
    return 0


def release(ctx: Context) -> int:
    everywhere = getattr(ctx.args, "all_namespaces", False)
    where = "every namespace" if everywhere else f"namespace {ctx.namespace}"
    scope = None if everywhere else ctx.namespace
    jobs = ctx.cluster.list(VCJOB, scope, label_selector=FLOW_JOBS_SELECTOR)["items"]
    held = [job for job in jobs if RECORD_FINALIZER in (job["metadata"].get("finalizers") or ())]
    children = [flow for flow in ctx.cluster.list(JOBFLOW, scope, label_selector=PARENT)["items"]
                if RECORD_FINALIZER in (flow["metadata"].get("finalizers") or ())]  # child JobFlows hold it too
    for api_type, what, found in ((VCJOB, "vcjob", held), (JOBFLOW, "child JobFlow", children)):
        for item in found:
            meta = item["metadata"]
            rest = [f for f in meta["finalizers"] if f != RECORD_FINALIZER]
            # The resourceVersion makes the patch fail, rather than drop a finalizer someone added meanwhile.
            ctx.cluster.merge_patch(api_type, meta["namespace"], meta["name"], {"metadata": {
                "finalizers": rest or None, "resourceVersion": meta["resourceVersion"]}})
            ctx.say(f"Released {what}: {meta['namespace']}/{meta['name']}")
    if not held and not children:
        ctx.say(f"No vcjob in {where} holds {RECORD_FINALIZER}: nothing waits for the engine")
        return 0
    counted = f"{len(held)} vcjob(s)" + (f" and {len(children)} child JobFlow(s)" if children else "")
    ctx.say(f"Released {counted} in {where}: deleting them or their namespace no longer waits for the "
            "engine. A release before the engine recorded a vcjob's end loses that record: do this to uninstall.")
    return 0
