"""The command line: every command, its flags, and how a run ends.

Run as ``kubectl jobflow <command>`` (kubectl finds ``kubectl-jobflow`` on PATH and passes it the rest of the
line) or ``kubectl-jobflow <command>``. The connection flags (``--kubeconfig``/``-k``, ``--context``,
``-s``/``--master``, ``-n``/``--namespace``) are accepted before or after the command, as in kubectl (kubectl
itself does not pass its own global flags to plugins, so they go after ``jobflow``). ``-k`` is vcctl's
``--kubeconfig``, kept so vcctl's scripts work; kustomize's ``-k`` is ``create --kustomize DIR``.

This module imports only the standard library: a command's module (and with it the core, pydantic, YAML, the API
client) is imported once the command line is parsed, so ``--help``, a usage error and completion stay fast
(``tests/unit/test_cli_startup.py`` asserts what ``--help`` imports). Exit codes: :mod:`kubectl_jobflow.exits`.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from kubectl_jobflow import exits
from kubectl_jobflow.errors import CommandError
from kubectl_jobflow.formats import CONVERT, DATA, GRAPH, OBJECTS, TIMELINE, VIEWS, holds_kustomization, output_type

PROG = "kubectl jobflow"
API_VERSION = "flow.volcano.sh/v1alpha1"
"""The JobFlow API's group and version, written out so the parser need not import the core (a unit test checks it
against :data:`jobflow_core.vocabulary.api.JOBFLOW`)."""


class Parser(argparse.ArgumentParser):
    """argparse, with kubectl's manners: a mistyped command gets "Did you mean this?", and an error is printed with
    the usage of the command it concerns (a flag a subcommand does not know: that subcommand's usage)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        choice = re.match(r"argument \S+: invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if choice:
            known = [name.strip("'") for name in choice[2].split(", ") if not name.strip("'").startswith("__")]
            message = f"unknown command {choice[1]!r} for {self.prog!r}"
            close = difflib.get_close_matches(choice[1], known, n=3, cutoff=0.6)
            if close:
                message += "\n\nDid you mean this?\n" + "".join(f"\t{name}\n" for name in close)
            message += f"\nRun '{self.prog} --help' for the commands."
        self.print_usage(sys.stderr)
        self.exit(exits.USAGE, f"{self.prog}: error: {message}\n")


class Version(argparse.Action):
    """``--version``, reading the distribution's metadata only when asked (not on every ``--help``)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=kwargs.get("help"))

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from apiclient.version import version

        sys.stdout.write(f"kubectl-jobflow {version()}\n")
        parser.exit(0)


def run(argv: list[str], *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one command line; returns the exit status (:mod:`kubectl_jobflow.exits`)."""
    out, err = out or sys.stdout, err or sys.stderr
    if argv[:1] == ["__complete"]:  # the shell scripts' hidden command: before argparse, which would eat its words
        from kubectl_jobflow.completion import complete

        return complete(argv[1:], out=out)
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args, extra = parser.parse_known_args(argv)
            if extra:
                getattr(args, "parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as stop:
        return int(stop.code or 0)
    if not hasattr(args, "command"):
        parser.print_help(out)
        return exits.USAGE
    from kubectl_jobflow.context import Context

    ctx = Context(args, out=out, err=err)
    try:
        _check_kubeconfig_flag(args)
        return _load(args.command)(ctx)
    except KeyboardInterrupt:
        return exits.INTERRUPTED
    except BrokenPipeError:  # the reader went away (`... | head`): nothing left to say
        return exits.OK
    except Exception as error:
        code = exits.code_of(error)
        if code is None:
            raise
        ctx.fail(f"{args.failure}: {error}")
        return code
    finally:
        ctx.close()


def _load(command: tuple[str, str, dict[str, Any]]):
    """The function a command names (``module``, ``function``, fixed keyword arguments), imported now."""
    module, function, fixed = command
    func = getattr(importlib.import_module(f"kubectl_jobflow.{module}"), function)
    return lambda ctx: func(ctx, **fixed)


def _check_kubeconfig_flag(args: argparse.Namespace) -> None:
    given = getattr(args, "kubeconfig", None)
    if given and Path(given).is_dir():
        hint = (f"; {given} holds a kustomization: did you mean --kustomize {given}?"
                if holds_kustomization(given) else "")
        raise CommandError(f"-k/--kubeconfig names a kubeconfig file (vcctl's -k), but {given} is a directory{hint}",
                           code=exits.USAGE)


def _common() -> argparse.ArgumentParser:
    # SUPPRESS: a flag given before the command is not overwritten by the subcommand's default.
    common = Parser(add_help=False, argument_default=argparse.SUPPRESS)
    common.add_argument("-k", "--kubeconfig", help="path to the kubeconfig file (default: $KUBECONFIG, "
                                                   "~/.kube/config); vcctl's -k, see --kustomize for kustomize's")
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
    parser = Parser(prog=PROG, parents=[common],
                    description=f"JobFlows and JobTemplates ({API_VERSION}) from the command line, with kubectl's "
                                "conventions (-o, -l, -A, -w) and vcctl jobflow's commands. Exit codes: 0 done, 1 "
                                "failed, 2 invalid input or usage, 3 cannot reach or not allowed, 4 timed out, 5 "
                                "watch lost.")
    parser.add_argument("--version", action=Version, help="print the version and exit")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser)

    def command(group, name: str, target: tuple[str, str], failure: str, help: str | None, **kwargs: Any):
        fixed = kwargs.pop("fixed", {})
        sub = group.add_parser(name, parents=[common], help=help, description=help, **kwargs)
        sub.set_defaults(command=(*target, fixed), failure=failure, parser=sub)
        return sub

    _resource_commands(commands, command, "JobFlow", "jobflow")
    templates = commands.add_parser("template", aliases=["jobtemplate", "jt"], parents=[common],
                                    help="create, delete, list, get, describe JobTemplates")
    templates.set_defaults(command=("cli", "usage", {"parser": templates}), failure="", parser=templates)
    _resource_commands(templates.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser), command,
                       "JobTemplate", "jobtemplate")

    sub = command(commands, "status", ("status", "run"), "Failed to show the status",
                  "a JobFlow's flows in DAG order: each job's phase, age, restarts, pods per task, what waits")
    _names(sub)
    sub.add_argument("-w", "--watch", action="store_true", help="follow it live (through the watch API) until the "
                                                                 "JobFlow ends: exit 0 when it Succeeds, 1 when it "
                                                                 "Fails")
    sub.add_argument("--items", action="store_true", help="also list each item of a forEach flow (each "
                                                          "iteration of a repeat flow)")
    sub.add_argument("--timeout", type=_duration, default=0, help="with --watch, give up after this long (30s, 5m, "
                                                                  "1h; 0: never) and exit 4")
    _output(sub, VIEWS)

    sub = command(commands, "logs", ("logs", "run"), "Failed to show the logs",
                  "the logs of a JobFlow's pods (of one flow, item, attempt), each line prefixed [flow/pod/container] "
                  "as kubectl logs --prefix; -f follows the pods of later flows too, until the JobFlow ends")
    _names(sub)
    sub.add_argument("flow", nargs="?", metavar="FLOW", help="only this flow (default: every flow, in DAG order)")
    for flag, help in (("--item", "only item N of a forEach flow (iteration N of a repeat flow), from 0"),
                       ("--attempt", "attempt N, from 1 (default: the latest)"),
                       ("--tail", "the last N lines of each container's log (default -1: all)"),
                       ("--max-log-requests", "with -f, follow at most N running containers at once (default 5)")):
        sub.add_argument(flag, type=int, metavar="N", help=help, **({"default": 5} if flag[2] == "m" else {}))
    sub.add_argument("-c", "--container", help="only this container (default: every container that ran)")
    sub.add_argument("-f", "--follow", action="store_true", help="follow the logs, and the pods of flows and items "
                                                                  "that start later, until the JobFlow has ended")
    sub.add_argument("--since", type=_duration, metavar="D", help="only lines newer than D (5s, 2m, 3h)")
    sub.add_argument("--timestamps", action="store_true", help="each line's time (RFC 3339) after its prefix")

    sub = command(commands, "wait", ("waiting", "run"), "Failed to wait",
                  "wait until a JobFlow reaches a phase (as kubectl wait, through the watch API): exit 0 when it "
                  "does, 1 when it ends otherwise, 4 on --timeout")
    _names(sub)
    sub.add_argument("--for", dest="wait_for", default="phase=Succeed", metavar="phase=PHASE|delete",
                     help="phase=Succeed (default), phase=Failed, phase=Running, ..., or delete")
    sub.add_argument("--timeout", type=_duration, default=30.0,
                     help="how long to wait (default 30s, as kubectl wait; 0: look once; a negative value: a week)")

    sub = command(commands, "suspend", ("control", "suspend"), "Failed to suspend",
                  "start nothing new in a JobFlow (what runs keeps running) until it is resumed; jft/NAME: no "
                  "scheduled run of a JobFlowTemplate")
    _names(sub, what="the JobFlow's name, or jft/NAME for a JobFlowTemplate")
    sub = command(commands, "resume", ("control", "resume"), "Failed to resume",
                  "let a suspended JobFlow go on where it stopped; jft/NAME: let a JobFlowTemplate's schedule start "
                  "runs again")
    _names(sub, what="the JobFlow's name, or jft/NAME for a JobFlowTemplate")
    sub = command(commands, "retry", ("control", "retry"), "Failed to retry",
                  "run a Failed JobFlow's failed flows, and what follows them, again; what completed stays")
    _names(sub)
    sub.add_argument("--flow", action="append", metavar="FLOW",
                     help="run this flow (and what follows it) again instead of the failed ones (repeatable)")
    sub = command(commands, "stop", ("control", "stop"), "Failed to stop",
                  "abort what a JobFlow runs and start nothing new but its finally flows; it ends Failed (Stopped)")
    _names(sub)
    sub = command(commands, "terminate", ("control", "terminate"), "Failed to terminate",
                  "abort what a JobFlow runs, its finally flows too, and start nothing new; it ends Failed "
                  "(Terminated)")
    _names(sub)
    for verb, help in (("approve", "approve a JobFlow's approval gate that waits: what waits for it goes on"),
                       ("reject", "reject a JobFlow's approval gate that waits: it counts as a failed flow")):
        sub = command(commands, verb, ("control", verb), f"Failed to {verb}", help)
        sub.add_argument("name", nargs="?", metavar="NAME", help="the JobFlow's name")
        sub.add_argument("flow", nargs="?", metavar="FLOW", help="the approval gate (a flow with approval:)")
        sub.add_argument("-m", "--message", help="why, recorded with the answer (status.approvals)")

    sub = command(commands, "run", ("runs", "run"), "Failed to start a run",
                  "start a run of a JobFlowTemplate now, whatever its schedule says")
    _names(sub)
    sub.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                     help="set a parameter the template declares (spec.jobFlow.spec.parameters) for this run "
                          "(repeatable)")
    sub.set_defaults(verb="run")
    sub = command(commands, "history", ("runs", "history"), "Failed to list the runs",
                  "a JobFlowTemplate's runs: what started each (a scheduled time, an event, by hand), phase, start, "
                  "duration")
    _names(sub)
    _output(sub, OBJECTS)
    _no_headers(sub)
    sub.set_defaults(verb="history")

    sub = command(commands, "release", ("control", "release"), "Failed to release",
                  "take the engine's finalizer off the vcjobs of a namespace (-A: of all), before uninstalling it")
    sub.add_argument("-A", "--all-namespaces", action="store_true", help="the vcjobs of every namespace")

    sub = command(commands, "graph", ("graph", "run"), "Failed to draw the graph",
                  "a JobFlow's DAG as text, Graphviz DOT, Mermaid or SVG; coloured by phase for a JobFlow on the "
                  "cluster")
    _names(sub)
    _file(sub, required=False)
    _drawing(sub, GRAPH)

    sub = command(commands, "timeline", ("timeline", "run"), "Failed to draw the timeline",
                  "each vcjob's pending and running time on one axis, the critical path marked; text or SVG")
    _names(sub)
    _drawing(sub, TIMELINE)

    sub = command(commands, "dashboard", ("dashboard", "run"), "Failed to serve the dashboard",
                  "the live web view of every JobFlow on http://127.0.0.1:PORT/, acting as you (Ctrl-C stops it)")
    sub.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free one)")
    sub.add_argument("--read-only", action="store_true", help="no buttons (Retry, Suspend, Resume, Stop, Terminate, "
                                                              "Approve, Reject)")

    sub = command(commands, "validate", ("validate", "run"), "Failed to validate",
                  "check JobFlows and JobTemplates as the validating webhook does, offline (exit 2 when one is "
                  "invalid)")
    _file(sub, required=True)
    _output(sub, DATA)

    sub = command(commands, "plan", ("plan", "run"), "Failed to plan",
                  "which jobs of a JobFlow would start now and which would wait, on what; creates nothing")
    _file(sub, required=True)
    sub.add_argument("--local", action="store_true", help="do not ask the cluster: only the JobTemplates of the "
                                                          "file exist, and no vcjobs")
    sub.add_argument("--queue", action="store_true", help="also its place in its Volcano queue's line, expected "
                                                          "start, end and cost, and its deadline, from today's queue "
                                                          "and statistics (reads only)")
    _output(sub, DATA)

    sub = command(commands, "convert", ("convert", "run"), "Failed to convert",
                  "turn a JobTemplate into a vcjob manifest and a vcjob into a JobTemplate (the spec unchanged)")
    _file(sub, required=True)
    sub.add_argument("--name", dest="new_name", help="name the result (default: the input's name; for a vcjob a "
                                                     "JobFlow created, its flow's)")
    sub.add_argument("-o", "--output", type=output_type(CONVERT), default=output_type(CONVERT)("yaml"),
                     metavar="yaml|json", help="yaml (default) or json")

    sub = command(commands, "completion", ("cli", "completion_script"), "Failed to write the completion script",
                  "print a shell completion script: source <(kubectl-jobflow completion bash); kubectl (1.26 and "
                  "later) completes `kubectl jobflow` itself, through kubectl_complete-jobflow")
    sub.add_argument("shell", choices=("bash", "zsh"))
    return parser


