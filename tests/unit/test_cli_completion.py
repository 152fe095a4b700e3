"""Shell completion: what TAB offers after ``kubectl jobflow`` (kubectl_jobflow/completion.py).

The parser here mirrors the command line's shape (subcommands with aliases, a nested ``template`` group, ``-o`` with
choices, ``-f FILE``, a positional name), so each behaviour is stated once, whatever the real commands become; one
test checks the real parser.
"""

from __future__ import annotations

import argparse
import io
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kubectl_jobflow.completion import (
    FILES,
    NO_FILES,
    NO_SPACE,
    bash_script,
    candidates,
    cluster_names,
    complete,
    protocol,
    waiting_gates,
    zsh_script,
)


def shaped_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-n", "--namespace")
    common.add_argument("--context")
    common.add_argument("-k", "--kubeconfig")
    parser = argparse.ArgumentParser(prog="kubectl jobflow", parents=[common])
    commands = parser.add_subparsers()

    def resources(group) -> None:
        sub = group.add_parser("get", parents=[common])
        sub.add_argument("names", nargs="*", metavar="NAME")
        sub.add_argument("-o", "--output", choices=("json", "yaml", "wide"))
        sub = group.add_parser("create", parents=[common])
        sub.add_argument("-f", "--file", action="append", metavar="FILE")
        sub.add_argument("--kustomize", metavar="DIR")

    resources(commands)
    templates = commands.add_parser("template", aliases=["jobtemplate", "jt"], parents=[common])
    resources(templates.add_subparsers())
    sub = commands.add_parser("status", parents=[common])
    sub.add_argument("name", nargs="?")
    sub.add_argument("-w", "--watch", action="store_true")
    sub.add_argument("-o", "--output", type=formats(("name", "json", "jsonpath=")), metavar="FORMAT")
    sub = commands.add_parser("approve", parents=[common])
    sub.add_argument("name", nargs="?")
    sub.add_argument("flow", nargs="?", metavar="FLOW")
    sub.add_argument("-m", "--message")
    commands.add_parser("completion").add_argument("shell", choices=("bash", "zsh"))
    commands.add_parser("__complete").add_argument("words", nargs=argparse.REMAINDER)
    return parser


def formats(allowed: tuple[str, ...]):
    def parse(value: str) -> str:
        return value
    parse.choices = allowed  # type: ignore[attr-defined]
    return parse


def names_of(calls: list[tuple[str, list[str]]]):
    def names(command: str, words: list[str]) -> list[str]:
        calls.append((command, words))
        return ["etl", "etl-nightly", "train"]
    return names


def test_the_first_word_is_a_subcommand_aliases_included_hidden_ones_not():
    assert candidates(shaped_parser(), [""]) == (
        ["get", "create", "template", "jobtemplate", "jt", "status", "approve", "completion"], NO_FILES)
    assert candidates(shaped_parser(), ["j"]) == (["jobtemplate", "jt"], NO_FILES)
    assert candidates(shaped_parser(), ["__"]) == ([], NO_FILES)


def test_a_nested_group_is_reached_through_an_alias():
    assert candidates(shaped_parser(), ["jt", "g"]) == (["get"], NO_FILES)


def test_a_name_comes_from_the_cluster_for_the_command_path_aliases_resolved():
    calls: list[tuple[str, list[str]]] = []
    assert candidates(shaped_parser(), ["jt", "get", "etl"], names=names_of(calls)) == (
        ["etl", "etl-nightly"], NO_FILES)
    assert calls == [("template get", ["jt", "get", "etl"])]


def test_names_already_typed_are_not_offered_again():
    assert candidates(shaped_parser(), ["get", "etl", ""], names=names_of([])) == (
        ["etl-nightly", "train"], NO_FILES)


def test_a_single_name_argument_once_given_takes_no_more():
    assert candidates(shaped_parser(), ["status", "etl", ""], names=names_of([])) == ([], NO_FILES)


def test_options_and_their_values_before_the_word_are_skipped_over():
    calls: list[tuple[str, list[str]]] = []
    words = ["-n", "prod", "status", "-w", "--context", "dev", ""]
    assert candidates(shaped_parser(), words, names=names_of(calls))[0] == ["etl", "etl-nightly", "train"]
    assert calls == [("status", words)]


