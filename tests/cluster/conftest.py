"""Fixtures of the cluster tier: the engine (handler + event source, in-process), the bare handler, and the install
tier's own cluster, whose node runs the image's pods (``devcluster/pod_node.py``)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator

import pytest

from devcluster import cluster as devcluster
from devcluster import image, pod_node
from devcluster.testing import LocalCluster
from engine import Engine, Handler, start_engine, start_handler
from kubectl_jobflow.cli import run


@pytest.fixture
def cli(cluster: LocalCluster):
    """Run ``kubectl jobflow ARGS`` in-process (as the console script does) against the local cluster: (exit code,
    stdout, stderr)."""
    def invoke(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = run([*argv, "--kubeconfig", str(cluster.state.kubeconfig)], out=out, err=err)
        return code, out.getvalue(), err.getvalue()
    return invoke


@pytest.fixture
def handler(cluster: LocalCluster) -> Iterator[Handler]:
    running = start_handler(cluster)
    yield running
    running.stop()


@pytest.fixture
def engine(cluster: LocalCluster, namespace: str) -> Iterator[Engine]:
    running = start_engine(cluster, namespace)
    yield running
    running.stop()


@pytest.fixture(scope="session")
def pods_cluster() -> Iterator[LocalCluster]:
    """A cluster with the pod node, and the image built from this tree. Needs root (network namespaces, podman),
    which CI has; elsewhere the tier is skipped, saying so."""
    if os.geteuid() != 0:
        pytest.skip("the install tier needs root (network namespaces, iptables and podman for the pod node); "
                    "CI runs it as root")
    log = lambda line: print(line, flush=True)  # noqa: E731
    try:
        built = image.ensure_image(log=log)
        state, started_here = devcluster.up(devcluster.INSTALL_ROOT, log=log, pods=True)
        pod_node.load_image(state, built)
    except Exception as error:  # the message says which step failed and what to do
        pytest.fail(f"the install tier's cluster could not start:\n{error}", pytrace=False)
    local = LocalCluster(state)
    yield local
    local.close()
    if started_here and not os.environ.get("JOBFLOW_KEEP_CLUSTER"):
        devcluster.down(devcluster.INSTALL_ROOT, log=lambda line: None)


@pytest.fixture
def pods_namespace(pods_cluster: LocalCluster) -> Iterator[str]:
    """A fresh namespace on the install tier's cluster, deleted after the test."""
    name = pods_cluster.create_namespace()
    yield name
    pods_cluster.delete_namespace(name)
