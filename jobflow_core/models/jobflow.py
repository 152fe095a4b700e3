"""The JobFlow (``flow.volcano.sh/v1alpha1``): a DAG of flows, each one a vcjob made from a JobTemplate.

The spec is a list of flows. A flow is named after the JobTemplate it runs and may depend on other flows
(``dependsOn.targets``); by default it starts once every target's vcjob is Completed. Ours, additive and optional
(a JobFlow written for upstream never sets them): ``dependsOn.outcome`` (wait for the targets to succeed, to fail,
or just to finish), ``finally`` (a flow that runs once every other flow has ended), ``spec.failurePolicy``
(fail fast, or keep going after a failure nothing handles), ``spec.suspend``, ``spec.parameters``,
``forEach`` (one vcjob per item) and ``repeat`` (iterations until a condition holds).

The status is what ``kubectl get jf -o yaml`` shows and what other tools read, so its JSON names are upstream's
exactly, including the misspelt ``unKnowJobs`` and the ``createTime`` of a condition. We add a few fields that
upstream clients ignore and that answer "why is nothing happening?" (each marked "ours, additive" below).
"""

from enum import StrEnum
from typing import Any

from pydantic import Field

from jobflow_core.models.base import ApiObject, Timestamp, WireModel
from jobflow_core.models.vcjob import Cost, JobSpec, TaskState, VcJobPhase


class JobFlowPhase(StrEnum):
    """``status.state.phase``. Upstream spells the success phase ``Succeed``."""

    SUCCEED = "Succeed"
    TERMINATING = "Terminating"
    FAILED = "Failed"
    RUNNING = "Running"
    PENDING = "Pending"
    SUSPENDED = "Suspended"
    """Ours: ``spec.suspend`` holds every flow that has not started yet."""


class AwaitedOutcome(StrEnum):
    """``dependsOn.outcome``, ours: what a flow waits for its targets to do. Unset behaves like ``Succeeded``."""

    SUCCEEDED = "Succeeded"
    """Every target Completed (upstream's only behaviour)."""
    FAILED = "Failed"
    """One of the targets ended Failed, Terminated or Aborted: an error handler."""
    FINISHED = "Finished"
    """Every target ended, whatever the outcome (Skipped included): a cleanup."""


class FailurePolicy(StrEnum):
    """``spec.failurePolicy``, ours: what a failure that no flow handles does. Unset behaves like ``FailFast``."""

    FAIL_FAST = "FailFast"
    """The JobFlow is Failed at once and starts nothing new but its ``finally`` flows (upstream's behaviour)."""
    KEEP_GOING = "KeepGoing"
    """Every branch that does not need the failed flow runs on; the JobFlow ends Failed when all has ended."""


class RetainPolicy(StrEnum):
    """What happens to the vcjobs of a Succeed JobFlow. Unset behaves like ``retain``."""

    RETAIN = "retain"
    DELETE = "delete"


class HttpHeader(WireModel):
    name: str | None = None
    value: str | None = None


class HttpGet(WireModel):
    task_name: str | None = Field(None, alias="taskName")
    path: str | None = None
    port: int | None = None
    http_header: HttpHeader | None = Field(None, alias="httpHeader")


class TcpSocket(WireModel):
    task_name: str | None = Field(None, alias="taskName")
    port: int | None = None


class TaskStatus(WireModel):
    """A probe that waits for a task of the target vcjob to reach ``phase``."""

    task_name: str | None = Field(None, alias="taskName")
    phase: str | None = None


class Probe(WireModel):
    http_get_list: list[HttpGet] | None = Field(None, alias="httpGetList")
    tcp_socket_list: list[TcpSocket] | None = Field(None, alias="tcpSocketList")
    task_status_list: list[TaskStatus] | None = Field(None, alias="taskStatusList")
    timeout_seconds: int | None = Field(None, alias="timeoutSeconds")
    """Ours: give up (the flow is Skipped) when the probe has not passed this long after its last target's vcjob
    was created."""


