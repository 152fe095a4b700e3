"""The dashboard's install, running for real: ``manifests/dashboard/`` applied as docs/install.md says, its pod
running the image on the install tier's pod node, reached through its Service as a port-forward would reach it.

It needs only the CRDs (devcluster installs them) and the engine's namespace, so it runs after the engine's install
or on its own. That namespace enforces the "restricted" Pod Security Standard, so a running pod proves the
Deployment meets it. Its Deployment is read-only: the pages offer no actions, every action answers 403, and its
ServiceAccount may read JobFlows but never write them, so no request through the page can change one.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from kubernetes import client

from devcluster import image
from devcluster.podman import podman
from devcluster.testing import LocalCluster
from installation import (MANIFESTS, NAMESPACE, describe_pods, kubectl, pods, routed_to_ready_pods,
                          wait_rolled_out)
from objects import apply, jobflow

pytestmark = pytest.mark.cluster

NAME = "jobflow-dashboard"
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:{NAME}"
SHOWN = "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: shown}\nspec: {flows: [{name: a}]}\n"
"""A JobFlow whose template does not exist: an engine installed alongside leaves it waiting, and starts no vcjob."""


@pytest.fixture(scope="module")
def dashboard(pods_cluster: LocalCluster) -> Iterator[str]:
    """The dashboard installed afresh (a kept cluster's pod may run an image built from an older tree), ready and
    routed; its Service's URL, which kube-proxy on the host routes to the pod."""
    kubectl(pods_cluster, "delete", "-k", str(MANIFESTS / "dashboard"), "--ignore-not-found", "--wait=true")
    kubectl(pods_cluster, "apply", "--server-side", "--force-conflicts", "-f", str(MANIFESTS / "namespace.yaml"))
    kubectl(pods_cluster, "apply", "-k", str(MANIFESTS / "dashboard"))
    wait_rolled_out(pods_cluster, (NAME,))
    pods_cluster.wait_until(f"kube-proxy to route Service {NAME} to its ready pod",
                            lambda: routed_to_ready_pods(pods_cluster, NAME), timeout=30)
    service = pods_cluster.core.read_namespaced_service(NAME, NAMESPACE)
    yield f"http://{service.spec.cluster_ip}:{service.spec.ports[0].port}"
    kubectl(pods_cluster, "delete", "-k", str(MANIFESTS / "dashboard"), "--ignore-not-found", "--wait=true")


@pytest.fixture
def user_namespace(dashboard: str, pods_cluster: LocalCluster) -> Iterator[str]:
    name = pods_cluster.create_namespace()
    yield name
    pods_cluster.delete_namespace(name)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def post_json(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_dashboard_pod_runs_the_image_as_uid_10001(dashboard: str, pods_cluster: LocalCluster) -> None:
    built = podman("image", "inspect", "--format", "{{.Id}}", image.manifest_image()).stdout.decode().strip()
    [pod] = pods(pods_cluster, NAME)
    [status] = pod.status.container_statuses

    assert pod.spec.node_name.startswith("pods-")
    assert status.ready and status.image_id.endswith(f"sha256:{built}"), describe_pods(pods_cluster)
    assert pod.spec.security_context.run_as_user == 10001
    assert pod.spec.containers[0].security_context.read_only_root_filesystem
    said = kubectl(pods_cluster, "-n", NAMESPACE, "logs", pod.metadata.name)
    assert f"JobFlow dashboard {image.project_version()} of " in said  # it logs its version when it starts


def test_the_list_page_answers_through_the_service_and_says_read_only(dashboard: str) -> None:
    status, page = get(f"{dashboard}/")

    assert status == 200
    assert "JobFlow dashboard" in page and "read-only" in page


def test_a_new_jobflow_shows_up_within_seconds(dashboard: str, pods_cluster: LocalCluster,
                                               user_namespace: str) -> None:
    apply(pods_cluster, user_namespace, SHOWN)

    def listed() -> bool:
        status, body = get(f"{dashboard}/api/jobflows")
        rows = json.loads(body)["jobflows"] if status == 200 else []
        return any((row["namespace"], row["name"]) == (user_namespace, "shown") for row in rows)

    pods_cluster.wait_until("the dashboard's /api/jobflows to list the new JobFlow", listed, timeout=10,
                            interval=0.2)


def test_the_jobflow_page_has_no_actions_and_a_suspend_is_refused(dashboard: str, pods_cluster: LocalCluster,
                                                                  user_namespace: str) -> None:
    apply(pods_cluster, user_namespace, SHOWN)

    status, page = get(f"{dashboard}/jobflows/{user_namespace}/shown")
    refused, answer = post_json(f"{dashboard}/api/jobflows/{user_namespace}/shown/suspend", {"flows": []})

    assert status == 200 and 'id="actions"' not in page
    assert refused == 403 and answer["error"].startswith("this dashboard is read-only"), answer
    assert "suspend" not in jobflow(pods_cluster, user_namespace, "shown")["spec"]


def allowed(cluster: LocalCluster, verb: str, resource: str, group: str, namespace: str) -> bool:
    """Whether the API server's authorizer lets the dashboard's ServiceAccount do this (a SubjectAccessReview,
    as ``kubectl auth can-i --as`` asks)."""
    review = client.AuthorizationV1Api(cluster.api).create_subject_access_review(client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(user=ACCOUNT, resource_attributes=client.V1ResourceAttributes(
            verb=verb, resource=resource, group=group, namespace=namespace))))
    return review.status.allowed


def test_the_service_account_reads_but_never_writes(dashboard: str, pods_cluster: LocalCluster) -> None:
    reads = [("list", "jobflows", "flow.volcano.sh"), ("watch", "jobtemplates", "flow.volcano.sh"),
             ("watch", "jobflowtemplates", "flow.volcano.sh"), ("watch", "jobs", "batch.volcano.sh"),
             ("list", "events", "")]
    writes = [("patch", "jobflows", "flow.volcano.sh"), ("update", "jobflows", "flow.volcano.sh"),
              ("create", "jobflows", "flow.volcano.sh"), ("delete", "jobs", "batch.volcano.sh"),
              ("create", "events", ""), ("list", "secrets", "")]

    assert [read for read in reads if not allowed(pods_cluster, *read, "default")] == []
    assert [write for write in writes if allowed(pods_cluster, *write, "default")] == []
