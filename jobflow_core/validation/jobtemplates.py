"""Checks a JobTemplate must pass before it is stored: the rules Volcano applies to the vcjob made from it.

A JobTemplate's spec *is* a vcjob spec, and Volcano checks a vcjob only when it is created, which for a flow is
long after the template was written. Upstream has no JobTemplate webhook at all (reference C.3): a bad template
was found out when the flow's vcjob was refused, and the JobFlow then hung with only a Warning event to show for
it. Here the same rules run when the template is created or updated, in this order:

1. the name: a JobTemplate is run by the flow of the same name, so its name is part of the vcjob name
   ``<jobflow>-<name>`` (a DNS-1123 label) and of the label value ``<namespace>.<name>`` (63 characters at most);
2. the job: ``minAvailable >= 0``, ``maxRetry >= 0``, ``ttlSecondsAfterFinished >= 0``, and at least one task;
3. each task, in spec order: a DNS-1123 name that no earlier task has (Volcano names an unnamed task
   ``default<index>``), ``replicas >= 0``, ``0 <= minAvailable <= replicas``, and well-formed policies;
4. the job's ``minAvailable`` is not above the sum of the tasks' replicas;
5. the job's policies: each has events or an exit code (not both); events and actions are ones Volcano accepts
   from users (its webhook's lists, reference A.4); no event or exit code is handled twice; ``*`` stands alone.

Messages keep the wording of Volcano's vcjob webhook (``job 'minAvailable' should not be greater than total
replicas in tasks``), so they read the same as what Volcano would have said, only earlier; each hint says what to
change. What Volcano checks with information a template does not have (the queue exists and is open, the pod
name ``<jobflow>-<name>-<task>-<index>`` fits in 63 characters, pod template validity) is left to Volcano.
"""

from collections.abc import Sequence

from jobflow_core.models import JobTemplate, LifecyclePolicy, TaskSpec
from jobflow_core.validation.jobflows import MAX_NAME_LENGTH, SpecError, is_dns1123_label, label_too_long
from jobflow_core.vocabulary.api import CREATED_BY_JOBTEMPLATE
from jobflow_core.vocabulary.naming import jobtemplate_label_value