class JobFlowDependency(WireModel):
    """Ours: another JobFlow of the same namespace to wait for (:mod:`jobflow_core.dag.awaits`): the one named
    ``name``, or the newest run of the JobFlowTemplate ``template`` created at most ``withinSeconds`` before this
    JobFlow (or after it). What it binds to is recorded in ``status.awaitedJobFlows`` and never chosen again."""

    name: str | None = None
    template: str | None = None
    within_seconds: int | None = Field(None, alias="withinSeconds")
    """For ``template``: how old a run may be (created this long before this JobFlow at most); unset: any run."""
    timeout_seconds: int | None = Field(None, alias="timeoutSeconds")
    """The dependency fails when it has not ended this long after this JobFlow was created."""


class DependsOn(WireModel):
    """``targets`` are names of other flows in the same JobFlow; ``outcome`` (ours) what to wait for them to do;
    ``jobFlows`` (ours) other JobFlows waited for the same way, as if they were targets."""

    targets: list[str] | None = None
    probe: Probe | None = None
    outcome: AwaitedOutcome | None = None
    job_flows: list[JobFlowDependency] | None = Field(None, alias="jobFlows")


class JobFlowDependsOn(WireModel):
    """Ours: ``spec.dependsOn``, other JobFlows the whole JobFlow waits for: a dependency of each flow that has no
    targets (and is not ``finally``), with ``outcome`` unless the flow says its own."""

    job_flows: list[JobFlowDependency] | None = Field(None, alias="jobFlows")
    outcome: AwaitedOutcome | None = None


class Backoff(WireModel):
    """How long to wait before each retry: ``delaySeconds`` times ``factor`` per earlier retry, at most
    ``maxDelaySeconds`` (defaults in :mod:`jobflow_core.flows.retries`)."""

    delay_seconds: int | None = Field(None, alias="delaySeconds")
    factor: float | None = None
    max_delay_seconds: int | None = Field(None, alias="maxDelaySeconds")


class Retry(WireModel):
    """Ours: run a flow's vcjob again when it ends in one of ``retryOn`` (default Failed, Terminated, Aborted),
    at most ``limit`` more times, after a backoff."""

    limit: int
    retry_on: list[VcJobPhase] | None = Field(None, alias="retryOn")
    backoff: Backoff | None = None


class RetryStrategy(StrEnum):
    """``retryPolicy.policy``, as upstream's proposal (volcano-sh/apis PR #191) spells it. Unset: ``OnFailure``."""

    ALWAYS = "Always"
    """Run again whatever the end, success included (up to ``maxRetries`` more times)."""
    ON_FAILURE = "OnFailure"
    """Run again only after a failure (Failed, Terminated, Aborted)."""
    NEVER = "Never"


class BackoffType(StrEnum):
    CONSTANT = "Constant"
    EXPONENTIAL = "Exponential"


class BackoffPolicy(WireModel):
    """``retryPolicy.backoff`` of upstream's proposal: durations as ``metav1.Duration`` strings (``30s``, ``5m``)."""

    type: BackoffType | None = None
    base_delay: str | None = Field(None, alias="baseDelay")
    max_delay: str | None = Field(None, alias="maxDelay")


class RetryPolicy(WireModel):
    """Upstream's proposed shape (volcano-sh/apis PR #191, design doc volcano#4567), accepted as ``spec.retryPolicy``
    (the JobFlow-wide default) and ``flows[].retryPolicy``; a flow's own ``retry`` wins over both
    (:func:`jobflow_core.flows.retries.effective_retry`)."""

    max_retries: int | None = Field(None, alias="maxRetries")
    policy: RetryStrategy | None = None
    backoff: BackoffPolicy | None = None


class Range(WireModel):
    """``forEach.range``: the numbers ``start``, ``start + step``, ... up to ``end`` included (or ``count`` of them)."""

    start: int | None = None
    end: int | None = None
    count: int | None = None
    step: int | None = None


class ForEach(WireModel):
    """Ours: run the flow once per item, each item its own vcjob (:mod:`jobflow_core.flows.items`); exactly one
    source."""

    items: list[Any] | None = None
    """A literal list: strings, numbers or objects."""
    range: Range | None = None
    param: str | None = None
    """A parameter whose value is a JSON list."""
    result: str | None = None
    """A target whose result (termination message) is a JSON list."""
    parallelism: int | None = None
    """At most this many items run at once (unset: all)."""


