"""``run`` and ``history``: start a JobFlowTemplate's run by hand, and list its runs with what started each.

``run NAME [-p K=V ...]`` creates the JobFlow a run of JobFlowTemplate ``NAME`` is (its ``spec.jobFlow``, the
parameters given set; naming one it does not declare is an error that lists those it does), named
``<NAME>-m<seconds since epoch>``, labelled and owned as the engine's own runs are (:mod:`jobflow_core.schedules.runs`):
the same JobFlow the engine would make, so the engine runs it at once and the template's history, limits and
``status.lastRun`` count it. As for ``kubectl create job --from=cronjob/x``, the schedule's ``suspend`` and
``concurrencyPolicy`` do not hold a run by hand. The write is :func:`apiclient.steering.start_run`'s, which the
dashboard's Run now button makes too.

``history NAME`` lists the runs (JobFlows labelled ``flow.volcano.sh/jobflow-template=NAME``), oldest first: name,
what started it (the scheduled time, the trigger and event id, or ``manual``), phase, start (age) and duration.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from apiclient.steering import start_run
from display.times import age, human_duration
from jobflow_core.models import format_time
from jobflow_core.schedules.runs import Cause, Run, run_from, run_of_template_selector
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE
from kubectl_jobflow import exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.formats import per_object
from kubectl_jobflow.output import columns, objects_text, resource_of, utc_now, without_managed_fields
from kubectl_jobflow.run_options import parse_parameters

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context

HEADERS = ("RUN", "STARTED-BY", "PHASE", "START", "DURATION")


def _template(ctx: Context) -> dict:
    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError(f"name the JobFlowTemplate: kubectl jobflow {ctx.args.verb} NAME", code=exits.USAGE)
    found = ctx.cluster.find(JOBFLOWTEMPLATE, ctx.namespace, name)
    if found is None:
        raise CommandError(f'JobFlowTemplate "{ctx.namespace}/{name}" not found: check the name and the namespace '
                           "(-n); kubectl get jft lists them")
    return found


def run(ctx: Context) -> int:
    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError(f"name the JobFlowTemplate: kubectl jobflow {ctx.args.verb} NAME", code=exits.USAGE)
    started = start_run(ctx.cluster, ctx.namespace, name, parse_parameters(ctx.args.param), now=utc_now())
    ctx.say(f"Started run: {ctx.namespace}/{started} (JobFlowTemplate {name}); follow it with "
            f"kubectl jobflow status {started} --watch")
    return 0


def started_by(run: Run) -> str:
    """What started a run, in a few words."""
    if run.cause == Cause.SCHEDULE.value and run.scheduled is not None:
        return f"schedule {format_time(run.scheduled)}"
    if run.cause == Cause.EVENT.value:
        return f"event {run.event_id} ({run.trigger})"
    return run.cause or "-"


def duration(run: Run, *, now: datetime) -> str:
    if run.created is None:
        return "-"
    end = run.ended if run.finished and run.ended is not None else now
    return human_duration(max(0.0, (end - run.created).total_seconds()))


def rows(raws: list[dict], *, now: datetime) -> list[list[str]]:
    runs = sorted((run_from(raw) for raw in raws), key=lambda r: (r.created or now, r.name))
    return [[run.name, started_by(run), run.phase.value if run.phase else "Pending", age(run.created, now=now),
             duration(run, now=now)] for run in runs]


def history(ctx: Context) -> int:
    template = _template(ctx)
    name = template["metadata"]["name"]
    listed = ctx.cluster.list(JOBFLOW, ctx.namespace, label_selector=run_of_template_selector(name))["items"]
    output = ctx.args.output
    if not listed and per_object(output):
        ctx.say(f"JobFlowTemplate {ctx.namespace}/{name} has no runs (kept: the history limits delete older ones)")
        return 0
    now = utc_now()
    shown = [{"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind, **without_managed_fields(raw)}
             for raw in sorted(listed, key=lambda raw: raw["metadata"].get("creationTimestamp") or "")]
    ctx.write(objects_text(shown, output, resource=resource_of(JOBFLOW), layout=columns,
                           table=lambda objs, _wide: (HEADERS, rows(objs, now=now)), no_headers=ctx.args.no_headers))
    return 0
