"""The writes a person asks for, as ``kubectl jobflow`` and the dashboard both make them: suspend, resume, retry,
stop, terminate, approve, reject.

Each is one merge patch on the object (what ``kubectl patch --type=merge`` does), after a read that says whether
it is needed or possible; the engine, stateless, acts on the object as it then stands. Each returns what was done,
in a sentence, or raises :class:`Refused` saying why it cannot be done and what to do.

* suspend / resume a JobFlow: ``spec.suspend``; it starts nothing new while suspended (what runs keeps running);
* suspend / resume a JobFlowTemplate: its ``spec.suspend`` (as ``argo cron suspend``/``resume``); on resume, what
  the schedule does next (:func:`jobflow_core.schedules.firing.resume_outlook`);
* run a JobFlowTemplate now, by hand (``kubectl jobflow run``): the JobFlow the engine itself would start, with the
  parameters given (:func:`jobflow_core.schedules.runs.run_manifest`), whatever its schedule and ``suspend`` say;
* retry a Failed JobFlow: the annotation ``flow.volcano.sh/rerun`` set to a new id (and
  ``flow.volcano.sh/rerun-flows``), which the engine handles once (:mod:`jobflow_core.dag.reruns`); the same patch
  removes ``spec.shutdown``, which would make the engine refuse the rerun;
* stop / terminate a JobFlow: ``spec.shutdown`` (``Stop``: what runs is aborted, nothing new starts but the
  ``finally`` flows; ``Terminate``: the ``finally`` flows are aborted too); it ends Failed;
* approve / reject an approval gate: the annotation ``approval.flow.volcano.sh/<flow>``
  (:func:`jobflow_core.flows.gates.answer_text`) naming the gate's current record, the decision and the caller's
  Kubernetes user (a SelfSubjectReview says who that is; the admission webhook checks it). Whether a gate takes an
  answer now, or why not, is :func:`gate_of`'s to say, for the dashboard's buttons as for the command line. The
  patch carries the ``resourceVersion`` it was decided on: a JobFlow changed meanwhile (another answer, a rerun) is
  read and checked again, never overwritten.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from apiclient.cluster import Cluster, KubeError
from jobflow_core.flows.gates import (Answer, annotated, annotation_key, answer_of, answer_text, describe, gate_named,
                                      may_answer, recorded)
from jobflow_core.models import (Approval, ApprovalDecision, ApprovalRecord, Flow, JobFlow, JobFlowPhase,
                                 JobFlowTemplate, Shutdown, WaitingFlow)
from jobflow_core.schedules.firing import resume_outlook
from jobflow_core.schedules.runs import Cause, Start, UnknownParameter, manual_run_name, run_manifest
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, RERUN, RERUN_FLOWS
from jobflow_core.vocabulary.kube_events import SHUTDOWN_REASON, strongest
from jobflow_core.vocabulary.phase import is_final

ANSWER_ATTEMPTS = 3
"""How often an answer is read, checked and written again when the JobFlow changed in between (the engine writes its
status often while vcjobs run)."""


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


def start_run(cluster: Cluster, namespace: str, name: str, parameters: dict[str, str], *, now: datetime) -> str:
    """Start a run of JobFlowTemplate ``name`` now, setting ``parameters`` (the others keep their defaults); the
    run's name. As ``kubectl create job --from=cronjob/x``, its schedule's ``suspend`` and ``concurrencyPolicy`` do
    not hold a run by hand."""
    found = cluster.find(JOBFLOWTEMPLATE, namespace, name)
    if found is None:
        raise Refused(f'JobFlowTemplate "{namespace}/{name}" not found: check the name and the namespace (-n); '
                      "kubectl get jft lists them")
    template = JobFlowTemplate.model_validate(found)
    start = Start(name=manual_run_name(template.name, now), cause=Cause.MANUAL, parameters=parameters)
    try:
        manifest = run_manifest(template, start, now=now)
    except UnknownParameter as error:
        raise Refused(str(error)) from None
    # A declared parameter with no default (admission refuses such a template, but one can be older than the
    # webhook, or made without it) is the caller's to give: left out, the run would be a JobFlow admission refuses
    # (ParameterWithoutValue) or one that never starts. Said here, before anything is created, in the same words for
    # the command line and the dashboard's Run now (which sends only the fields filled in or with a default).
    unset = [p["name"] for p in manifest["spec"].get("parameters") or () if p.get("value") is None]
    if unset:
        given = " ".join(f"-p {missing}=VALUE" for missing in unset)
        raise Refused(f"JobFlowTemplate {namespace}/{name} gives no default to parameter {', '.join(unset)}: set "
                      f"it for this run (kubectl jobflow run {name} {given}), or give it a value in "
                      "spec.jobFlow.spec.parameters")
    cluster.create(JOBFLOW, namespace, manifest)
    return start.name


def request_retry(cluster: Cluster, namespace: str, name: str, flows: list[str]) -> str:
    """Ask the engine to rerun a Failed JobFlow's failed flows (or ``flows``); what was done, in a sentence."""
    request = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    flows = list(dict.fromkeys(flows))
    first: dict | None = None
    for _ in range(ANSWER_ATTEMPTS):
        current = cluster.find(JOBFLOW, namespace, name)
        if current is None:
            raise Refused(f'JobFlow "{namespace}/{name}" not found: check the name and the namespace (-n)')
        first = first or current
        if (current.get("spec") or {}).get("shutdown") != (first.get("spec") or {}).get("shutdown"):
            raise Refused(f"JobFlow {namespace}/{name} was stopped or terminated while the retry was being asked: "
                          f"look at it (kubectl jobflow status {name}) and run the command again")
        phase = ((current.get("status") or {}).get("state") or {}).get("phase")
        if phase != "Failed":
            raise Refused(f"JobFlow {namespace}/{name} is {phase or 'not planned yet'}: only a Failed JobFlow "
                          f"can be retried (see kubectl jobflow status {name})")
        known = {flow.get("name") for flow in (current.get("spec") or {}).get("flows") or ()}
        unknown = [flow for flow in flows if flow not in known]
        if unknown:
            raise Refused(f"JobFlow {namespace}/{name} has no flow {', '.join(unknown)}: "
                          f"its flows are {', '.join(sorted(known))}")
        # spec.shutdown goes in the same patch: while it is set the engine refuses the rerun (a stopped JobFlow
        # stays stopped until someone asks for it to run again, which is this). With the resourceVersion read, a
        # stop that lands meanwhile fails the patch (409) instead of being taken away unseen; the engine's status
        # writes do too, and are read again.
        try:
            cluster.merge_patch(JOBFLOW, namespace, name, {"metadata": {
                "resourceVersion": current["metadata"]["resourceVersion"],
                "annotations": {RERUN: request, RERUN_FLOWS: ",".join(flows) or None}}, "spec": {"shutdown": None}})
        except KubeError as error:
            if error.status != 409:
                raise
            continue
        break
    else:
        raise Refused(f"JobFlow {namespace}/{name} changed {ANSWER_ATTEMPTS} times while the retry was being asked: "
                      "run the command again")
    which = ", ".join(flows) if flows else "its failed flows"
    shutdown = (current.get("spec") or {}).get("shutdown")
    cleared = f"; spec.shutdown ({shutdown}) removed" if shutdown else ""
    return (f"Retrying JobFlow: {namespace}/{name}: {which} and what follows them run again (request {request}"
            f"{cleared}; follow it with kubectl jobflow status {name} --watch)")