class Repeat(WireModel):
    """Ours: run the flow again, one iteration after another, until ``until`` (CEL) holds on the last result or
    ``limit`` iterations have run (:mod:`jobflow_core.flows.loops`)."""

    until: str
    limit: int


class Memoize(WireModel):
    """Ours: reuse a Completed run of this flow whose key is the same, within ``maxAge``
    (:mod:`jobflow_core.flows.memo`)."""

    key: str | None = None
    """A CEL expression whose value (a string) is the key; unset: a hash of the rendered vcjob spec."""
    max_age: str | None = Field(None, alias="maxAge")
    """How old a run may be to be reused, a Kubernetes duration (``12h``); unset: 24h."""


class Parameter(WireModel):
    """Ours: a named value that ``patch.jobSpec`` strings (``{{params.NAME}}``) and conditions read."""

    name: str
    value: str | None = None
    description: str | None = None


class ApprovalDecision(StrEnum):
    """An approval gate's answer (:mod:`jobflow_core.flows.gates`)."""

    APPROVED = "Approved"
    """The gate's flow Completed: what waits for it to succeed goes on."""
    REJECTED = "Rejected"
    """The gate's flow failed: ``outcome: Failed`` handlers run, ``finally`` flows see a failure."""


class Approvers(WireModel):
    """Who may answer a gate with ``kubectl jobflow approve|reject`` or the dashboard: their Kubernetes user name
    (as the API server authenticated them, checked by the admission webhook) or one of their groups. Unset: anyone
    allowed to update the JobFlow."""

    users: list[str] | None = None
    groups: list[str] | None = None


class ApprovalSource(WireModel):
    """A CloudEvent that may answer a gate at ``/trigger``: its ``type`` exactly and, if set, its ``source``."""

    type: str
    source: str | None = None


class Approval(WireModel):
    """Ours: the flow runs no vcjob; once its dependencies are met it waits until someone approves it (it then
    counts as Completed) or rejects it (Failed), see :mod:`jobflow_core.flows.gates`."""

    message: str | None = None
    """What the approver should check, shown while the gate waits."""
    approvers: Approvers | None = None
    events: list[ApprovalSource] | None = None
    """The CloudEvents that may answer the gate (unset: only events signed with the engine's key)."""
    timeout_seconds: int | None = Field(None, alias="timeoutSeconds")
    """How long after the gate opened (its dependencies were met) it waits for an answer; unset: for ever."""
    on_timeout: ApprovalDecision | None = Field(None, alias="onTimeout")
    """The answer the timeout gives; unset: ``Rejected``."""


class Shutdown(StrEnum):
    """``spec.shutdown``, ours, as Argo Workflows' ``spec.shutdown``: end a JobFlow that runs."""

    STOP = "Stop"
    """Abort what runs, start nothing new but the ``finally`` flows, end Failed (reason ``Stopped``)."""
    TERMINATE = "Terminate"
    """Abort what runs, ``finally`` flows included, start nothing, end Failed (reason ``Terminated``)."""


class Patch(WireModel):
    job_spec: JobSpec | None = Field(None, alias="jobSpec")


class ChildJobFlow(WireModel):
    """Ours: the flow's work is a child JobFlow, made from the JobFlowTemplate ``template`` (of the same namespace)
    with ``parameters`` (each one the template declares; unset ones keep the template's value). The child is a
    real JobFlow the parent controls (:mod:`jobflow_core.flows.children`); the flow's phase follows the child's, and
    its result is the child's ``status.outputs``."""

    template: str
    parameters: list[Parameter] | None = None
    """Values may hold ``{{params.NAME}}``, ``{{item}}``, ``{{index}}`` and ``{{targets.NAME.result...}}``."""


