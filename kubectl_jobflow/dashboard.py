"""``dashboard``: the live web view (:mod:`dashboard`) on 127.0.0.1, acting with the user's own kubeconfig.

It runs ``python -m dashboard`` with the same connection flags, so the page sees and does exactly what this user
may: it lists JobFlows of every namespace (``-n``: of one), and its Retry, Suspend, Resume, Stop, Terminate, Approve
and Reject buttons do what ``kubectl jobflow retry/suspend/resume/stop/terminate/approve/reject`` do. It prints the
URL and serves until Ctrl-C. Only this machine can reach it (127.0.0.1, and only that Host), and a page of another
site cannot make it act (docs/dashboard.md).

The dashboard's server (Flask, gevent) is an extra the command line alone does not install: without it, this says
how to get it.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec
from typing import TYPE_CHECKING

from jobflow_core.vocabulary.api import JOBFLOW
from kubectl_jobflow.errors import CommandError

if TYPE_CHECKING:
    from kubectl_jobflow.context import Context


EXTRA = ("flask", "gevent")
"""What the ``dashboard`` extra installs and the command line alone does not."""


def run(ctx: Context) -> int:
    missing = [name for name in EXTRA if find_spec(name) is None]
    if missing:
        raise CommandError(f"the dashboard needs {', '.join(missing)}, which this install lacks: pip install "
                           "'volcano-jobflow-serverless[dashboard]' (or from requirements/image.txt)")
    # One request first, so an unreachable cluster or a missing permission is one line (and its exit code) here,
    # not a traceback from the server's process.
    ctx.cluster.list(JOBFLOW, ctx.namespace_given, limit=1)
    args = ctx.args
    command = [sys.executable, "-m", "dashboard", "--port", str(args.port)]
    for flag, value in (("--kubeconfig", ctx.target.kubeconfig), ("--context", ctx.target.context),
                        ("--namespace", ctx.namespace_given)):
        if value:
            command += [flag, value]
    if args.read_only:
        command.append("--read-only")
    return subprocess.call(command, stdout=ctx.out if ctx.out is sys.stdout else None)
