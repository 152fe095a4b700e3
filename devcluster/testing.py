"""What tests get from the local cluster: API clients, namespaces, and waits that never hang on a dead component.

``wait_until`` polls a condition; on every poll it first checks that all control-plane processes are alive, so a
test whose Volcano controller crashed fails at once with that component's log instead of timing out much later.
The pytest fixtures in ``tests/conftest.py`` are thin wrappers around this module.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from kubernetes import client
from kubernetes.client.rest import ApiException

from apiclient.connection import Connection
from apiclient.kubeconfig import connect
from devcluster import cluster, objects, processes
from devcluster.state import ClusterState
from jobflow_core.vocabulary.api import VCJOB

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A condition a test waited for did not come true; says what and shows the last value seen."""


@dataclass
class LocalCluster:
    state: ClusterState
    api: client.ApiClient = field(init=False)
    """The ``kubernetes`` package's client, for the tests' own reads and setup."""
    connection: Connection = field(init=False)
    """The engine's own connection (:mod:`apiclient`), for the handler and the event source a test runs in-process."""

    def __post_init__(self) -> None:
        self.api = cluster.api_client(self.state)
        self.connection = connect(self.state.kubeconfig, program="test")

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api)

    @property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api)

    def assert_alive(self) -> None:
        cluster.assert_alive(self.state)

    def wait_until(self, what: str, probe: Callable[[], T], *, timeout: float = 60, interval: float = 0.2) -> T:
        """Poll ``probe`` until it returns something truthy, and return that."""
        deadline = time.monotonic() + timeout
        last: object = None
        while True:
            self.assert_alive()
            try:
                last = probe()
            except ApiException as error:
                last = f"API error {error.status}: {error.reason}"
            else:
                if last:
                    return last
            if time.monotonic() > deadline:
                raise WaitTimeout(f"waited {timeout:.0f} s for {what}; last seen: {last!r}")
            time.sleep(interval)

    def restart(self, name: str, *, down_for: float = 0) -> None:
        """Stop control-plane component ``name`` and start it again ``down_for`` seconds later with the same
        binary, arguments and environment (same ports, certificates and data), as a crash and a restart would."""
        [old] = [c for c in self.state.components if c.name == name]
        args = [arg.decode() for arg in Path(f"/proc/{old.pid}/cmdline").read_bytes().split(b"\0")[1:-1]]
        env = dict(line.split(b"=", 1) for line in Path(f"/proc/{old.pid}/environ").read_bytes().split(b"\0")
                   if b"=" in line)
        cwd = Path(f"/proc/{old.pid}/cwd").resolve()
        old.stop()
        time.sleep(down_for)
        new = processes.start(old.name, Path(old.binary), args, log_dir=self.state.log_dir, cwd=cwd,
                              env={key.decode(): value.decode() for key, value in env.items()})
        self.state.components[self.state.components.index(old)] = new
        self.state.save()
        if not new.alive():
            raise AssertionError(f"{name} did not come back after its restart:\n{new.log_tail()}")

    def api_server_outage(self, seconds: float) -> None:
        """Stop kube-apiserver for ``seconds``, then start it again (same port, certificates and etcd, so every
        client reconnects to the same server), wait until it is ready, and restart Volcano's controller and
        scheduler.

        Why Volcano too: after an outage each informer of theirs reconnects on its own client-go backoff, and in
        the scheduler that took up to 90 s here before a new PodGroup was looked at. Worse, Volcano 1.14.1's job
        controller handles PodGroup updates only (no add handler, no resync): a vcjob created while its Job
        informer is back and its PodGroup informer is not gets a PodGroup that the scheduler moves to Inqueue
        unseen, the relist reports it as an add, which is ignored, and the vcjob stays Pending with no pod for ever
        (seen in CI: the next JobFlow never ran). Restarting them is what an operator would do; fresh processes
        list everything before they work. kube-controller-manager likewise: its service-account controller gave a
        namespace created after an outage its ``default`` ServiceAccount only 50-90 s later (measured on the pod
        node's cluster), and until then no pod can be created there. The engine under test is never restarted, and
        kwok and the pod node's kubelet recover on their own.
        """
        self.restart("kube-apiserver", down_for=seconds)
        [new] = [c for c in self.state.components if c.name == "kube-apiserver"]

        def still_running() -> None:
            if not new.alive():
                raise AssertionError(f"kube-apiserver did not come back after the outage:\n{new.log_tail()}")

        objects.poll("kube-apiserver ready after the outage", lambda: cluster.healthy(self.state), timeout=60,
                     on_tick=still_running)
        self.restart("kube-controller-manager")
        self.restart("vc-controller-manager")
        self.restart("vc-scheduler")

    def create_namespace(self) -> str:
        name = f"t-{uuid.uuid4().hex[:10]}"
        self.core.create_namespace({"metadata": {"name": name, "labels": {"jobflow.dev/test": "true"}}})
        return name

    def delete_namespace(self, name: str) -> None:
        try:
            self.core.delete_namespace(name)
        except ApiException as error:
            if error.status != 404:
                raise

    def vcjob(self, namespace: str, name: str) -> dict | None:
        try:
            return self.custom.get_namespaced_custom_object(VCJOB.group, VCJOB.version, namespace, VCJOB.plural, name)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def vcjob_phase(self, namespace: str, name: str) -> str | None:
        job = self.vcjob(namespace, name)
        return None if job is None else ((job.get("status") or {}).get("state") or {}).get("phase")

    def close(self) -> None:
        self.api.close()
        self.connection.close()