SHUTDOWN_WORDS = {Shutdown.STOP: ("stop", "Stopping", "stopped", "stopping"),
                  Shutdown.TERMINATE: ("terminate", "Terminating", "terminated", "terminating")}
"""Each ``spec.shutdown``'s verb and the words of its sentences."""


def set_shutdown(cluster: Cluster, namespace: str, name: str, value: Shutdown) -> str:
    """Stop or terminate a JobFlow (``spec.shutdown``); what was done, in a sentence.

    A Succeed JobFlow is refused: nothing of it runs. A Failed one is not: a failed flow ends the JobFlow while
    vcjobs of other flows may still run, and those are what this aborts (when its status says none runs, nothing is
    written)."""
    current = cluster.find(JOBFLOW, namespace, name)
    if current is None:
        raise Refused(f'JobFlow "{namespace}/{name}" not found: check the name and the namespace (-n)')
    jobflow = JobFlow.model_validate(current)
    verb, doing, done, going = SHUTDOWN_WORDS[value]
    reason = SHUTDOWN_REASON[value]
    phase = _phase(jobflow)
    if phase is JobFlowPhase.SUCCEED:
        raise Refused(f"JobFlow {namespace}/{name} already Succeed: nothing of it runs, nothing to {verb}")
    before = jobflow.spec.shutdown
    if strongest(before, value) is not value:  # Terminate outranks Stop: the engine keeps the stronger one
        return f"JobFlow {namespace}/{name} is already terminated (spec.shutdown: {before}): a stop changes nothing"
    if before == value:
        return f"JobFlow {namespace}/{name} is already {done if phase is JobFlowPhase.FAILED else going} " \
               f"(spec.shutdown: {value})"
    running = running_jobs(jobflow)
    if phase is JobFlowPhase.FAILED and not running:
        return (f"JobFlow {namespace}/{name} already ended Failed and none of its vcjobs runs (as its status says): "
                f"nothing to {verb}")
    cluster.merge_patch(JOBFLOW, namespace, name, {"spec": {"shutdown": value.value}})
    was = f" (it was {before})" if before else ""
    if phase is JobFlowPhase.FAILED:
        return (f"{doing} JobFlow: {namespace}/{name}{was}: it already ended Failed; its vcjobs that still run "
                f"({', '.join(running)}) are aborted; kubectl jobflow retry {name} runs it again")
    finals = "nothing new starts but its finally flows" if value is Shutdown.STOP else \
        "its finally flows too, and nothing new starts"
    return (f"{doing} JobFlow: {namespace}/{name}{was}: what runs is aborted, {finals}; it ends Failed "
            f"({reason.value}), then kubectl jobflow retry {name} runs it again")


