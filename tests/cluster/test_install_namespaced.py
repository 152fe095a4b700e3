"""The namespaced install, running for real: ``manifests/`` with the ``manifests/namespaced`` component, as a user
switching from the cluster-wide install would apply it (docs/install.md, docs/rbac.md).

The component lists ``team-a`` and ``team-b``; the pods of both Deployments run with ``NAMESPACES`` set and only
RoleBindings there. A JobFlow in ``team-a`` reaches ``Succeed``; one in any other namespace is left alone (no
vcjob, no status), because the event source does not watch it and the handler has no rights there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster.testing import LocalCluster
from installation import MANIFESTS, NAMESPACE, install, pods
from objects import DIAMOND, apply, diamond_templates, jobflow, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

SERVED = ("team-a", "team-b")


@pytest.fixture(scope="module")
def namespaced(pods_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    overlay = tmp_path_factory.mktemp("namespaced")
    base = os.path.relpath(MANIFESTS, overlay)  # kustomize takes no absolute paths
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources: [{base}]\ncomponents: [{base}/namespaced]\n")
    for name in SERVED:
        try:
            pods_cluster.core.create_namespace({"metadata": {"name": name}})
        except ApiException as error:
            if error.status != 409:
                raise
    rbac = client.RbacAuthorizationV1Api(pods_cluster.api)
    for name in ("jobflow-handler", "jobflow-eventsource"):  # a previous cluster-wide install's, as rbac.md says
        try:
            rbac.delete_cluster_role_binding(name)
        except ApiException as error:
            if error.status != 404:
                raise
    install(pods_cluster, kustomization=overlay)
    yield pods_cluster
    for name in SERVED:
        pods_cluster.delete_namespace(name)


def test_the_namespaced_install_serves_its_namespaces_and_leaves_the_others_alone(namespaced: LocalCluster) -> None:
    for app in ("jobflow-handler", "jobflow-eventsource"):
        for pod in pods(namespaced, app):
            env = {variable.name: variable.value for variable in pod.spec.containers[0].env}
            assert env["NAMESPACES"] == ",".join(SERVED)
    other = namespaced.create_namespace()
    try:
        for namespace in (other, "team-a"):
            apply(namespaced, namespace, diamond_templates(run_for="0s"))
            apply(namespaced, namespace, DIAMOND)

        wait_for_phase(namespaced, "team-a", "diamond", "Succeed", timeout=120)

        assert set(vcjobs(namespaced, "team-a")) == {f"diamond-{flow}" for flow in "abcde"}
        assert vcjobs(namespaced, other) == {}
        assert "status" not in jobflow(namespaced, other, "diamond")
    finally:
        namespaced.delete_namespace(other)


def test_no_cluster_wide_binding_is_left(namespaced: LocalCluster) -> None:
    bindings = client.RbacAuthorizationV1Api(namespaced.api).list_cluster_role_binding().items
    subjects = {(s.namespace, s.name) for b in bindings for s in b.subjects or [] if s.kind == "ServiceAccount"}

    assert not {(NAMESPACE, "jobflow-handler"), (NAMESPACE, "jobflow-eventsource")} & subjects
    for namespace in SERVED:
        names = {b.metadata.name for b in client.RbacAuthorizationV1Api(namespaced.api)
                 .list_namespaced_role_binding(namespace).items}
        assert {"jobflow-handler", "jobflow-eventsource"} <= names, names

