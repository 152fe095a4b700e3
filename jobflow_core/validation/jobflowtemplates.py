"""Whether a JobFlowTemplate can start runs: its schedule, time zone, triggers, and the JobFlow each run would be.

Checked at admission (:mod:`jobflow_core.validation.review`), with the same messages the status would show:

* ``spec.schedule`` parses as a cron schedule and fires at least once in five years (``0 0 30 2 *`` never does),
  ``spec.timeZone`` is an IANA zone name (:mod:`jobflow_core.schedules.cron`);
* ``spec.jobFlow`` is a valid JobFlow spec (:func:`jobflow_core.validation.jobflows.validate`), checked as the run with
  the longest name (:data:`jobflow_core.schedules.runs.LONGEST_SUFFIX`), so that every run's vcjob names and labels are
  valid;
* each trigger has a unique name and a type, its ``condition`` and each ``parameters`` expression compile as CEL,
  and it sets only parameters ``spec.jobFlow.spec.parameters`` declares.
"""

from datetime import UTC, datetime

from jobflow_core.flows.conditions import compile_error
from jobflow_core.models import JobFlow, JobFlowTemplate
from jobflow_core.schedules.cron import CronError, parse
from jobflow_core.schedules.runs import LONGEST_SUFFIX
from jobflow_core.validation.jobflows import validate
from jobflow_core.vocabulary.spec_errors import SpecError

EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def validate_jobflowtemplate(template: JobFlowTemplate) -> list[SpecError]:
    """Every problem with ``template``'s spec."""
    return [*_schedule(template), *_run(template), *_triggers(template)]


def _schedule(template: JobFlowTemplate) -> list[SpecError]:
    spec = template.spec
    if not spec.schedule:
        if spec.time_zone:
            try:
                parse("* * * * *", time_zone=spec.time_zone)
            except CronError as error:
                return [SpecError("InvalidTimeZone", str(error), "fix spec.timeZone")]
        return []
    try:
        schedule = parse(spec.schedule, time_zone=spec.time_zone)
    except CronError as error:
        return [SpecError("InvalidSchedule", str(error), "fix spec.schedule or spec.timeZone")]
    if schedule.next_after(EPOCH) is None and schedule.next_after(datetime(2026, 1, 1, tzinfo=UTC)) is None:
        return [SpecError("InvalidSchedule", f"schedule {spec.schedule!r} never fires: no month has that day",
                          "name a day the months you chose have, e.g. '0 0 28 2 *' rather than '0 0 30 2 *'")]
    return []


def _run(template: JobFlowTemplate) -> list[SpecError]:
    run = JobFlow.model_validate({"metadata": {"name": template.name + LONGEST_SUFFIX,
                                               "namespace": template.namespace},
                                  "spec": template.spec.job_flow.spec.to_wire()})
    return [SpecError(error.code, f"spec.jobFlow: {error.message}",
                      error.hint + (f"; runs are named up to {template.name}{LONGEST_SUFFIX}: a shorter "
                                    "JobFlowTemplate name helps too" if error.code in NAME_CODES else ""))
            for error in validate(run)]


NAME_CODES = ("InvalidJobName", "LabelValueTooLong")


def _triggers(template: JobFlowTemplate) -> list[SpecError]:
    errors: list[SpecError] = []
    declared = {p.name for p in template.spec.job_flow.spec.parameters or ()}
    seen: set[str] = set()
    for trigger in template.spec.triggers or ():
        where = f"trigger {trigger.name!r}"
        if trigger.name in seen:
            errors.append(SpecError("DuplicateTrigger", f"{where} is defined twice", "give each trigger its own name"))
        seen.add(trigger.name)
        if not trigger.type:
            errors.append(SpecError("InvalidTrigger", f"{where} has no type",
                                    "set the CloudEvent type it starts a run for, e.g. com.example.data.ready"))
        expressions = [("condition", trigger.condition)] if trigger.condition else []
        expressions += [(f"parameters.{name}", text) for name, text in (trigger.parameters or {}).items()]
        for field, text in expressions:
            problem = compile_error(text)
            if problem:
                errors.append(SpecError("InvalidTrigger", f"{where}: {field} is {problem}",
                                        "write a CEL expression over `data`, `type`, `source`, `id`, `subject`, "
                                        "`time`, e.g. data.date"))
        unknown = sorted(set(trigger.parameters or {}) - declared)
        if unknown:
            errors.append(SpecError("InvalidTrigger", f"{where} sets undeclared parameter(s) {', '.join(unknown)}",
                                    "declare them in spec.jobFlow.spec.parameters (with a default value)"))
    return errors
