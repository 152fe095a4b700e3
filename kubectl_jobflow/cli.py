"""The command line: every command, its flags, and how a run ends.

Run as ``kubectl jobflow <command>`` (kubectl finds ``kubectl-jobflow`` on PATH and passes it the rest of the
line) or ``kubectl-jobflow <command>``. The connection flags (``--kubeconfig``/``-k``, ``--context``,
``-s``/``--master``, ``-n``/``--namespace``) are accepted before or after the command, as in kubectl (kubectl
itself does not pass its own global flags to plugins, so they go after ``jobflow``).

Exit status: 0 when everything worked; 1 when anything failed (an object that was not created or deleted, an
invalid file for ``validate``, a blocked ``plan``, a flow that ended Failed under ``status --watch``), with a
message on standard error saying what and what to do; 2 for a command line argparse refuses; 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from functools import cached_property
from typing import TextIO

from apiclient.cluster import Cluster, KubeError, Target
from apiclient.kubeconfig import default_namespace
from apiclient.steering import Refused
from apiclient.version import version
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE
from kubectl_jobflow import control, convert, dashboard, graph, plan, resources, runs, status, timeline, validate
from kubectl_jobflow.conversion import ConversionError
from kubectl_jobflow.documents import DocumentError
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.output import FORMATS

PROG = "kubectl jobflow"
FAILED = 1


class Context:
    """What a command gets: its arguments, where to print, the namespace, and (on first use) the cluster."""

    def __init__(self, args: argparse.Namespace, *, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out = out
        self.err = err
        self._cluster: Cluster | None = None

    @property
    def target(self) -> Target:
        return Target(kubeconfig=getattr(self.args, "kubeconfig", None),
                      context=getattr(self.args, "context", None), master=getattr(self.args, "master", None))

    @property
    def namespace_given(self) -> str | None:
        return getattr(self.args, "namespace", None)

    @cached_property
    def namespace(self) -> str:
        """``-n``, else the kubeconfig context's namespace, else ``default``."""
        return self.namespace_given or default_namespace(self.target.kubeconfig, context=self.target.context)

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster(self.target)
        return self._cluster

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def say(self, line: str) -> None:
        self.write(line + "\n")

    def fail(self, line: str) -> None:
        self.err.write(line + "\n")
        self.err.flush()

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()


def run(argv: list[str], *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one command line; returns the exit status (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    if not hasattr(args, "command"):
        parser.print_help(out or sys.stdout)
        return 2
    ctx = Context(args, out=out or sys.stdout, err=err or sys.stderr)
    try:
        return args.command(ctx)
    except (CommandError, KubeError, Refused, DocumentError, ConversionError) as error:
        ctx.fail(f"{args.failure}: {error}")
        return FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`... | head`): nothing left to say
        return 0
    finally:
        ctx.close()


def _common() -> argparse.ArgumentParser:
    # SUPPRESS: a flag given before the command is not overwritten by the subcommand's default.
    common = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("-k", "--kubeconfig", help="path to the kubeconfig file (default: $KUBECONFIG, "
                                                   "~/.kube/config)")
    common.add_argument("--context", help="the kubeconfig context to use (default: its current-context)")
    common.add_argument("-s", "--master", help="the address of the API server (overrides the kubeconfig)")
    common.add_argument("-n", "--namespace", help="the namespace (default: the context's, else default)")
    return common


def _bool(value: str) -> bool:
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(prog=PROG, parents=[common],
                                     description=f"JobFlows and JobTemplates ({JOBFLOW.api_version}) from the "
                                                 "command line: vcctl jobflow's commands and more.")
    parser.add_argument("--version", action="version", version=f"kubectl-jobflow {version()}",
                        help="print the version and exit")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(group, name: str, func, failure: str, help: str, **kwargs) -> argparse.ArgumentParser:
        sub = group.add_parser(name, parents=[common], help=help, description=help, **kwargs)
        sub.set_defaults(command=func, failure=failure)
        return sub

    _resource_commands(commands, command, resources.NOUNS[JOBFLOW.kind], "jobflow")
    templates = commands.add_parser("template", aliases=["jobtemplate", "jt"], parents=[common],
                                    help="create, delete, list, get, describe JobTemplates")
    templates.set_defaults(command=lambda ctx: _usage(templates, ctx), failure="")
    _resource_commands(templates.add_subparsers(title="commands", metavar="COMMAND"), command,
                       resources.NOUNS[JOBTEMPLATE.kind], "jobtemplate")

    sub = command(commands, "convert", convert.run, "Failed to convert",
                  "turn a JobTemplate into a vcjob manifest and a vcjob into a JobTemplate (the spec unchanged)")
    _file(sub, required=True)
    sub.add_argument("--name", dest="new_name", help="name the result (default: the input's name; for a vcjob a "
                                                     "JobFlow created, its flow's)")
    sub.add_argument("-o", "--output", choices=FORMATS, default="yaml", help="yaml (default) or json")

    sub = command(commands, "status", status.run, "Failed to show the status",
                  "a JobFlow's flows in DAG order: each job's phase, age, restarts, pods per task, what waits")
    _names(sub)
    sub.add_argument("-w", "--watch", action="store_true", help="follow it live until the JobFlow ends "
                                                                 "(exit 0 when it Succeeds, 1 when it Fails)")
    sub.add_argument("--items", action="store_true", help="also list each item of a forEach flow (each "
                                                          "iteration of a repeat flow)")
    sub.add_argument("--interval", type=float, default=1.0, help="seconds between looks with --watch (1)")
    sub.add_argument("--timeout", type=float, default=0, help="give up watching after this many seconds "
                                                              "(0: never)")
    _output(sub)

    sub = command(commands, "suspend", control.suspend, "Failed to suspend",
                  "start nothing new in a JobFlow (what runs keeps running) until it is resumed; jft/NAME: no "
                  "scheduled run of a JobFlowTemplate")
    _names(sub, what="the JobFlow's name, or jft/NAME for a JobFlowTemplate")
    sub = command(commands, "resume", control.resume, "Failed to resume",
                  "let a suspended JobFlow go on where it stopped; jft/NAME: let a JobFlowTemplate's schedule start "
                  "runs again")
    _names(sub, what="the JobFlow's name, or jft/NAME for a JobFlowTemplate")
    sub = command(commands, "retry", control.retry, "Failed to retry",
                  "run a Failed JobFlow's failed flows, and what follows them, again; what completed stays")
    _names(sub)
    sub.add_argument("--flow", action="append", metavar="FLOW",
                     help="run this flow (and what follows it) again instead of the failed ones (repeatable)")

    sub = command(commands, "run", runs.run, "Failed to start a run",
                  "start a run of a JobFlowTemplate now, whatever its schedule says")
    _names(sub)
    sub.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                     help="set a parameter the template declares (spec.jobFlow.spec.parameters) for this run "
                          "(repeatable)")
    sub.set_defaults(verb="run")
    sub = command(commands, "history", runs.history, "Failed to list the runs",
                  "a JobFlowTemplate's runs: what started each (a scheduled time, an event, by hand), phase, start, "
                  "duration")
    _names(sub)
    _output(sub)
    sub.set_defaults(verb="history")

    sub = command(commands, "release", control.release, "Failed to release",
                  "take the engine's finalizer off the vcjobs of a namespace (-A: of all), before uninstalling it")
    sub.add_argument("-A", "--all-namespaces", action="store_true", help="the vcjobs of every namespace")

    sub = command(commands, "graph", graph.run, "Failed to draw the graph",
                  "a JobFlow's DAG as text, Graphviz DOT, Mermaid or SVG; coloured by phase for a JobFlow on the "
                  "cluster")
    _names(sub)
    _file(sub, required=False)
    sub.add_argument("--format", choices=graph.FORMATS, default="text", help="text (default), dot, mermaid, svg")

    sub = command(commands, "timeline", timeline.run, "Failed to draw the timeline",
                  "each vcjob's pending and running time on one axis, the critical path marked; text or SVG")
    _names(sub)
    sub.add_argument("--format", choices=timeline.FORMATS, default="text", help="text (default) or svg")

    sub = command(commands, "dashboard", dashboard.run, "Failed to serve the dashboard",
                  "the live web view of every JobFlow on http://127.0.0.1:PORT/, acting as you (Ctrl-C stops it)")
    sub.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free one)")
    sub.add_argument("--read-only", action="store_true", help="no Retry, Suspend, Resume buttons")

    sub = command(commands, "validate", validate.run, "Failed to validate",
                  "check JobFlows and JobTemplates as the validating webhook does, offline")
    _file(sub, required=True)
    _output(sub)

    sub = command(commands, "plan", plan.run, "Failed to plan",
                  "which jobs of a JobFlow would start now and which would wait, on what; creates nothing")
    _file(sub, required=True)
    sub.add_argument("--local", action="store_true", help="do not ask the cluster: only the JobTemplates of the "
                                                          "file exist, and no vcjobs")
    _output(sub)
    return parser