class Flow(WireModel):
    """One node of the DAG; ``name`` is also the name of the JobTemplate it runs, unless ``jobTemplate`` names
    another."""

    name: str
    job_template: str | None = Field(None, alias="jobTemplate")
    """Ours: the JobTemplate this flow runs (unset: the one named like the flow, upstream's rule), so one template
    can run under several flow names in one JobFlow."""
    depends_on: DependsOn | None = Field(None, alias="dependsOn")
    patch: Patch | None = None
    final: bool | None = Field(None, alias="finally")
    """Ours: the flow runs once every flow that is not ``finally`` has ended, whatever the outcome."""
    retry: Retry | None = None
    retry_policy: RetryPolicy | None = Field(None, alias="retryPolicy")
    """Upstream's proposed shape of ``retry`` (:class:`RetryPolicy`); ``retry`` wins when both are set."""
    when: str | None = None
    """Ours: a CEL condition, evaluated once the dependencies are met: false skips the flow
    (:mod:`jobflow_core.flows.conditions`)."""
    timeout_seconds: int | None = Field(None, alias="timeoutSeconds")
    """Ours: an attempt still running this long after its vcjob was created is aborted (it then ends Aborted)."""
    for_each: ForEach | None = Field(None, alias="forEach")
    repeat: Repeat | None = None
    memoize: Memoize | None = None
    approval: Approval | None = None
    """Ours: an approval gate instead of a vcjob (no JobTemplate is read); see :class:`Approval`."""
    job_flow: ChildJobFlow | None = Field(None, alias="jobFlow")
    """Ours: a child JobFlow instead of a vcjob (no JobTemplate is read); see :class:`ChildJobFlow`."""


class Output(WireModel):
    """Ours: one of ``spec.outputs``, a value the JobFlow hands to whoever reads it (its parent, as the result of
    the flow that made it): ``value`` with its ``{{targets.NAME.result...}}`` and ``{{params.NAME}}`` placeholders
    replaced once the JobFlow succeeded (:mod:`jobflow_core.flows.children`)."""

    name: str
    value: str
    description: str | None = None


class JobFlowSpec(WireModel):
    flows: list[Flow] | None = None
    job_retain_policy: RetainPolicy | None = Field(None, alias="jobRetainPolicy")
    failure_policy: FailurePolicy | None = Field(None, alias="failurePolicy")
    parameters: list[Parameter] | None = None
    suspend: bool | None = None
    """Ours: start nothing new (what runs keeps running) until it is set back to false."""
    whole_flow_admission: bool | None = Field(None, alias="wholeFlowAdmission")
    """Ours: start only when the Volcano queue has room for the widest stage (the flows of one DAG level together),
    and keep that room until the JobFlow ends, so that it never stalls half-way (:mod:`jobflow_core.queueing.line`)."""
    active_deadline_seconds: int | None = Field(None, alias="activeDeadlineSeconds")
    """Ours: this long after the JobFlow was created, whatever still runs is aborted and the JobFlow fails."""
    retry_policy: RetryPolicy | None = Field(None, alias="retryPolicy")
    """Upstream's proposal: the retries of every flow that sets none of its own."""
    shutdown: Shutdown | None = None
    """Ours: ``Stop`` or ``Terminate`` the JobFlow (:class:`Shutdown`); a rerun request clears it
    (``kubectl jobflow retry`` removes it)."""
    depends_on: JobFlowDependsOn | None = Field(None, alias="dependsOn")
    """Ours: other JobFlows to wait for before any flow starts (:class:`JobFlowDependsOn`)."""
    outputs: list[Output] | None = None
    """Ours: what the JobFlow hands out once it succeeded (``status.outputs``): its parent reads them as the result
    of the flow that made it, ``{{targets.FLOW.result.NAME}}``."""
    deadline: Timestamp | None = None
    """Ours: when the JobFlow should have succeeded. Unlike ``activeDeadlineSeconds`` it fails nothing: the status
    says whether it is on time, at risk or missed, and an at-risk JobFlow is steered ahead
    (:mod:`jobflow_core.queueing.deadline`)."""


class JobRunningHistory(WireModel):
    """A span of time a vcjob spent in one phase; the current span has no ``endTimestamp``."""

    start_timestamp: Timestamp | None = Field(None, alias="startTimestamp")
    end_timestamp: Timestamp | None = Field(None, alias="endTimestamp")
    state: VcJobPhase | None = None