def _resource_commands(group, command, kind: str, word: str) -> None:
    sub = command(group, "create", ("resources", "create"), f"Failed to create {word}",
                  f"create the {kind}s of a file" + (" (and its JobTemplates)" if kind == "JobFlow" else ""),
                  fixed={"kind": kind})
    sources = sub.add_mutually_exclusive_group()  # neither: the command says so (after -k's check)
    _file(sources, required=False)
    sources.add_argument("--kustomize", metavar="DIR", help="the objects kustomize builds from DIR (kubectl "
                                                            "kustomize DIR; kubectl's create -k)")
    sub.add_argument("--validate", type=_bool, default=True, metavar="true|false",
                     help="run the validating webhook's checks before sending (default true)")
    if kind == "JobFlow":
        sub.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                         help="set a parameter the JobFlow declares (spec.parameters) for this run (repeatable)")
        sub.add_argument("--generate-name", action="store_true",
                         help="create a new JobFlow each time: its name plus five random characters")

    sub = command(group, "delete", ("resources", "delete"), f"Failed to delete {word}",
                  f"delete a {kind} by name, or those of a file", fixed={"kind": kind})
    _names(sub)
    _file(sub, required=False)

    for verb, help in (("get", f"list the {kind}s (kubectl get), or show those named"),
                       ("list", f"list the {kind}s of a namespace (vcctl's word for get without a name)")):
        sub = command(group, verb, ("resources", "get"), f"Failed to {verb} {word}", help,
                      fixed={"kind": kind, "vcctl": verb == "list"})
        if verb == "get":
            sub.add_argument("names", nargs="*", metavar="NAME", help="the names (default: all of them)")
            sub.add_argument("-N", "--name", dest="name_flag", metavar="NAME", help="the name (vcctl's flag)")
        _selection(sub)
        _output(sub, OBJECTS)
        _no_headers(sub)
        sub.add_argument("-w", "--watch", action="store_true", help="after the list, print each change as it "
                                                                     "happens (the watch API), until Ctrl-C")

    sub = command(group, "describe", ("resources", "describe"), f"Failed to describe {word}",
                  f"print a {kind} (or all of the namespace) as YAML or JSON", fixed={"kind": kind})
    _names(sub)
    _selection(sub)
    sub.add_argument("-o", "--output", "--format", dest="output", type=output_type(CONVERT),
                     default=output_type(CONVERT)("yaml"), metavar="yaml|json", help="yaml (default) or json")