def _resource_commands(group, command, noun: resources.Noun, word: str) -> None:
    kind = noun.api_type.kind
    sub = command(group, "create", lambda ctx: resources.create(ctx, noun), f"Failed to create {word}",
                  f"create the {kind}s of a file" + (" (and its JobTemplates)" if noun.api_type is JOBFLOW else ""))
    _file(sub, required=True)
    sub.add_argument("--validate", type=_bool, default=True, metavar="true|false",
                     help="run the validating webhook's checks before sending (default true)")
    if noun.api_type is JOBFLOW:
        sub.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                         help="set a parameter the JobFlow declares (spec.parameters) for this run (repeatable)")
        sub.add_argument("--generate-name", action="store_true",
                         help="create a new JobFlow each time: its name plus five random characters")

    sub = command(group, "delete", lambda ctx: resources.delete(ctx, noun), f"Failed to delete {word}",
                  f"delete a {kind} by name, or those of a file")
    _names(sub)
    _file(sub, required=False)

    sub = command(group, "list", lambda ctx: resources.list_(ctx, noun), f"Failed to list {word}",
                  f"list the {kind}s of a namespace")
    sub.add_argument("-A", "--all-namespaces", action="store_true", help=f"list the {kind}s of every namespace")
    _output(sub)

    sub = command(group, "get", lambda ctx: resources.get(ctx, noun), f"Failed to get {word}", f"show a {kind}")
    _names(sub)
    _output(sub)

    sub = command(group, "describe", lambda ctx: resources.describe(ctx, noun), f"Failed to describe {word}",
                  f"print a {kind} (or all of the namespace) as YAML or JSON")
    _names(sub)
    sub.add_argument("-o", "--format", dest="output", choices=FORMATS, default="yaml", help="yaml (default) or json")


def _usage(parser: argparse.ArgumentParser, ctx: Context) -> int:
    parser.print_help(ctx.err)
    return 2


def _names(sub: argparse.ArgumentParser, *, what: str = "the name") -> None:
    sub.add_argument("name", nargs="?", help=what)
    sub.add_argument("-N", "--name", dest="name_flag", help=f"{what} (vcctl's flag)")


def _file(sub: argparse.ArgumentParser, *, required: bool) -> None:
    sub.add_argument("-f", "--file", action="append", required=required, metavar="FILE",
                     help="a YAML or JSON file, a directory of them, or - for standard input (repeatable)")


def _output(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("-o", "--output", choices=FORMATS, help="json or yaml instead of the human view")
