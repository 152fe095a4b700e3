"""Fixtures of the cluster tier: the engine (handler + event source, in-process) and the bare handler."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devcluster.testing import LocalCluster
from engine import Engine, Handler, start_engine, start_handler


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