def gates_of(calls: list[tuple[str, list[str]]]):
    def flows(jobflow: str, words: list[str]) -> list[str]:
        calls.append((jobflow, words))
        return ["deploy-ok", "release-ok"]
    return flows


def test_after_a_jobflows_name_its_gates_are_offered_for_flow():
    names: list[tuple[str, list[str]]] = []
    gates: list[tuple[str, list[str]]] = []
    assert candidates(shaped_parser(), ["approve", "e"], names=names_of(names), flows=gates_of(gates)) == (
        ["etl", "etl-nightly"], NO_FILES)
    words = ["approve", "-n", "prod", "etl", "-m", "fine", "d"]
    assert candidates(shaped_parser(), words, names=names_of(names), flows=gates_of(gates)) == (
        ["deploy-ok"], NO_FILES)
    assert gates == [("etl", words)]
    assert candidates(shaped_parser(), ["approve", "etl", "deploy-ok", ""], flows=gates_of([])) == ([], NO_FILES)


def test_without_a_names_function_a_name_offers_nothing():
    assert candidates(shaped_parser(), ["get", ""]) == ([], NO_FILES)


def test_a_dash_offers_the_subcommands_options():
    offered, directive = candidates(shaped_parser(), ["get", "--o"])
    assert (offered, directive) == (["--output"], NO_FILES)
    assert {"-o", "--namespace", "-h"} <= set(candidates(shaped_parser(), ["get", "-"])[0])


def test_an_option_with_choices_offers_them():
    assert candidates(shaped_parser(), ["get", "-o", ""]) == (["json", "yaml", "wide"], NO_FILES)
    assert candidates(shaped_parser(), ["jt", "get", "-o", "y"]) == (["yaml"], NO_FILES)


def test_an_option_written_with_equals_offers_the_whole_word():
    assert candidates(shaped_parser(), ["get", "--output=j"]) == (["--output=json"], NO_FILES)


def test_the_choices_a_type_carries_are_offered_and_a_template_follows_without_a_space():
    assert candidates(shaped_parser(), ["status", "-o", ""]) == (["name", "json", "jsonpath="], NO_FILES)
    assert candidates(shaped_parser(), ["status", "-o", "jsonp"]) == (["jsonpath="], NO_FILES | NO_SPACE)


@pytest.mark.parametrize("option", ["-f", "--file", "-k", "--kubeconfig", "--kustomize"])
def test_an_option_naming_a_file_leaves_the_shell_to_complete_file_names(option):
    assert candidates(shaped_parser(), ["create", option, "exa"]) == ([], FILES)


def test_a_positional_with_choices_offers_them():
    assert candidates(shaped_parser(), ["completion", "z"]) == (["zsh"], NO_FILES)


def test_no_words_is_completing_the_first():
    assert candidates(shaped_parser(), [])[0][0] == "get"


def test_the_real_command_line_completes_get():
    from kubectl_jobflow.cli import build_parser

    assert "get" in candidates(build_parser(), ["ge"])[0]


def test_the_protocol_is_one_candidate_a_line_then_the_directive():
    assert protocol(["get", "status\ta JobFlow's flows"], NO_FILES) == "get\nstatus\ta JobFlow's flows\n:4\n"
    assert protocol([], FILES) == ":0\n"


def test_the_protocol_keeps_a_candidate_on_one_line():
    assert protocol(["etl\tfirst line\nsecond line", " "], NO_FILES) == "etl\tfirst line\n:4\n"


class FakeCluster:
    """Stands in for apiclient.cluster.Cluster: records what was listed where, and through which kubeconfig."""

    listed: list[tuple[str, str, str | None]] = []

    def __init__(self, target) -> None:
        self.target = target
        self.rest = SimpleNamespace(timeout=None)

    def list(self, api_type, namespace: str) -> dict:
        self.listed.append((api_type.kind, namespace, self.target.context))
        return {"items": [{"metadata": {"name": "b"}}, {"metadata": {"name": "a"}}]}

    def close(self) -> None:
        pass


