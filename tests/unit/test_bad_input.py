"""Inputs that once got a 500 (issue 16) get a 400 that says why, and reach no API server at all."""

from __future__ import annotations

import json

import pytest

from handlers import create_app

BINARY = {"ce-specversion": "1.0", "ce-id": "1", "ce-source": "x", "Content-Type": "application/json"}
STRUCTURED = {"Content-Type": "application/cloudevents+json"}


class NoJobFlows:
    """An API server holding no JobFlow, recording what the handler asked: bad input must ask nothing."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def get_jobflow(self, namespace: str, name: str) -> None:
        self.asked.append(f"get_jobflow {namespace}/{name}")

    def list_vcjobs(self, namespace: str, label_selector: str) -> list[dict]:
        self.asked.append(f"list_vcjobs {namespace}")
        return []

    def list_runs(self, namespace: str, label_selector: str) -> list[dict]:
        self.asked.append(f"list_runs {namespace} {label_selector}")
        return []


@pytest.fixture
def kube() -> NoJobFlows:
    return NoJobFlows()


@pytest.fixture
def client(kube: NoJobFlows):
    return create_app({"KUBE": kube}).test_client()


def naming(kind: str, api_version: str, namespace: str, name: str) -> dict[str, str]:
    return {**BINARY, "ce-type": "dev.knative.apiserver.ref.update", "ce-kind": kind, "ce-apiversion": api_version,
            "ce-namespace": namespace, "ce-name": name}


DEEP = 100_000  # beyond any recursion limit: cel-python raises it to 2,500 once a condition is compiled

CASES = {
    "JSON nested 100,000 deep, structured": (
        '{"specversion":"1.0","id":"1","source":"x","type":"t","data":' + "[" * DEEP + "]" * DEEP + "}",
        STRUCTURED, "nested too deeply"),
    "JSON nested 100,000 deep, binary data": ("[" * DEEP + "]" * DEEP, {**BINARY, "ce-type": "t"},
                                              "nested too deeply"),
    "namespace '..' (would make a namespaced LIST cluster-wide)": (
        "{}", naming("Job", "batch.volcano.sh/v1alpha1", "..", "a"), "not a Kubernetes namespace"),
    "namespace with a slash": ("{}", naming("JobFlow", "flow.volcano.sh/v1alpha1", "a/b", "f"),
                               "not a Kubernetes namespace"),
    "name '%'": ("{}", naming("JobFlow", "flow.volcano.sh/v1alpha1", "ns", "%"), "not a Kubernetes object name"),
    "name '.'": ("{}", naming("JobTemplate", "flow.volcano.sh/v1alpha1", "ns", "."), "not a Kubernetes object name"),
    "name of 254 characters": ("{}", naming("JobFlow", "flow.volcano.sh/v1alpha1", "ns", "a" * 254),
                               "not a Kubernetes object name"),
    "kind a list, structured": (json.dumps({"specversion": "1.0", "id": "1", "source": "x", "type": "t",
                                            "kind": ["JobFlow"]}), STRUCTURED, "this handler understands"),
    "kind a number in the data": (json.dumps({"kind": 5, "apiVersion": {"a": 1}, "name": "x", "namespace": "y"}),
                                  {**BINARY, "ce-type": "t"}, "this handler understands"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_gets_a_400_that_says_why_and_reads_nothing(client, kube: NoJobFlows, case: str) -> None:
    body, headers, why = CASES[case]
    reply = client.post("/", data=body, headers=headers)
    assert reply.status_code == 400, reply.data
    assert why in reply.get_json()["error"]
    assert kube.asked == []


def test_a_valid_name_with_dots_still_reaches_the_api_server(client, kube: NoJobFlows) -> None:
    reply = client.post("/", data="{}", headers=naming("JobFlow", "flow.volcano.sh/v1alpha1", "team-a", "nightly.v2"))
    assert reply.status_code == 202 and kube.asked == [
        "list_vcjobs team-a", "get_jobflow team-a/nightly.v2",
        "list_runs team-a jobflow.waits.flow.volcano.sh/nightly.v2"]  # it went: those waiting for it are told
