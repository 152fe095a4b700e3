"""Fixtures shared by the whole test run.

``cluster`` starts the tests' own local control plane once per run, in ``.devcluster/tests/`` (or reuses a healthy
one a previous run kept), and stops it at the end if it started it (set JOBFLOW_KEEP_CLUSTER=1 to keep it for the next
run). It is never the cluster of ``make cluster`` and ``make demo``: the demo's handler and event source keep running
after the demo and would reconcile the tests' JobFlows too. ``namespace`` gives a test its own namespace and deletes
it afterwards. Unit tests request neither, so they never start a cluster.

Hypothesis runs without its per-example deadline: a property test asserts what the code does, not how fast one
example runs on a shared 2-core machine, where the default 200 ms deadline can fail a correct example. Speed is
measured by ``benchmarks/``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from devcluster import cluster as devcluster
from devcluster.testing import LocalCluster

settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    try:
        state, started_here = devcluster.up(devcluster.TEST_ROOT, log=lambda line: print(line, flush=True))
    except Exception as error:  # the message already says which component failed and what to do
        pytest.fail(f"the local control plane could not start:\n{error}", pytrace=False)
    local = LocalCluster(state)
    yield local
    local.close()
    if started_here and not os.environ.get("JOBFLOW_KEEP_CLUSTER"):
        devcluster.down(devcluster.TEST_ROOT, log=lambda line: None)


@pytest.fixture
def namespace(cluster: LocalCluster) -> Iterator[str]:
    cluster.assert_alive()
    name = cluster.create_namespace()
    yield name
    cluster.delete_namespace(name)
    cluster.assert_alive()
