"""Least privilege in both install modes (issue 16): every row of the ``kubectl auth can-i`` table in docs/rbac.md,
asked of the real API server as the engine's accounts, cluster-wide and namespaced.

Each mode's RBAC is rendered with kustomize as a user would get it (``manifests/`` alone, and ``manifests/`` with the
component ``manifests/namespaced/``; in both, the webhook's ``manifests/webhook/``, the same in both), then installed
under names of this test: the ServiceAccounts in a fresh namespace standing for ``volcano-jobflow``, cluster-scoped
names suffixed, and the example's served namespaces ``team-a`` and ``team-b`` mapped to fresh namespaces (a third one is
"other").
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client, utils
from kubernetes.client.rest import ApiException

from devcluster.testing import LocalCluster
from test_manifests import KUBECTL, kubectl

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "rbac.md"
MODES = ("cluster-wide", "namespaced")
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
ACCOUNTS = {"handler": "jobflow-handler", "eventsource": "jobflow-eventsource", "admission": "jobflow-admission"}


def can_i_table() -> list[dict[str, str]]:
    text = DOC.read_text()
    table = text[text.index("<!-- can-i-table-start -->"):text.index("<!-- can-i-table-end -->")]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.splitlines()
            if line.startswith("|")]
    return [dict(zip(rows[0], row)) for row in rows[2:]]  # rows[1] is the | --- | line


def rendered(mode: str, tmp_path: Path) -> list[dict]:
    """The RBAC documents of one mode, as ``kubectl kustomize`` renders the install."""
    if mode == "cluster-wide":
        target = REPO / "manifests"
    else:  # a kustomization of the user's own, next to the repository's (kustomize wants relative paths)
        target = tmp_path / "namespaced-install"
        target.mkdir()
        (target / "kustomization.yaml").write_text(yaml.safe_dump({
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": [os.path.relpath(REPO / "manifests", target)],
            "components": [os.path.relpath(REPO / "manifests" / "namespaced", target)]}))
    out = "\n---\n".join(subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True,
                                        check=True).stdout for directory in (target, REPO / "manifests" / "webhook"))
    return [doc for doc in yaml.safe_load_all(out) if doc and doc["kind"] in RBAC_KINDS]


def renamed(docs: list[dict], *, install: str, served: dict[str, str], suffix: str) -> list[dict]:
    for doc in docs:
        meta = doc["metadata"]
        if doc["kind"] == "ServiceAccount":
            meta["namespace"] = install
        elif meta.get("namespace") == "volcano-jobflow":  # in the engine's own namespace: the snapshot key's Role
            meta["namespace"], meta["name"] = install, meta["name"] + suffix
        elif doc["kind"] == "RoleBinding":
            meta["namespace"] = served[meta["namespace"]]
        else:
            meta["name"] += suffix
        if "roleRef" in doc:
            doc["roleRef"]["name"] += suffix
            for subject in doc["subjects"]:
                subject["namespace"] = install
    return docs


@pytest.fixture(scope="module", params=MODES)
def installed(request, cluster: LocalCluster, tmp_path_factory) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(mode, install namespace, where -> namespace) with that mode's RBAC in place."""
    mode = request.param
    install, served, other = (cluster.create_namespace() for _ in range(3))
    spare = cluster.create_namespace()  # team-b: served too
    suffix = f"-{install}"
    docs = renamed(rendered(mode, tmp_path_factory.mktemp(mode)), install=install,
                   served={"team-a": served, "team-b": spare}, suffix=suffix)
    assert {doc["kind"] for doc in docs} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
                                             "RoleBinding"}
    if mode == "namespaced":  # the webhook reviews every namespace's JobFlows: its reads stay cluster-wide
        assert [doc["metadata"]["name"] for doc in docs if doc["kind"] == "ClusterRoleBinding"] == [
            f"jobflow-admission{suffix}"]
    try:
        for doc in docs:
            utils.create_from_dict(cluster.api, doc)
        where = {"served": served, "other": other, "kube-system": "kube-system", "engine's": install}
        as_handler = f"--as=system:serviceaccount:{install}:jobflow-handler"
        # The authorizer learns of new bindings through its informers, a moment after they are created.
        cluster.wait_until("the bindings to take effect", lambda: kubectl(
            cluster, "auth", "can-i", "get", "jobflows.flow.volcano.sh", "-n", served, as_handler).returncode == 0,
            timeout=30)
        yield mode, install, where
    finally:
        rbac = client.RbacAuthorizationV1Api(cluster.api)
        for doc in docs:
            try:
                if doc["kind"] == "ClusterRole":
                    rbac.delete_cluster_role(doc["metadata"]["name"])
                elif doc["kind"] == "ClusterRoleBinding":
                    rbac.delete_cluster_role_binding(doc["metadata"]["name"])
            except ApiException as error:
                if error.status != 404:
                    raise
        for namespace in (install, served, other, spare):
            cluster.delete_namespace(namespace)


def test_every_row_of_the_can_i_table_holds(cluster: LocalCluster, installed) -> None:
    mode, install, where = installed
    table = can_i_table()
    assert len(table) >= 30
    wrong = []
    for row in table:
        scope = ["--all-namespaces"] if row["where"] == "all namespaces" else ["-n", where[row["where"]]]
        account = f"system:serviceaccount:{install}:{ACCOUNTS[row['account']]}"
        resource, _, name = row["resource"].partition(" named ")  # one object: kubectl's TYPE/NAME
        resource, _, subresource = resource.partition("/")
        asked = kubectl(cluster, "auth", "can-i", row["verb"], f"{resource}/{name}" if name else resource, *scope,
                        f"--as={account}",
                        *([f"--subresource={subresource}"] if subresource else []))
        answer = asked.stdout.strip() or asked.stderr.strip()
        assert re.fullmatch(r"yes|no", answer), f"kubectl auth can-i said {answer!r} for {row}"
        if answer != row[mode]:
            wrong.append(f"{row['account']} {row['verb']} {row['resource']} in {row['where']}: {answer}, "
                         f"docs/rbac.md says {row[mode]}")
    assert wrong == [], f"{mode}:\n" + "\n".join(wrong)
