"""One JobFlow the cluster refuses never blocks the others (issue 16): a vcjob create answered 403 by a
ValidatingAdmissionPolicy shows in that JobFlow's status and events, and a resync still reconciles every other
JobFlow and answers 202 (a refusal is a fact of the cluster, recorded, not a failure of the delivery)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster.testing import LocalCluster
from engine import post, serve
from handlers.kube import KubeApi
from objects import apply, events_of, jobflow, template, vcjobs
from test_knative_events import ping_event

pytestmark = pytest.mark.cluster

FLOW = "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\nspec: {flows: [{name: a}]}\n"


class TheseNamespaces(KubeApi):
    """The real API, except that a resync lists only the test's namespaces (the cluster is shared)."""

    def __init__(self, api: client.ApiClient, namespaces: list[str]) -> None:
        super().__init__(api)
        self.namespaces = namespaces

    def list_jobflows(self, namespace: str | None = None) -> list[dict]:
        if namespace is not None:
            return super().list_jobflows(namespace)
        return [raw for ns in self.namespaces for raw in KubeApi.list_jobflows(self, ns)]


@pytest.fixture
def denied(cluster: LocalCluster, namespace: str) -> Iterator[str]:
    """A policy that forbids creating vcjobs in ``namespace`` (403 Forbidden, its message)."""
    admission = client.AdmissionregistrationV1Api(cluster.api)
    name = f"no-vcjobs-{namespace}"
    admission.create_validating_admission_policy({
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": ["batch.volcano.sh"], "apiVersions": ["*"],
                                                         "operations": ["CREATE"], "resources": ["jobs"]}]},
                 "validations": [{"expression": "false", "reason": "Forbidden",
                                  "message": "vcjobs are not allowed in this namespace (test policy)"}]}})
    admission.create_validating_admission_policy_binding({
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {
                     "kubernetes.io/metadata.name": namespace}}}}})
    probe = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "probe"},
             "spec": {"minAvailable": 0, "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
                 "containers": [{"name": "c", "image": "busybox"}]}}}]}}

    def enforced() -> bool:  # the policy reaches the API server's admission a moment after it is created
        try:
            cluster.custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs", probe,
                                                           dry_run="All")
        except ApiException as error:
            return error.status == 403
        return False

    cluster.wait_until("the policy to be enforced", enforced, timeout=30, interval=0.5)
    yield namespace
    admission.delete_validating_admission_policy_binding(name)
    admission.delete_validating_admission_policy(name)


def test_a_create_forbidden_by_an_admission_policy_shows_in_status_and_events_and_the_resync_goes_on(
        cluster: LocalCluster, denied: str) -> None:
    allowed = cluster.create_namespace()
    try:
        for namespace in (denied, allowed):
            apply(cluster, namespace, template("a") + "---\n" + FLOW)
        with serve(TheseNamespaces(cluster.connection, [denied, allowed])) as url:
            headers, body = ping_event()
            assert post(url + "resync", body, headers) == (202, b"")
        state = jobflow(cluster, denied, "f")["status"]["state"]
        assert state["reason"] == "JobRejected" and "not allowed in this namespace (test policy)" in state["message"]
        assert ("Warning", "JobRejected") in [(t, r) for t, r, _ in events_of(cluster, denied, "f")]
        assert vcjobs(cluster, denied) == {}
        assert list(vcjobs(cluster, allowed)) == ["f-a"]  # the JobFlow after the refused one
    finally:
        cluster.delete_namespace(allowed)
