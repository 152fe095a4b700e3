"""TAB after ``kubectl jobflow logs``: the JobFlows, then every flow of the one named (not only its waiting gates, as
after ``approve``), then the flags."""

from __future__ import annotations

from kubectl_jobflow.cli import build_parser
from kubectl_jobflow.completion import NO_FILES, candidates, jobflow_flows


def names(command: str, words: list[str]) -> list[str]:
    return ["etl", "train"]


def gates(jobflow: str, words: list[str]) -> list[str]:
    return ["deploy-ok"]


def every_flow(jobflow: str, words: list[str]) -> list[str]:
    return {"train": ["prepare", "fit", "deploy-ok"]}.get(jobflow, [])


def test_logs_completes_the_jobflow_then_any_of_its_flows_then_its_flags():
    parser = build_parser()
    assert candidates(parser, ["logs", "t"], names=names, flows=gates, every_flow=every_flow) == (["train"], NO_FILES)
    assert candidates(parser, ["-n", "ns", "logs", "train", ""], names=names, flows=gates,
                      every_flow=every_flow) == (["prepare", "fit", "deploy-ok"], NO_FILES)
    assert candidates(parser, ["logs", "train", "--max"], every_flow=every_flow) == (["--max-log-requests"], NO_FILES)
    assert candidates(parser, ["approve", "train", ""], flows=gates, every_flow=every_flow)[0] == ["deploy-ok"]


def test_a_cluster_that_does_not_answer_offers_no_flows(tmp_path):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text('apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\n'
                          "users: [{name: u, user: {token: t}}]\n"
                          "contexts: [{name: far, context: {cluster: c, user: u}}]\n"
                          "current-context: far\n")
    assert jobflow_flows("train", ["logs", "--kubeconfig", str(kubeconfig), "train", ""]) == []
