"""``timeline NAME [--format text|svg]``: where a JobFlow spent its time, vcjob by vcjob, on one time axis
(:mod:`display.timeline` draws it; the dashboard shows the same chart)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from display.timeline import build, svg, text
from kubectl_jobflow import exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import utc_now
from kubectl_jobflow.status import fetch

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context

FORMATS = ("text", "svg")


def run(ctx: Context) -> int:
    name = ctx.args.name or ctx.args.name_flag
    if not name:
        raise CommandError("name the JobFlow: kubectl jobflow timeline NAME", code=exits.USAGE)
    jobflow, jobs = fetch(ctx, name)
    timeline = build(jobflow, jobs, now=utc_now())
    if not timeline.bars:
        raise CommandError(f"JobFlow {timeline.title} has no vcjobs with times yet: nothing to draw")
    ctx.write(svg(timeline) if ctx.args.format == "svg" else text(timeline))
    return 0
