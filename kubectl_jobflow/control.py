"""``suspend`` and ``resume``: steer a running JobFlow through its spec, so the engine (stateless) acts on it.

``suspend NAME`` sets ``spec.suspend: true``: the JobFlow starts nothing new (what runs keeps running) and shows
``Suspended``; ``resume NAME`` sets it back to false and the JobFlow goes on where it stopped. Both are plain merge
patches (``kubectl patch jf NAME --type=merge -p '{"spec":{"suspend":true}}'`` does the same) and idempotent:
suspending a suspended JobFlow says so and changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobflow_core.api import JOBFLOW
from kubectl_jobflow.errors import CommandError

if TYPE_CHECKING:
    from kubectl_jobflow.cli import Context


def suspend(ctx: Context) -> int:
    return _set_suspend(ctx, True)


def resume(ctx: Context) -> int:
    return _set_suspend(ctx, False)


def _set_suspend(ctx: Context, value: bool) -> int:
    name = ctx.args.name or ctx.args.name_flag
    word = "suspend" if value else "resume"
    if not name:
        raise CommandError(f"name the JobFlow: kubectl jobflow {word} NAME")
    current = ctx.cluster.find(JOBFLOW, ctx.namespace, name)
    if current is None:
        raise CommandError(f'JobFlow "{ctx.namespace}/{name}" not found: check the name and the namespace (-n)')
    if bool((current.get("spec") or {}).get("suspend")) == value:
        ctx.say(f"JobFlow {ctx.namespace}/{name} is already {'suspended' if value else 'not suspended'}")
        return 0
    ctx.cluster.merge_patch(JOBFLOW, ctx.namespace, name, {"spec": {"suspend": value}})
    ctx.say(f"{'Suspended' if value else 'Resumed'} JobFlow: {ctx.namespace}/{name}")
    return 0