def running_jobs(jobflow: JobFlow) -> list[str]:
    """The vcjobs of ``jobflow`` that have not ended, as its status records them: what a stop would abort."""
    return [record.name for record in (jobflow.status.job_status_list if jobflow.status else None) or ()
            if record.name and not is_final(record.state)]


def stoppable(jobflow: JobFlow) -> bool:
    """Whether :func:`set_shutdown` would find something to stop: the JobFlow has not ended, or it ended Failed
    with vcjobs still running."""
    phase = _phase(jobflow)
    return phase is not JobFlowPhase.SUCCEED and (phase is not JobFlowPhase.FAILED or bool(running_jobs(jobflow)))


@dataclass(frozen=True)
class Gate:
    """An approval gate of a JobFlow as it stands: what it asks, its answer, and whether it takes one now."""

    flow: str
    approval: Approval
    waiting: WaitingFlow | None
    """Its entry in ``status.waitingFlows``: the record an answer names is its ``jobName``."""
    answer: ApprovalRecord | None
    """The answer the engine recorded for its current record (the first answer; it stands)."""
    written: Answer | None
    """A person's answer to its current record, written and not recorded yet."""
    refusal: str | None
    """Why it takes no answer now (it already has one, it is not open yet, the JobFlow ended); None: it waits for
    one."""


def gate_of(jobflow: JobFlow, flow: str) -> Gate | None:
    """Flow ``flow`` of ``jobflow`` as an approval gate; None when it is no gate (or no flow)."""
    spec = gate_named(jobflow, flow)
    if spec is None or spec.approval is None:
        return None
    status = jobflow.status
    waiting = next((item for item in (status.waiting_flows if status else None) or () if item.name == flow), None)
    answers = [entry for entry in (status.approvals if status else None) or () if entry.flow == flow]
    if waiting is not None:
        answer = recorded(answers, waiting.job_name)
        written = annotated(jobflow).get(flow)
        written = written if written is not None and written.job_name == waiting.job_name and answer is None else None
    else:  # no longer waiting: the latest answer is its current record's (a rerun would make it wait again)
        answer, written = (answers[-1] if answers else None), None
    return Gate(flow=flow, approval=spec.approval, waiting=waiting, answer=answer, written=written,
                refusal=_refusal(jobflow, spec, waiting, answer, written))


def _refusal(jobflow: JobFlow, spec: Flow, waiting: WaitingFlow | None, answer: ApprovalRecord | None,
             written: Answer | None) -> str | None:
    flow = spec.name
    where = f'gate "{flow}" of JobFlow {jobflow.namespace}/{jobflow.name}'
    phase = _phase(jobflow)
    shutdown = jobflow.spec.shutdown
    if answer is not None:
        again = f" (kubectl jobflow retry {jobflow.name} asks it again once the JobFlow ended Failed)" \
            if answer.decision is ApprovalDecision.REJECTED else ""
        return f"{where} was already answered: {answer_words(answer)}; the first answer stands{again}"
    if written is not None:
        return f"{where} was already answered: {answer_words(written)}; the first answer stands"
    if phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
        again = f" (kubectl jobflow retry {jobflow.name} runs it again)" if phase is JobFlowPhase.FAILED else ""
        return f"{where} waits for no answer: the JobFlow already ended {phase}{again}"
    # The engine holds every flow of a JobFlow being stopped but its finally flows (terminated: those too).
    if shutdown is Shutdown.TERMINATE or (shutdown is Shutdown.STOP and not spec.final):
        return (f"{where} waits for no answer: the JobFlow is being {SHUTDOWN_WORDS[shutdown][2]} (spec.shutdown: "
                f"{shutdown}); once it ended Failed, kubectl jobflow retry {jobflow.name} runs it again")
    if waiting is None:
        skipped = next((item for item in (jobflow.status.skipped_flows if jobflow.status else None) or ()
                        if item.name == flow), None)
        if skipped is not None:
            return f"{where} waits for no answer: it will not run ({skipped.message or skipped.reason or 'skipped'})"
        if phase is None:
            return f"{where} waits for no answer yet: the engine has not planned the JobFlow yet"
        return f"{where} waits for no answer (see kubectl jobflow status {jobflow.name})"
    if waiting.waiting_for:
        said = f" ({waiting.message})" if waiting.message else ""
        return (f"{where} is not open yet: its dependencies are not met, it waits for "
                f"{', '.join(waiting.waiting_for)}{said}; it takes an answer once they are")
    return None