class FlowJobStatus(WireModel):
    """Upstream's flow ``JobStatus``: the record of one vcjob the JobFlow created, kept after it is gone."""

    name: str | None = None
    state: VcJobPhase | None = None
    start_timestamp: Timestamp | None = Field(None, alias="startTimestamp")
    end_timestamp: Timestamp | None = Field(None, alias="endTimestamp")
    restart_count: int | None = Field(None, alias="restartCount")
    running_histories: list[JobRunningHistory] | None = Field(None, alias="runningHistories")
    attempt: int | None = None
    """Ours, for a flow with ``retry``: which attempt of its flow this vcjob is (1 for the first)."""
    reason: str | None = None
    """Ours, for a flow with ``retry``: why the vcjob ended as it did (its ``status.state.reason``)."""
    result: str | None = None
    """Ours: the vcjob's result, its pods' termination message, once a condition needed it (kept after the pods go)."""
    cost: Cost | None = None
    """Ours, once it ended: its gang's requests x the seconds it ran (:mod:`jobflow_core.insight.cost`)."""
    cached_from: str | None = Field(None, alias="cachedFrom")
    """Ours, for a memoized flow that was not run: the vcjob (``<namespace>/<name>``) whose Completed run it reused;
    its ``reason`` is ``Cached`` and no vcjob of this name was created."""


class FlowCondition(WireModel):
    """Upstream's flow ``Condition``, one per vcjob name. Note the JSON name ``createTime``."""

    phase: VcJobPhase | None = None
    create_time: Timestamp | None = Field(None, alias="createTime")
    running_duration: str | None = Field(None, alias="runningDuration")
    task_status_count: dict[str, TaskState] | None = Field(None, alias="taskStatusCount")


class FlowState(WireModel):
    """``status.state``.

    ``reason`` and ``message`` are ours, additive: why the JobFlow is blocked or failed (a CamelCase reason such
    as ``TemplateNotFound`` and a sentence saying what to do); omitted when nothing is wrong.
    """

    phase: JobFlowPhase | None = None
    reason: str | None = None
    message: str | None = None


class WaitingFlow(WireModel):
    """Ours, additive: a flow whose vcjob does not exist yet, what it waits for and why.

    ``waitingFor`` lists the target flows that are not Completed yet (or whose probe has not passed yet);
    ``message`` says in words what holds the flow back (unfinished targets, a probe, a missing JobTemplate, a name
    conflict, a failed JobFlow); ``recheckSeconds`` is set while a probe is waited for: the event source (or the
    periodic resync) wakes the handler that often to look again.
    """

    name: str
    job_name: str = Field(alias="jobName")
    waiting_for: list[str] | None = Field(None, alias="waitingFor")
    message: str | None = None
    recheck_seconds: int | None = Field(None, alias="recheckSeconds")
    expected_start: Timestamp | None = Field(None, alias="expectedStart")
    """Ours: when it is expected to start, from earlier runs of the JobTemplates before it
    (:mod:`jobflow_core.insight.eta`)."""


class Estimate(WireModel):
    """Ours: how long one vcjob of a flow is expected to run (its JobTemplate's median when the JobFlow first saw
    it); no ``seconds``: unknown (the template never ran)."""

    flow: str
    seconds: int | None = None


class SkippedFlow(WireModel):
    """Ours, additive: a flow that will never run, because what it depends on can no longer happen."""

    name: str
    job_name: str = Field(alias="jobName")
    reason: str | None = None
    message: str | None = None


class Rerun(WireModel):
    """Ours, additive: the last rerun request handled (``flow.volcano.sh/rerun``), and from which attempt each flow
    it ran again counts (see :mod:`jobflow_core.dag.reruns`)."""

    id: str
    from_attempt: dict[str, int] | None = Field(None, alias="fromAttempt")
    message: str | None = None
    accepted_at: Timestamp | None = Field(None, alias="acceptedAt")
    """When the engine accepted it (the first plan that saw it)."""
    child_reruns: dict[str, str] | None = Field(None, alias="childReruns")
    """The failed child JobFlows (by name) asked to rerun their own failed flows, and the request id each was
    given (:mod:`jobflow_core.flows.children`)."""


