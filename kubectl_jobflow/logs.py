"""``logs NAME [FLOW] [--item N] [--attempt N] [-c CONTAINER] [-f] [--tail N] [--since D] [--timestamps]``: the logs of
a JobFlow's pods, each line prefixed with where it came from, as ``kubectl logs --prefix`` does::

    [a/main/test-a-main-0/main] preparing the data
    [b/0/main/test-b-0-main-0/main] shard 0 done
    [b/1/main/test-b-1-main-0/main] shard 1 done

The prefix is ``[flow/task/pod/container]``, with the item's (iteration's) index after the flow for a ``forEach``
(``repeat``) flow; the pod's name is ``<vcjob>-<task>-<replica>``, so it also says the attempt (``-r1``).
Which pods, in which order, and what is said of flows without any: :mod:`jobflow_core.insight.logs`; reading and
following them: :mod:`apiclient.logs`. What is said goes to stderr (a vcjob deleted with its pods, a flow not
started); the lines go to stdout, so ``| grep`` sees only them.

Exit codes (:mod:`kubectl_jobflow.exits`): 0 when logs were shown (``-f``: once the JobFlow and every stream ended),
1 when the selection has no log to show (stderr says why) or names no such JobFlow or flow, 2 for flags that do not
go together and for more running containers to follow at the start than ``--max-log-requests`` (later ones wait for
a place), 3 and 5 as for every command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiclient.logs import LogLine, LogOptions, LogsRefused, Notice, logs
from jobflow_core.insight.logs import Selection
from kubectl_jobflow import exits
from kubectl_jobflow.errors import CommandError

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context


def run(ctx: Context) -> int:
    args = ctx.args
    name = args.name or args.name_flag
    if not name:
        raise CommandError("name the JobFlow: kubectl jobflow logs NAME [FLOW]", code=exits.USAGE)
    for flag, value, least in (("--item", args.item, 0), ("--attempt", args.attempt, 1),
                               ("--max-log-requests", args.max_log_requests, 1)):
        if value is not None and value < least:
            raise CommandError(f"{flag} {value}: expected a whole number of at least {least}", code=exits.USAGE)
    if args.since is not None and args.since <= 0:
        raise CommandError("--since must be a positive duration, such as 5s, 2m or 3h", code=exits.USAGE)
    selection = Selection(flow=args.flow, item=args.item, attempt=args.attempt, container=args.container)
    options = LogOptions(follow=args.follow, tail=None if args.tail is None or args.tail < 0 else args.tail,
                         since_seconds=None if args.since is None else max(1, int(args.since)),
                         max_requests=args.max_log_requests)
    shown = said = 0
    try:
        for record in logs(ctx.cluster, ctx.namespace, name, selection=selection, options=options):
            if isinstance(record, LogLine):
                stamp = f"{record.time} " if args.timestamps and record.time else ""
                ctx.out.write(f"{record.prefix} {stamp}{record.text}\n")
                if args.follow:
                    ctx.out.flush()
                shown += 1
            elif isinstance(record, Notice):
                ctx.fail(record.text)
                said += 1
    except LogsRefused as error:
        raise CommandError(str(error), code=exits.USAGE if error.usage else exits.FAILED) from error
    finally:
        ctx.out.flush()
    return exits.FAILED if said and not shown else exits.OK