def usage(ctx: Any, *, parser: argparse.ArgumentParser) -> int:
    """A command group given without its command (``kubectl jobflow template``): its usage, as kubectl does."""
    parser.print_help(ctx.err)
    return exits.USAGE


def completion_script(ctx: Any) -> int:
    from kubectl_jobflow.completion import bash_script, zsh_script

    ctx.write(bash_script() if ctx.args.shell == "bash" else zsh_script())
    return exits.OK


def _duration(value: str) -> float:
    """Seconds, from ``30``, ``30s``, ``5m``, ``1h``, ``1h30m`` (Go's durations, as kubectl's ``--timeout``)."""
    parts = re.fullmatch(r"(-?)((?:\d+(?:\.\d+)?(?:ms|h|m|s))+|\d+(?:\.\d+)?)", value.strip())
    if not parts:
        raise argparse.ArgumentTypeError(f"expected a duration such as 30s, 5m or 1h, got {value!r}")
    scale = {"ms": 0.001, "h": 3600, "m": 60, "s": 1, "": 1}
    seconds = sum(float(number) * scale[unit]
                  for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s|)", parts[2]) if number)
    return -seconds if parts[1] else seconds


def _names(sub: argparse.ArgumentParser, *, what: str = "the name") -> None:
    sub.add_argument("name", nargs="?", help=what)
    sub.add_argument("-N", "--name", dest="name_flag", metavar="NAME", help=f"{what} (vcctl's flag)")


def _file(sub: Any, *, required: bool) -> None:
    sub.add_argument("-f", "--file", action="append", required=required, metavar="FILE",
                     help="a YAML or JSON file, a directory of them, or - for standard input (repeatable)")


def _selection(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("-A", "--all-namespaces", action="store_true", help="of every namespace")
    sub.add_argument("-l", "--selector", metavar="SELECTOR",
                     help="only those whose labels match (kubectl's selector: -l app=x,tier!=db)")


def _output(sub: argparse.ArgumentParser, allowed: tuple[str, ...]) -> None:
    shown = "|".join(choice + ("..." if choice.endswith("=") else "") for choice in allowed)
    sub.add_argument("-o", "--output", type=output_type(allowed), metavar="FORMAT", help=shown)


def _no_headers(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--no-headers", action="store_true", help="print tables without their header line")


def _drawing(sub: argparse.ArgumentParser, allowed: tuple[str, ...]) -> None:
    sub.add_argument("-o", "--output", "--format", dest="format", choices=allowed, default="text",
                     help=f"{', '.join(allowed)} (default text; --format is the old spelling)")
