"""The Pod Security "restricted" profile, enforced on a namespace by the real API server's admission.

Our manifests promise pods that the "restricted" Pod Security Standard admits (``manifests/``, the webhook's, the
ones Knative makes from ``knative/``). The cluster tier proves it the way a cluster would: label a namespace to
enforce the profile, then create the pods there (a server-side dry run is enough: admission runs). The label takes
effect a moment after it is written, so :func:`enforce_restricted` waits until a pod with no securityContext at all
is refused: the check has teeth before any pod of ours is judged. Defined once
(``tests/unit/test_one_helper_each.py`` fails on a second).
"""

from __future__ import annotations

from kubernetes.client.rest import ApiException

from devcluster.testing import LocalCluster

ENFORCE = "pod-security.kubernetes.io/enforce"
CARELESS = {"metadata": {"name": "careless"}, "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
"""A pod that asks for nothing: the restricted profile refuses it."""


def enforce_restricted(cluster: LocalCluster, namespace: str) -> None:
    """Label ``namespace`` to enforce the restricted profile; return once Pod Security admission refuses
    :data:`CARELESS` there."""
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": {ENFORCE: "restricted"}}})

    def refused_by_pod_security() -> bool:
        try:
            cluster.core.create_namespaced_pod(namespace, CARELESS, dry_run="All")
        except ApiException as error:
            return error.status == 403 and "PodSecurity" in error.body
        return False

    cluster.wait_until(f"Pod Security admission to enforce the restricted profile in {namespace}",
                       refused_by_pod_security, timeout=30)