def answer_words(answer: ApprovalRecord | Answer) -> str:
    """An answer in words: recorded, ``Approved by alice at 2026-11-25T09:00:00Z: looks good``; written (an
    :class:`~jobflow_core.flows.gates.Answer` of the annotation), ``Approved by alice, which the engine records at its
    next look``."""
    said = f": {answer.message}" if answer.message else ""
    if isinstance(answer, Answer):
        return f"{answer.decision.value} by {describe(answer)}{said}, which the engine records at its next look"
    who = describe(answer_of(answer))
    when = f" at {answer.time:%Y-%m-%dT%H:%M:%SZ}" if answer.time else ""
    return f"{answer.decision.value} by {who}{when}{said}"


def answer_gate(cluster: Cluster, namespace: str, name: str, flow: str, decision: ApprovalDecision,
                message: str | None) -> str:
    """Approve or reject (``decision``) the approval gate ``flow`` of a JobFlow as the caller's Kubernetes user, with
    ``message`` saying why; what was done, in a sentence."""
    user: dict | None = None
    for _ in range(ANSWER_ATTEMPTS):
        current = cluster.find(JOBFLOW, namespace, name)
        if current is None:
            raise Refused(f'JobFlow "{namespace}/{name}" not found: check the name and the namespace (-n)')
        jobflow = JobFlow.model_validate(current)
        gate = gate_of(jobflow, flow)
        if gate is None:
            gates = [item.name for item in jobflow.spec.flows or () if item.approval is not None]
            known = f"its approval gates are {', '.join(gates)}" if gates else "it has no approval gate"
            if any(item.name == flow for item in jobflow.spec.flows or ()):
                raise Refused(f'flow "{flow}" of JobFlow {namespace}/{name} is no approval gate (it runs a vcjob): '
                              f"{known}")
            raise Refused(f'JobFlow {namespace}/{name} has no flow "{flow}": {known}')
        if gate.written is not None and gate.written.decision is decision:
            return (f'Gate "{flow}" of JobFlow {namespace}/{name} is already {decision.value.lower()} by '
                    f"{gate.written.user}: the engine records it at its next look")
        if gate.refusal is not None:
            raise Refused(gate.refusal)
        assert gate.waiting is not None
        user = user or cluster.whoami()
        username = user.get("username")
        if not username:
            raise Refused("the API server did not say who you are (SelfSubjectReview without a username): an "
                          "answer must name its user")
        if not may_answer(gate.approval, user=username, groups=user.get("groups") or ()):
            approvers = gate.approval.approvers
            allowed = "; ".join(f"{kind} {', '.join(names)}" for kind, names in
                                (("users", approvers.users if approvers else None),
                                 ("groups", approvers.groups if approvers else None)) if names)
            raise Refused(f'you ({username}) may not answer gate "{flow}" of JobFlow {namespace}/{name}: its '
                          f"approvers are {allowed}")
        job_name = gate.waiting.job_name
        text = answer_text(Answer(job_name=job_name, decision=decision, user=username, message=message or None))
        try:
            # The resourceVersion the checks above were made on: a JobFlow changed since fails the patch (409).
            cluster.merge_patch(JOBFLOW, namespace, name, {"metadata": {
                "resourceVersion": current["metadata"]["resourceVersion"],
                "annotations": {annotation_key(flow): text}}})
        except KubeError as error:
            if error.status != 409:
                raise
            continue
        then = ("what waits for it goes on" if decision is ApprovalDecision.APPROVED else
                "it counts as a failed flow")
        return (f'{decision.value} gate "{flow}" of JobFlow {namespace}/{name} as {username} (record {job_name}): '
                f"{then} at the engine's next look (follow it with kubectl jobflow status {name} --watch)")
    raise Refused(f"JobFlow {namespace}/{name} changed {ANSWER_ATTEMPTS} times while the answer was being written: "
                  "run the command again")


def _phase(jobflow: JobFlow) -> JobFlowPhase | None:
    return jobflow.status.state.phase if jobflow.status and jobflow.status.state else None
