"""Bad situations when building or starting the control plane get messages that say which part and what to do."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from devcluster import build, cluster, objects, processes
from devcluster.cluster import _failure as devcluster_failure
from devcluster.components import module_named

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]


def test_no_go_on_path_says_to_install_go(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "devcluster", "build"], env=env, cwd=REPO, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1
    assert "the `go` command is not on PATH" in result.stderr
    assert "Install Go >= 1.26" in result.stderr


def test_an_unreachable_module_proxy_is_named_with_what_to_do(tmp_path: Path, monkeypatch) -> None:
    with socket.socket() as sock:  # a port where nothing listens
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    monkeypatch.setenv("JOBFLOW_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "gomod"))
    monkeypatch.setenv("GOPROXY", f"http://127.0.0.1:{dead}")
    monkeypatch.setenv("GOSUMDB", "off")
    try:
        with pytest.raises(build.BuildError) as failed:
            build.build_module(module_named("kwok"), build.go_version(), log=lambda line: None)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(tmp_path)], check=False)  # the module cache is read-only
    assert f"the Go module proxy (http://127.0.0.1:{dead}) could not be reached" in str(failed.value)
    assert "set GOPROXY" in str(failed.value)


def test_a_taken_port_is_reported_with_the_component_and_the_remedy(cluster, tmp_path: Path) -> None:
    etcd = next(c for c in cluster.state.components if c.name == "etcd").binary
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        component = processes.start("etcd", Path(etcd), [
            f"--data-dir={tmp_path / 'etcd'}", f"--listen-client-urls=http://127.0.0.1:{port}",
            f"--advertise-client-urls=http://127.0.0.1:{port}", "--listen-peer-urls=http://127.0.0.1:0"],
            log_dir=tmp_path)
        objects.poll("etcd to exit", lambda: not component.alive(), timeout=30)
    message = str(devcluster_failure(component, "exited while starting"))
    assert "etcd exited while starting" in message
    assert "address already in use" in message
    assert "a port it wanted was taken by another program" in message


def test_a_component_that_is_not_ready_in_time_is_named_with_its_log(tmp_path: Path) -> None:
    sleeper = processes.start("slow-component", Path(shutil.which("sleep")), ["30"], log_dir=tmp_path)
    try:
        starter = cluster._Starter(tmp_path, {}, log=lambda line: None)
        with pytest.raises(cluster.ClusterError) as failed:
            starter.wait("the never-ready check", lambda: False, sleeper, timeout=1)
    finally:
        sleeper.stop()
    assert "slow-component the never-ready check did not happen within 1 s" in str(failed.value)
    assert "make cluster-down && make cluster" in str(failed.value)