VALID_EVENTS = ("*", "PodPending", "PodFailed", "PodEvicted", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated")
"""Policy events Volcano's webhook accepts from users; ``PodRunning``, ``OutOfSync``, ``CommandIssued`` are internal."""

VALID_ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
"""Policy actions Volcano's webhook accepts from users (``SyncJob``, ``EnqueueJob``, queue actions are internal)."""

ANY_EVENT = "*"


def validate_template(template: JobTemplate) -> list[SpecError]:
    """Every problem with ``template``, in the order described in the module docstring."""
    spec = template.spec
    tasks = spec.tasks or []
    errors = [*_name(template), *_job(template)]
    errors += _tasks(tasks)
    total = sum(task.replicas or 0 for task in tasks)
    if spec.min_available is not None and spec.min_available > total:
        errors.append(
            SpecError(
                code="InvalidJobSpec",
                message="job 'minAvailable' should not be greater than total replicas in tasks",
                hint=f"spec.minAvailable is {spec.min_available} but the tasks have {total} replicas in all: "
                "lower minAvailable or add replicas",
            )
        )
    errors += _policies(spec.policies or [], where="spec.policies")
    return errors


def _name(template: JobTemplate) -> list[SpecError]:
    errors = []
    if not is_dns1123_label(template.name):
        errors.append(
            SpecError(
                code="InvalidTemplateName",
                message=f'JobTemplate name "{template.name}" is not a DNS-1123 label '
                f"(at most {MAX_NAME_LENGTH} lowercase letters, digits and '-', "
                "starting and ending with a letter or digit)",
                hint="the flow of the same name runs it as vcjob <jobflow>-<name>, which must be such a label: "
                "rename the JobTemplate, without '.' or capitals",
            )
        )
    label = jobtemplate_label_value(namespace=template.namespace, flow=template.name)
    if len(label) > MAX_NAME_LENGTH:
        hint = "shorten the JobTemplate name (or use a shorter namespace)"
        errors.append(label_too_long(CREATED_BY_JOBTEMPLATE, label, hint=hint))
    return errors


def _job(template: JobTemplate) -> list[SpecError]:
    spec = template.spec
    errors = []
    if spec.min_available is not None and spec.min_available < 0:
        errors.append(_invalid("job 'minAvailable' must be >= 0", hint="set spec.minAvailable to 0 or more"))
    if spec.max_retry is not None and spec.max_retry < 0:
        hint = "set spec.maxRetry to 0 or more (Volcano's default is 3)"
        errors.append(_invalid("'maxRetry' cannot be less than zero", hint=hint))
    if spec.ttl_seconds_after_finished is not None and spec.ttl_seconds_after_finished < 0:
        errors.append(
            _invalid(
                "'ttlSecondsAfterFinished' cannot be less than zero",
                hint="set spec.ttlSecondsAfterFinished to 0 or more, or leave it out to keep finished vcjobs",
            )
        )
    if not spec.tasks:
        hint = "add at least one task (name, replicas, template) to spec.tasks"
        errors.append(_invalid("No task specified in job spec", hint=hint))
    return errors


def _tasks(tasks: Sequence[TaskSpec]) -> list[SpecError]:
    errors = []
    first_index: dict[str, int] = {}
    for index, task in enumerate(tasks):
        # Volcano's mutating webhook names an unnamed task "default<index>"; that name must be unique as well.
        name = task.name or f"default{index}"
        where = f"spec.tasks[{index}]"
        if task.name is not None and not is_dns1123_label(task.name):
            errors.append(
                _invalid(
                    f'task name "{task.name}" in {where} is not a DNS-1123 label',
                    hint="use at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit",
                )
            )
        if name in first_index:
            errors.append(
                _invalid(
                    f"duplicated task name {name}",
                    hint=f"{where} repeats spec.tasks[{first_index[name]}]: task names must be unique, rename one",
                )
            )
        else:
            first_index[name] = index
        errors += _replicas(task, name)
        errors += _policies(task.policies or [], where=f"{where}.policies")
    return errors


def _replicas(task: TaskSpec, name: str) -> list[SpecError]:
    replicas = task.replicas or 0
    if replicas < 0:
        return [_invalid(f"'replicas' < 0 in task: {name}", hint="set the task's replicas to 0 or more")]
    if task.min_available is None:
        return []
    if task.min_available < 0:
        return [_invalid(f"'minAvailable' < 0 in task: {name}", hint="set the task's minAvailable to 0 or more")]
    if task.min_available > replicas:
        return [
            _invalid(
                f"'minAvailable' is greater than 'replicas' in task: {name}",
                hint=f"the task has replicas {replicas} and minAvailable {task.min_available}: "
                "lower minAvailable or raise replicas",
            )
        ]
    return []


def _policies(policies: Sequence[LifecyclePolicy], *, where: str) -> list[SpecError]:
    """The rules of Volcano's ``validatePolicies`` for one list of policies (job level, or one task's)."""
    errors = []
    events_seen: set[str] = set()
    exit_codes_seen: set[int] = set()
    valid_events = f"valid events are {', '.join(VALID_EVENTS)}"
    valid_actions = f"valid actions are {', '.join(VALID_ACTIONS)}"
    for index, policy in enumerate(policies):
        at = f"{where}[{index}]"
        events = list(dict.fromkeys([*(policy.events or []), *([policy.event] if policy.event else [])]))
        if events and policy.exit_code is not None:
            errors.append(
                _invalid(
                    f"must not specify event and exitCode simultaneously in {at}",
                    hint="split it into one policy for the events and one for the exit code",
                )
            )
            continue
        if not events and policy.exit_code is None:
            errors.append(
                _invalid(
                    f"either event and exitCode should be specified in {at}",
                    hint=f"give the policy an event (or events) or an exitCode to react to; {valid_events}",
                )
            )
            continue
        if policy.action is not None or events:
            if policy.action not in VALID_ACTIONS:
                errors.append(_invalid(f'invalid policy action "{policy.action or ""}" in {at}', hint=valid_actions))
        for event in events:
            if event not in VALID_EVENTS:
                errors.append(_invalid(f'invalid policy event "{event}" in {at}', hint=valid_events))
            elif event in events_seen:
                errors.append(
                    _invalid(
                        f"duplicate event {event} across different policy in {where}",
                        hint="handle each event in one policy only",
                    )
                )
            events_seen.add(event)
        if policy.exit_code is not None:
            if policy.exit_code == 0:
                errors.append(
                    _invalid(f"0 is not a valid error code in {at}", hint="exit code 0 is success: use a non-zero code")
                )
            elif policy.exit_code in exit_codes_seen:
                errors.append(
                    _invalid(
                        f"duplicate exitCode {policy.exit_code} in {where}",
                        hint="handle each exit code in one policy only",
                    )
                )
            exit_codes_seen.add(policy.exit_code)
    if ANY_EVENT in events_seen and len(events_seen) > 1:
        errors.append(
            _invalid(
                f"if there's * here, no other policy should be here ({where})",
                hint="'*' already matches every event: remove the other event policies or replace '*' by them",
            )
        )
    return errors


def _invalid(message: str, *, hint: str) -> SpecError:
    return SpecError(code="InvalidJobSpec", message=message, hint=hint)