@pytest.mark.parametrize("command, words, kind, namespace, context, names", [
    ("get", ["get", ""], "JobFlow", "from-kubeconfig", None, ["a", "b"]),
    ("template get", ["jt", "get", "-n", "team", ""], "JobTemplate", "team", None, ["a", "b"]),
    ("run", ["--context", "dev", "run", "--namespace=ml", ""], "JobFlowTemplate", "ml", "dev", ["a", "b"]),
    ("suspend", ["suspend", "jft/"], "JobFlowTemplate", "from-kubeconfig", None, ["jft/a", "jft/b"]),
])
def test_cluster_names_lists_the_kind_the_command_takes_where_the_words_say(monkeypatch, command, words, kind,
                                                                             namespace, context, names):
    monkeypatch.setattr("apiclient.cluster.Cluster", FakeCluster)
    monkeypatch.setattr("apiclient.kubeconfig.default_namespace", lambda kubeconfig, *, context: "from-kubeconfig")
    monkeypatch.setattr(FakeCluster, "listed", [])
    assert cluster_names(command, words) == names
    assert FakeCluster.listed == [(kind, namespace, context)]


def test_waiting_gates_are_the_gates_of_the_named_jobflow_that_take_an_answer_now(monkeypatch):
    from test_cli_approval import gated

    found = []

    class Holding(FakeCluster):
        def find(self, api_type, namespace: str, name: str) -> dict | None:
            found.append((api_type.kind, namespace, name))
            if name != "release":
                return None
            release = gated()
            # A second gate, not open yet: its target deploy has not run.
            release["spec"]["flows"].append({"name": "announce", "dependsOn": {"targets": ["deploy"]},
                                             "approval": {}})
            release["status"]["waitingFlows"].append({"name": "announce", "jobName": "release-announce",
                                                      "waitingFor": ["deploy"]})
            return release

    monkeypatch.setattr("apiclient.cluster.Cluster", Holding)
    monkeypatch.setattr("apiclient.kubeconfig.default_namespace", lambda kubeconfig, *, context: "from-kubeconfig")
    assert waiting_gates("release", ["approve", "-n", "ns", "release", ""]) == ["deploy-ok"]
    assert waiting_gates("gone", ["approve", "gone", ""]) == []
    assert found == [("JobFlow", "ns", "release"), ("JobFlow", "from-kubeconfig", "gone")]


def test_an_unreachable_cluster_gives_no_names(monkeypatch, tmp_path):
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert cluster_names("get", ["get", ""]) == []
    out = io.StringIO()
    assert complete(["get", ""], out=out) == 0
    assert out.getvalue() == ":4\n"


def test_the_kubectl_entry_point_prints_a_directive_and_exits_0_without_a_cluster(monkeypatch, tmp_path):
    # A process of its own, as kubectl runs it: main() points this process's stderr at /dev/null.
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    code = "import sys; from kubectl_jobflow.completion import main; sys.argv[1:] = ['get', '']; sys.exit(main())"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).parents[2])
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, ":4\n", "")


def test_the_bash_script_is_valid_bash(tmp_path):
    script = tmp_path / "completion.bash"
    script.write_text(bash_script())
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_bash_joins_an_option_split_at_equals_and_completes_only_the_value(tmp_path):
    # bash splits `--output=j` into three words; the request gets one, and TAB replaces only `j`.
    program = tmp_path / "jf"
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/asked\nprintf "%s\\n" --output=json :4\n')
    program.chmod(0o755)
    probe = (f'source <(cat {tmp_path}/completion.bash); COMP_WORDS=({program} get --output = j); COMP_CWORD=4; '
             '__jf_complete; printf "%s\\n" "${COMPREPLY[@]}"')
    (tmp_path / "completion.bash").write_text(bash_script("jf"))
    ran = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    assert ran.stdout == "json\n"
    assert (tmp_path / "asked").read_text() == "__complete\nget\n--output=j\n"


def test_the_zsh_script_is_valid_zsh(tmp_path):
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed here, so its syntax check cannot run")
    script = tmp_path / "_kubectl-jobflow"
    script.write_text(zsh_script())
    subprocess.run(["zsh", "-n", str(script)], check=True)


@pytest.mark.parametrize("command", ["approve", "reject"])
def test_the_real_command_line_completes_an_answers_jobflow_then_its_gate(command):
    from kubectl_jobflow.cli import build_parser

    names: list[tuple[str, list[str]]] = []
    assert candidates(build_parser(), [command, "t"], names=names_of(names), flows=gates_of([]))[0] == ["train"]
    assert names == [(command, [command, "t"])]
    assert candidates(build_parser(), [command, "train", "-m", "ok", ""], flows=gates_of([]))[0] == [
        "deploy-ok", "release-ok"]