class ApprovalRecord(WireModel):
    """Ours: how an approval gate was answered, recorded once (the first answer wins and never changes): who (the
    Kubernetes user of ``kubectl jobflow approve``, or the CloudEvent's source and id), when, and why."""

    flow: str
    job_name: str = Field(alias="jobName")
    """The gate's record in ``jobStatusList`` this answers (a rerun makes a new one)."""
    decision: ApprovalDecision
    user: str | None = None
    source: str | None = None
    event_id: str | None = Field(None, alias="eventId")
    timed_out: bool | None = Field(None, alias="timedOut")
    time: Timestamp | None = None
    message: str | None = None


class FanOutStatus(WireModel):
    """Ours: one ``forEach`` flow's items, summarised (:mod:`jobflow_core.planning.status`): a fan-out of hundreds stays
    readable, and its per-item detail bounded."""

    name: str
    total: int
    succeeded: int = 0
    failed: int = 0
    running: int = 0
    waiting: int = 0
    failed_indexes: str | None = Field(None, alias="failedIndexes")
    """The failed items' indexes as ranges, like a Kubernetes Indexed Job's ``failedIndexes``: ``"3,7,10-12"``."""
    first_error: str | None = Field(None, alias="firstError")


class Notification(WireModel):
    """Ours: a CloudEvent recorded with the transition it announces, waiting to be delivered
    (:mod:`jobflow_core.planning.notifications`). ``source`` is the JobFlow's, so it is not stored."""

    id: str
    type: str
    subject: str
    time: Timestamp | None = None
    data: dict[str, Any] | None = None


class Notifications(WireModel):
    """Ours: ``status.notifications``, the CloudEvents out that are not delivered yet, and how many were recorded
    (ids are ``<uid>.<sequence>``) or dropped (more than 100 pending)."""

    sequence: int = 0
    pending: list[Notification] | None = None
    dropped: int | None = None


class AwaitedJobFlow(WireModel):
    """Ours: ``status.awaitedJobFlows[]``, one JobFlow dependency (:mod:`jobflow_core.dag.awaits`). ``name`` is the
    dependency (``JobFlow/<name>`` or ``JobFlowTemplate/<name>``); ``jobFlow`` and ``uid`` the run it is bound to,
    once chosen (never chosen again); ``phase`` and ``endTimestamp`` how that run ended, once seen (kept after it is
    deleted); ``reason`` why the dependency failed without it ending (``TimedOut``, ``Deleted``, ``Cycle``)."""

    name: str
    job_flow: str | None = Field(None, alias="jobFlow")
    uid: str | None = None
    bound_at: Timestamp | None = Field(None, alias="boundAt")
    phase: JobFlowPhase | None = None
    end_timestamp: Timestamp | None = Field(None, alias="endTimestamp")
    reason: str | None = None
    message: str | None = None


class QueueStatus(WireModel):
    """Ours: where the JobFlow stands in its Volcano queue (:mod:`jobflow_core.queueing.line`). ``state`` is
    ``Waiting`` (not started: no room yet; ``position`` 1 is next, ``requests`` what its first stages need) or
    ``Admitted`` (started; ``reserved`` is what its unfinished vcjobs' gangs request, which newer JobFlows leave
    free)."""

    name: str
    state: str | None = None
    position: int | None = None
    requests: dict[str, str] | None = None
    reserved: dict[str, str] | None = None
    message: str | None = None
    expected_seconds: int | None = Field(None, alias="expectedSeconds")
    """While ``Waiting``: how long it is expected to run once started (its critical path, from earlier runs), which
    the JobFlows behind it read to forecast their own start (:mod:`jobflow_core.queueing.outlook`)."""


class DeadlineStatus(WireModel):
    """Ours: ``status.deadline``, how the JobFlow stands against ``spec.deadline``
    (:mod:`jobflow_core.queueing.deadline`). ``state``: ``OnTime``, ``AtRisk``, ``Missed``, ``Met`` or ``Unknown``
    (no forecast); ``since`` when it took that state, and ``expectedCompletion`` and ``message`` the forecast then
    (kept until the state changes, so that a status is written only when something happens)."""

    at: Timestamp
    state: str
    since: Timestamp | None = None
    expected_completion: Timestamp | None = Field(None, alias="expectedCompletion")
    message: str | None = None


