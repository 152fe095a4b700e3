"""Shell completion: what TAB offers after ``kubectl jobflow`` and after ``kubectl-jobflow``.

Both ways speak cobra's ``__complete`` protocol, so kubectl's own completion and our scripts read the same text: one
candidate per line, then ``:<directive>``, the ShellCompDirective bit flags (1 error: ignore the candidates, 2 no
space after the word, 4 no file names when there is no candidate; 0 lets the shell complete file names).

- kubectl 1.26 and later, on ``kubectl jobflow ...<TAB>``, runs ``kubectl_complete-jobflow`` from PATH (:func:`main`)
  with the words after ``jobflow``, the last one the word being typed (``""`` for a new one). kubectl hands it the
  terminal's stdin and stderr, so nothing may be printed there and nothing may ask.
- ``source <(kubectl-jobflow completion bash)`` (or ``zsh``) installs a function that runs
  ``kubectl-jobflow __complete WORDS...`` (:func:`complete`).

The candidates come from the argparse tree of :func:`kubectl_jobflow.cli.build_parser` (:func:`candidates`, no I/O);
only object names come from the cluster (:func:`cluster_names`, and for ``approve``/``reject NAME FLOW`` the gates
of JobFlow NAME that wait for an answer, :func:`waiting_gates`; for ``logs NAME FLOW`` its flows,
:func:`jobflow_flows`), and a cluster that fails gives no names, never a
traceback on someone's prompt.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterable
from typing import TextIO

# Cobra's ShellCompDirective bits; FILES (none set) lets the shell complete file names when nothing is offered.
ERROR, NO_SPACE, NO_FILES, FILES = 1, 2, 4, 0
FILE_OPTIONS = frozenset({"-f", "--file", "-k", "--kubeconfig", "--kustomize"})
NAMES_TIMEOUT = (2.0, 3.0)  # seconds to connect, to answer: a TAB that hangs is worse than one that offers nothing
Names = Callable[[str, list[str]], list[str]]
"""(the subcommand path, the words) -> the object names TAB offers."""
Flows = Callable[[str, list[str]], list[str]]
"""(the JobFlow the words name, the words) -> the flows TAB offers for a ``FLOW`` positional."""


def candidates(parser: argparse.ArgumentParser, words: list[str], *, names: Names | None = None,
               flows: Flows | None = None, every_flow: Flows | None = None) -> tuple[list[str], int]:
    """Completions for the last word of ``words`` (the words after the program name); returns (candidates, directive).

    The finished words are walked as argparse would take them: a subcommand name (or alias) descends into its parser,
    an option that takes a value eats the next word, anything else fills the next positional. What the last word can
    be then follows from where the walk stopped."""
    *done, partial = words or [""]
    path: list[str] = []
    given: list[str] = []
    pending: argparse.Action | None = None
    for word in done:
        if pending is not None:
            pending = None
        elif word.startswith("-") and len(word) > 1:
            pending = _option_awaiting_value(parser, word)
        elif word in (subcommands := _subcommands(parser)):
            parser = subcommands[word]
            # The first name of a subparser is its own, the rest its aliases: `jt get` is `template get`.
            path.append(next(name for name, sub in subcommands.items() if sub is parser))
            given = []
        else:
            given.append(word)
    filled = len(given)
    if pending is not None:
        return _values(pending, partial, prefix="")
    if partial.startswith("--") and "=" in partial:
        option, _, value = partial.partition("=")
        action = parser._option_string_actions.get(option)
        return _values(action, value, prefix=option + "=") if action is not None else ([], NO_FILES)
    if partial.startswith("-"):
        return _matching((option for action in parser._actions if action.help != argparse.SUPPRESS
                          for option in action.option_strings), partial), NO_FILES
    subcommands = _subcommands(parser)
    if subcommands and filled == 0:
        return _matching((name for name in subcommands if not name.startswith("__")), partial), NO_FILES
    positionals = [action for action in parser._actions
                   if not action.option_strings and not isinstance(action, argparse._SubParsersAction)]
    if filled >= len(positionals) and not (positionals and positionals[-1].nargs in ("*", "+")):
        return [], NO_FILES
    positional = positionals[min(filled, len(positionals) - 1)]
    if positional.choices:
        return _matching(positional.choices, partial), NO_FILES
    if (positional.metavar or positional.dest).upper() == "NAME" and names is not None:
        return _matching((name for name in names(" ".join(path), words) if name not in done), partial), NO_FILES
    offered = every_flow if path[:1] == ["logs"] else flows  # logs: any flow; approve, reject: the waiting gates
    if positional.metavar == "FLOW" and offered is not None and given:
        return _matching(offered(given[0], words), partial), NO_FILES
    return [], NO_FILES


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _option_awaiting_value(parser: argparse.ArgumentParser, word: str) -> argparse.Action | None:
    """The option whose value the next word is, or None (a flag, ``--opt=value``, ``-ojson``, an unknown word)."""
    action = parser._option_string_actions.get(word)
    return action if action is not None and action.nargs != 0 else None


def _values(action: argparse.Action, partial: str, *, prefix: str) -> tuple[list[str], int]:
    """The values of ``action`` that start with ``partial``: its ``choices``, else those its ``type`` carries as
    ``choices`` (``-o``'s formats, which argparse cannot check as choices because ``jsonpath=`` takes a template)."""
    if FILE_OPTIONS & set(action.option_strings) or action.metavar == "FILE":
        return [], FILES
    found = [prefix + choice for choice in _matching(action.choices or getattr(action.type, "choices", ()), partial)]
    # `jsonpath=` alone: the template follows without a space, as cobra does for a value that ends in `=`.
    return found, NO_FILES | (NO_SPACE if len(found) == 1 and found[0].endswith("=") else 0)


def _matching(words: Iterable[object], partial: str) -> list[str]:
    return [word for word in words if isinstance(word, str) and word.startswith(partial)]


def protocol(cands: list[str], directive: int) -> str:
    """Cobra's ``__complete`` answer: one candidate per line (``name`` or ``name<TAB>description``), then
    ``:<directive>``. A line break inside a candidate would read as a second candidate, so only its first line goes."""
    lines = [cand.splitlines()[0].strip() for cand in cands if cand.strip()]
    return "".join(line + "\n" for line in lines) + f":{directive}\n"


def cluster_names(command: str, words: list[str]) -> list[str]:
    """The names TAB offers for ``command`` (the subcommand path, aliases resolved: ``template get``): JobTemplates
    under ``template``, JobFlowTemplates for ``run``/``history`` (and ``jft/...`` for ``suspend``/``resume``),
    JobFlows otherwise; from the namespace and cluster the typed words name. Any failure: no names."""
    from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE

    head = command.split(" ", 1)[0]
    prefix = "jft/" if head in ("suspend", "resume") and words and words[-1].startswith("jft/") else ""
    api_type = JOBTEMPLATE if head == "template" else JOBFLOWTEMPLATE if prefix or head in ("run", "history") \
        else JOBFLOW
    return sorted(prefix + item["metadata"]["name"]
                  for item in _quietly(words, lambda cluster, namespace: cluster.list(api_type, namespace)["items"]))


def waiting_gates(jobflow: str, words: list[str]) -> list[str]:
    """The approval gates of JobFlow ``jobflow`` that wait for an answer now (:func:`apiclient.steering.gate_of`),
    for ``approve``/``reject NAME FLOW``; from the namespace and cluster the typed words name. Any failure: none."""
    from apiclient.steering import gate_of
    from jobflow_core.models import JobFlow
    from jobflow_core.vocabulary.api import JOBFLOW

    def read(cluster, namespace: str) -> list[str]:
        found = cluster.find(JOBFLOW, namespace, jobflow)
        if found is None:
            return []
        model = JobFlow.model_validate(found)
        gates = (gate_of(model, flow.name) for flow in model.spec.flows or ())
        return sorted(gate.flow for gate in gates if gate is not None and gate.refusal is None)
    return _quietly(words, read)


def jobflow_flows(jobflow: str, words: list[str]) -> list[str]:
    """The flows of JobFlow ``jobflow`` in spec order, for ``logs NAME FLOW``; any failure: none."""
    from jobflow_core.vocabulary.api import JOBFLOW

    def read(cluster, namespace: str) -> list[str]:
        found = cluster.find(JOBFLOW, namespace, jobflow) or {}
        return [flow["name"] for flow in (found.get("spec") or {}).get("flows") or () if flow.get("name")]
    return _quietly(words, read)


def _quietly(words: list[str], read: Callable[..., list]) -> list:
    """``read(cluster, namespace)`` on the cluster and namespace the typed words name (``-n``, ``--context``, ...),
    asking nothing of anyone and within :data:`NAMES_TIMEOUT`; any failure: an empty list."""
    from apiclient.cluster import Cluster, Target
    from apiclient.kubeconfig import default_namespace

    # No abbreviations (--name is not --namespace); a bad word raises instead of printing usage and exiting.
    flags = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for spelling in (("-n", "--namespace"), ("--context",), ("-k", "--kubeconfig"), ("-s", "--master")):
        flags.add_argument(*spelling)
    stdin = sys.stdin
    sys.stdin = None  # type: ignore[assignment]  # a credential plugin must not ask: nobody sees a question at TAB
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            given, _ = flags.parse_known_args(words[:-1])
            cluster = Cluster(Target(kubeconfig=given.kubeconfig, context=given.context, master=given.master))
            try:
                cluster.rest.timeout = NAMES_TIMEOUT
                namespace = given.namespace or default_namespace(given.kubeconfig, context=given.context)
                return read(cluster, namespace)
            finally:
                cluster.close()
    except Exception:  # noqa: BLE001 - whatever the kubeconfig or the cluster says, TAB just offers nothing
        return []
    finally:
        sys.stdin = stdin


def complete(words: list[str], *, out: TextIO | None = None) -> int:
    """Answer one completion request (``kubectl-jobflow __complete WORDS...``, ``kubectl_complete-jobflow WORDS...``)
    with :func:`protocol`; always exit 0, so the shell reads the directive (1 when something unexpected broke)."""
    try:
        from kubectl_jobflow.cli import build_parser

        cands, directive = candidates(build_parser(), words, names=cluster_names, flows=waiting_gates,
                                      every_flow=jobflow_flows)
    except Exception:  # noqa: BLE001 - a bug here must cost a TAB, not print a traceback on the prompt
        cands, directive = [], ERROR
    (out or sys.stdout).write(protocol(cands, directive))
    return 0


def main() -> int:
    """``kubectl_complete-jobflow``: kubectl passes its own stderr, which is the person's terminal, so ours goes to
    /dev/null for the whole process (a credential plugin's message included)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    return complete(sys.argv[1:])


def bash_script(prog: str = "kubectl-jobflow") -> str:
    """For ``source <(kubectl-jobflow completion bash)``; bash 3.2 and later. bash splits ``--output=js`` at ``=``:
    the words are joined again for the request, and the part before the word bash replaces is cut off the answers."""
    func = "__" + "".join(c if c.isalnum() else "_" for c in prog) + "_complete"
    return f"""# bash completion for {prog}: source <({prog} completion bash)
{func}() {{
    local i word line directive=0 joined=
    local -a words=() lines=() cands=()
    for ((i = 1; i <= COMP_CWORD; i++)); do
        word=${{COMP_WORDS[i]}}
        if ((${{#words[@]}})) && [[ $word == "=" || $joined == --*= ]] && [[ $joined == --* ]]; then
            joined+=$word
            words[${{#words[@]}}-1]=$joined
        else
            joined=$word
            words+=("$word")
        fi
    done
    while IFS= read -r line; do lines+=("$line"); done < <("${{COMP_WORDS[0]}}" __complete "${{words[@]}}" 2>/dev/null)
    if ((${{#lines[@]}})) && [[ ${{lines[${{#lines[@]}}-1]}} == :* ]]; then
        directive=${{lines[${{#lines[@]}}-1]#:}}
        unset "lines[${{#lines[@]}}-1]"
    fi
    (((directive & {ERROR}) == 0)) || return 0
    local cut=${{joined%"${{COMP_WORDS[COMP_CWORD]}}"}}
    [[ ${{COMP_WORDS[COMP_CWORD]}} == "=" ]] && cut=$joined
    for line in "${{lines[@]}}"; do cands+=("${{line%%$'\\t'*}}"); done
    COMPREPLY=()
    for line in "${{cands[@]}}"; do COMPREPLY+=("${{line#"$cut"}}"); done
    if type compopt >/dev/null 2>&1; then
        (((directive & {NO_SPACE}) == 0)) || compopt -o nospace
        (((directive & {NO_FILES}) == 0)) || compopt +o default
    fi
}}
complete -o default -F {func} {prog}
"""


def zsh_script(prog: str = "kubectl-jobflow") -> str:
    """For ``source <({prog} completion zsh)`` after ``compinit``, or saved as ``_{prog}`` in ``$fpath``."""
    func = "_" + "".join(c if c.isalnum() else "_" for c in prog)
    return f"""#compdef {prog}
# zsh completion for {prog}: source <({prog} completion zsh)
{func}() {{
    local out directive=0
    local -a lines cands
    out=$("${{words[1]}}" __complete "${{(@)words[2,CURRENT]}}" 2>/dev/null)
    lines=("${{(@f)out}}")
    if [[ ${{lines[-1]}} == :<-> ]]; then
        directive=${{lines[-1]#:}}
        lines=("${{(@)lines[1,-2]}}")
    fi
    (( directive & {ERROR} )) && return 1
    cands=("${{(@)${{(@)lines%%$'\\t'*}}:#}}")
    if (( ${{#cands}} )); then
        if (( directive & {NO_SPACE} )); then compadd -S '' -- "${{cands[@]}}"; else compadd -- "${{cands[@]}}"; fi
    elif (( ! (directive & {NO_FILES}) )); then
        _files
    fi
}}
if [[ ${{funcstack[1]-}} == _{prog} ]]; then {func} "$@"; else compdef {func} {prog}; fi
"""