class JobFlowStatus(WireModel):
    """``status``. Upstream's fields, with upstream's JSON names, then ours.

    Ours, additive: ``progress`` (``"<ended flows>/<flows>"``, e.g. ``"3/5"``, for a printer column: flows that
    Completed, were Skipped, or failed and were handled), ``waitingFlows`` (see :class:`WaitingFlow`),
    ``skippedFlows`` (see :class:`SkippedFlow`), ``fanOuts`` (see :class:`FanOutStatus`), ``observedGeneration`` (the
    ``metadata.generation`` this status was computed from), and ``state.reason``/``state.message`` (see
    :class:`FlowState`).
    """

    pending_jobs: list[str] | None = Field(None, alias="pendingJobs")
    running_jobs: list[str] | None = Field(None, alias="runningJobs")
    failed_jobs: list[str] | None = Field(None, alias="failedJobs")
    completed_jobs: list[str] | None = Field(None, alias="completedJobs")
    terminated_jobs: list[str] | None = Field(None, alias="terminatedJobs")
    un_know_jobs: list[str] | None = Field(None, alias="unKnowJobs")
    job_status_list: list[FlowJobStatus] | None = Field(None, alias="jobStatusList")
    conditions: dict[str, FlowCondition] | None = None
    state: FlowState | None = None
    progress: str | None = None
    flows_ended: int | None = Field(None, alias="flowsEnded")
    """Ours: ``progress``'s numerator as a number (kube-state-metrics exports numbers only)."""
    flows_total: int | None = Field(None, alias="flowsTotal")
    """Ours: ``progress``'s denominator as a number."""
    waiting_flows: list[WaitingFlow] | None = Field(None, alias="waitingFlows")
    skipped_flows: list[SkippedFlow] | None = Field(None, alias="skippedFlows")
    fan_outs: list[FanOutStatus] | None = Field(None, alias="fanOuts")
    failure_rate: float | None = Field(None, alias="failureRate")
    """Ours: failed vcjobs over vcjobs that ended, every attempt and item counted."""
    estimates: list[Estimate] | None = None
    expected_completion: Timestamp | None = Field(None, alias="expectedCompletion")
    critical_path: list[str] | None = Field(None, alias="criticalPath")
    recheck_seconds: int | None = Field(None, alias="recheckSeconds")
    """Ours: while a deadline or timeout is pending, how often to look again (like ``waitingFlows[]``'s)."""
    rerun: Rerun | None = None
    approvals: list[ApprovalRecord] | None = None
    """Ours: the answers of the approval gates (:class:`ApprovalRecord`)."""
    notifications: Notifications | None = None
    observed_generation: int | None = Field(None, alias="observedGeneration")
    cost: Cost | None = None
    """Ours: the ``cost`` of every vcjob the JobFlow recorded, added up."""
    outputs: dict[str, str] | None = None
    """Ours: ``spec.outputs``, worked out once the JobFlow succeeded (:mod:`jobflow_core.flows.children`)."""
    end_timestamp: Timestamp | None = Field(None, alias="endTimestamp")
    """Ours: when the JobFlow ended (Succeed or Failed): its last record's end, else when the engine saw it end. A
    parent reads it as the end of its child's run (retry backoffs, gate timeouts, its own records)."""
    awaited_job_flows: list[AwaitedJobFlow] | None = Field(None, alias="awaitedJobFlows")
    """Ours: the other JobFlows this one waits for, what each is bound to and how it ended (:class:`AwaitedJobFlow`)."""
    deadline: DeadlineStatus | None = None
    """Ours: on time, at risk or missed against ``spec.deadline`` (:class:`DeadlineStatus`)."""
    queue: QueueStatus | None = None
    """Ours: the JobFlow in its Volcano queue, written when the engine knows the queue (a JobFlow whose flows have
    all started or ended keeps the last one)."""


class JobFlow(ApiObject):
    spec: JobFlowSpec = Field(default_factory=JobFlowSpec)
    status: JobFlowStatus | None = None
