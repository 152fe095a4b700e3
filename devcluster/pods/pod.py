"""One pod on devcluster's node, from its binding to its final delete: what a kubelet's pod worker does.

A :class:`PodWorker` thread owns one pod. Every half second it looks at the newest Pod object and container states
it was handed (:meth:`PodWorker.offer`) and moves the pod on:

1. **Set up** once: a pod IP and network namespace, the volumes, the ``/etc/hosts`` file. A volume whose Secret or
   ConfigMap does not exist yet keeps the pod ``ContainerCreating`` and is tried again.
2. **Start** each container that is not running, as ``restartPolicy`` allows, with the kubelet's back-off between
   restarts (the first at once, then 10 s doubling to 5 min, shown as ``CrashLoopBackOff``); a spec the kubelet would refuse (a root user
   with ``runAsNonRoot``, an unsupported probe) shows as ``CreateContainerConfigError``, an image that is not in
   local storage as ``ErrImageNeverPull``.
3. **Probe** running containers; a failed liveness probe stops the container, which is then restarted.
4. **Report** ``status`` (phase, IPs, conditions, container states, restart counts) whenever it changed: the
   Deployment and endpoints controllers read it to count available replicas and to route to ready pods.
5. **Terminate** on ``deletionTimestamp``: stop the containers with the grace period the delete asked for (SIGTERM,
   then SIGKILL), then delete the Pod for good (grace 0, the pod's UID as precondition) and remove its network
   namespace and volumes. A pod deleted by force is cleaned up the same way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster.pods import probes, spec, volumes
from devcluster.pods.network import NodeNetwork
from devcluster.pods.runtime import ContainerState, Runtime

LOG = logging.getLogger(__name__)
TICK = 0.5
BACKOFF_START, BACKOFF_MAX = 10.0, 300.0


def timestamp(seconds: float | None = None) -> str:
    return datetime.fromtimestamp(seconds if seconds is not None else time.time(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Container:
    """What the worker remembers of one container across its restarts."""

    spec: dict
    attempt: int = -1  # index of the podman container started last; -1 before the first start
    restarts: int = 0
    waiting: tuple[str, str] | None = ("ContainerCreating", "")
    last_terminated: dict | None = None
    not_before: float = 0.0  # back-off: no restart before this time.monotonic()
    started: float = 0.0  # time.monotonic() of the last start: a snapshot taken before it cannot show the container
    probes: dict[str, probes.ProbeState] = field(default_factory=dict)


@dataclass
class Snapshot:
    pod: dict | None
    states: dict[str, ContainerState]
    states_taken: float  # time.monotonic() when ``states`` was read
    services: list[dict]
    kubernetes: tuple[str, int]


class PodWorker(threading.Thread):
    def __init__(self, *, core: client.CoreV1Api, runtime: Runtime, network: NodeNetwork, pods_dir: Path,
                 allocate: Callable[[], int], release: Callable[[int], None], pod: dict) -> None:
        meta = pod["metadata"]
        super().__init__(name=f"pod-{meta['namespace']}/{meta['name']}", daemon=True)
        self.core, self.runtime, self.network = core, runtime, network
        self.allocate, self.release = allocate, release
        self.uid, self.namespace, self.pod_name = meta["uid"], meta["namespace"], meta["name"]
        self.directory = pods_dir / f"{self.namespace}_{self.pod_name}_{self.uid}"
        self.containers = {c["name"]: Container(spec=c) for c in pod["spec"]["containers"]}
        self.index: int | None = None
        self.netns: str | None = None
        self.volume_paths: dict[str, Path] | None = None
        self.started_at = timestamp()
        self.reported: dict | None = None
        self.snapshot: Snapshot | None = None
        self.changed = threading.Event()
        self.done = threading.Event()

    @property
    def pod_ip(self) -> str | None:
        return None if self.index is None else self.network.pod_ip(self.index)

    def offer(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.changed.set()

    def container_name(self, name: str, attempt: int) -> str:
        return f"k8s_{name}_{self.pod_name}_{self.namespace}_{self.uid[:8]}_{attempt}"

    def run(self) -> None:
        try:
            while True:
                self.changed.wait(TICK)
                self.changed.clear()
                snapshot = self.snapshot
                if snapshot is None:
                    continue
                pod = snapshot.pod
                if pod is None or pod["metadata"].get("deletionTimestamp"):
                    self._terminate(pod, snapshot)
                    return
                try:
                    self._sync(pod, snapshot)
                except ApiException as error:
                    LOG.warning("%s: API error %s %s; retrying", self.name, error.status, error.reason)
        except Exception:
            LOG.exception("%s: worker failed", self.name)
        finally:
            self._cleanup()
            self.done.set()

    # -- 1. set up -------------------------------------------------------------------------------------------

    def _setup(self, pod: dict, snapshot: Snapshot) -> bool:
        if self.index is None:
            self.index = self.allocate()
            self.netns = self.network.add_pod(self.index)
            LOG.info("%s: pod IP %s, netns %s", self.name, self.pod_ip, self.netns)
        if self.volume_paths is None:
            try:
                self.volume_paths = volumes.make(self.core, pod, self.directory / "volumes")
            except volumes.VolumeNotReady as error:
                for container in self.containers.values():
                    container.waiting = ("ContainerCreating", f"MountVolume.SetUp failed: {error}")
                return False
        self._write_hosts(pod, snapshot.services)
        return True

    def _write_hosts(self, pod: dict, services: list[dict]) -> None:
        """Rewritten in place when Services change (a bind mount follows the inode, not the name)."""
        path = self.directory / "etc-hosts"
        text = spec.hosts_file(pod, self.pod_ip, services)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif path.read_text() != text:
            with open(path, "r+") as file:
                file.truncate(0)
                file.write(text)

    # -- 2. and 3. start and probe ---------------------------------------------------------------------------

    def _sync(self, pod: dict, snapshot: Snapshot) -> None:
        if self._setup(pod, snapshot):
            for name, container in self.containers.items():
                state = snapshot.states.get(self.container_name(name, container.attempt))
                if state is not None and state.running:
                    container.waiting = None
                    self._probe(container, state)
                elif snapshot.states_taken > container.started:  # else it may not show the last start yet
                    self._maybe_start(pod, snapshot, container, state)
        self._report(pod, snapshot)

    def _maybe_start(self, pod: dict, snapshot: Snapshot, container: Container, state: ContainerState | None) -> None:
        now = time.monotonic()
        if state is not None and container.attempt >= 0 and not state.running and state.exit_code is not None:
            if container.last_terminated is None or container.last_terminated["containerID"] != f"podman://{state.id}":
                container.last_terminated = {"exitCode": state.exit_code, "reason": "Error" if state.exit_code else
                                             "Completed", "startedAt": timestamp(state.started_at),
                                             "finishedAt": timestamp(state.finished_at),
                                             "containerID": f"podman://{state.id}"}
                delay = min(BACKOFF_START * 2 ** (container.restarts - 1), BACKOFF_MAX) if container.restarts else 0
                container.not_before = now + delay
                LOG.info("%s: container %s exited %s; restart in %.0f s", self.name, container.spec["name"],
                         state.exit_code, delay)
            policy = pod["spec"].get("restartPolicy", "Always")
            if policy == "Never" or (policy == "OnFailure" and state.exit_code == 0):
                container.waiting = None
                return
            if now < container.not_before:
                container.waiting = ("CrashLoopBackOff", f"back-off restarting failed container "
                                     f"{container.spec['name']} in pod {self.pod_name}")
                return
        elif state is None and container.attempt >= 0 and now < container.not_before:
            return  # stopped by a failed liveness probe, or its podman container is gone: restart after back-off
        self._start(pod, snapshot, container)

    def _start(self, pod: dict, snapshot: Snapshot, container: Container) -> None:
        image = self.runtime.image(container.spec["image"])
        if image is None:
            container.waiting = ("ErrImageNeverPull", f"image {container.spec['image']!r} is not in local storage "
                                 "(no registry here: `make image` builds the engine's)")
            return
        try:
            if pod["spec"].get("initContainers"):
                raise spec.SpecError("init containers are not supported by devcluster's pod node")
            env = spec.container_env(pod, container.spec, services=self._service_env(pod, snapshot),
                                     lookup=self._lookup)
            mounts = volumes.mounts(container.spec, self.volume_paths or {})
            args = spec.run_args(pod, container.spec, env=env, image_user=image.user, mounts=mounts)
            for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
                if kind in container.spec:
                    probes.check_supported(container.spec[kind], container.spec)
        except (spec.SpecError, volumes.VolumeNotReady) as error:
            container.waiting = ("CreateContainerConfigError", str(error))
            return
        if container.attempt >= 0:  # the kubelet keeps the last dead container (and its log) until the next start
            self.runtime.remove(self.container_name(container.spec["name"], container.attempt - 1))
            container.restarts += 1
        container.attempt += 1
        name = self.container_name(container.spec["name"], container.attempt)
        self.runtime.run(name=name, pod_uid=self.uid, netns=self.netns, hostname=pod["metadata"]["name"],
                         hosts=self.directory / "etc-hosts",
                         log=self.directory / "logs" / container.spec["name"] / f"{container.attempt}.log", args=args)
        started = container.started = time.monotonic()
        container.probes = {kind: probes.ProbeState(container.spec[kind], started)
                            for kind in ("livenessProbe", "readinessProbe", "startupProbe") if kind in container.spec}
        container.waiting = None
        LOG.info("%s: started container %s (attempt %d)", self.name, container.spec["name"], container.attempt)

    def _service_env(self, pod: dict, snapshot: Snapshot) -> dict[str, str]:
        links = pod["spec"].get("enableServiceLinks", True)
        services = [s for s in snapshot.services if links and s["metadata"]["namespace"] == self.namespace]
        return spec.service_env(services, kubernetes=snapshot.kubernetes)

    def _lookup(self, kind: str, name: str, key: str, optional: bool):
        data = volumes.object_data(self.core, kind, self.namespace, name, optional=optional)
        if data is None or not key:
            return data
        if key not in data and not optional:
            raise volumes.VolumeNotReady(f"couldn't find key {key} in {kind} {self.namespace}/{name}")
        return data.get(key)

    def _probe(self, container: Container, state: ContainerState) -> None:
        now = time.monotonic()
        startup = container.probes.get("startupProbe")
        for kind, probe in container.probes.items():
            if kind != "startupProbe" and startup is not None and not startup.success:
                continue
            if kind == "startupProbe" and probe.success:
                continue
            if not probe.due(now):
                continue
            name = self.container_name(container.spec["name"], container.attempt)
            result = probes.check(probe.probe, container=container.spec, pod_ip=self.pod_ip,
                                  run_exec=lambda command, timeout: self.runtime.exec(name, command, timeout=timeout))
            probe.record(result, now)
            if not result:
                LOG.info("%s: %s of %s failed (%d in a row)", self.name, kind, container.spec["name"], probe.streak)
            if probe.failed and kind in ("livenessProbe", "startupProbe"):
                LOG.info("%s: %s failed; restarting container %s", self.name, kind, container.spec["name"])
                self.runtime.stop(name, grace=int(self.snapshot.pod["spec"].get("terminationGracePeriodSeconds", 30)))
                return

    # -- 4. report -------------------------------------------------------------------------------------------

    def _container_status(self, container: Container, state: ContainerState | None, image: str) -> dict:
        name = container.spec["name"]
        readiness = container.probes.get("readinessProbe")
        startup = container.probes.get("startupProbe")
        running = state is not None and state.running
        started = running and (startup is None or startup.success)
        ready = started and (readiness is None or readiness.success)
        status = {"name": name, "image": container.spec["image"], "imageID": image, "ready": ready,
                  "restartCount": container.restarts, "started": started}
        if running:
            status["containerID"] = f"podman://{state.id}"
            status["state"] = {"running": {"startedAt": timestamp(state.started_at)}}
        elif container.waiting is not None:
            reason, message = container.waiting
            status["state"] = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
        elif container.last_terminated is not None:
            status["state"] = {"terminated": container.last_terminated}
        else:
            status["state"] = {"waiting": {"reason": "ContainerCreating"}}
        if container.last_terminated is not None and not status["state"].get("terminated"):
            status["lastState"] = {"terminated": container.last_terminated}
        return status

    def _report(self, pod: dict, snapshot: Snapshot) -> None:
        statuses = []
        for name, container in self.containers.items():
            image = self.runtime.image(container.spec["image"])
            state = snapshot.states.get(self.container_name(name, container.attempt))
            statuses.append(self._container_status(container, state, f"podman://{image.id}" if image else ""))
        ready = all(s["ready"] for s in statuses)
        running = any("running" in s["state"] for s in statuses) or all("terminated" in s["state"] for s in statuses)
        conditions = {"PodReadyToStartContainers": self.netns is not None, "Initialized": True,
                      "ContainersReady": ready, "Ready": ready, "PodScheduled": True}
        status = {"phase": "Running" if running else "Pending", "hostIP": self.network.node_ip,
                  "hostIPs": [{"ip": self.network.node_ip}], "startTime": self.started_at,
                  "containerStatuses": statuses, "conditions": self._conditions(pod, conditions)}
        if self.pod_ip:
            status.update(podIP=self.pod_ip, podIPs=[{"ip": self.pod_ip}])
        if status == self.reported:
            return
        self.core.patch_namespaced_pod_status(self.pod_name, self.namespace, {"status": status},
                                              _content_type="application/strategic-merge-patch+json")
        self.reported = status

    @staticmethod
    def _conditions(pod: dict, wanted: dict[str, bool]) -> list[dict]:
        """The pod's conditions with a new lastTransitionTime only where the status changed."""
        current = {c["type"]: c for c in (pod.get("status") or {}).get("conditions") or []}
        result = []
        for kind, value in wanted.items():
            text = "True" if value else "False"
            old = current.get(kind)
            since = old.get("lastTransitionTime") if old and old.get("status") == text else timestamp()
            result.append({"type": kind, "status": text, "lastTransitionTime": since, "lastProbeTime": None})
        return result

    # -- 5. terminate ----------------------------------------------------------------------------------------

    def _terminate(self, pod: dict | None, snapshot: Snapshot) -> None:
        grace = 0 if pod is None else int(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        LOG.info("%s: terminating (grace %d s)", self.name, grace)
        stoppers = [threading.Thread(target=self.runtime.stop, args=(self.container_name(name, c.attempt),),
                                     kwargs={"grace": grace}, daemon=True)
                    for name, c in self.containers.items() if c.attempt >= 0]
        for thread in stoppers:
            thread.start()
        for thread in stoppers:
            thread.join()
        if pod is not None:
            try:
                # In the body, not as a query parameter: the API server reads the options from the body if any.
                self.core.delete_namespaced_pod(self.pod_name, self.namespace,
                                                body={"gracePeriodSeconds": 0, "preconditions": {"uid": self.uid}})
            except ApiException as error:
                if error.status not in (404, 409):
                    raise
        LOG.info("%s: deleted", self.name)

    def _cleanup(self) -> None:
        for name, container in self.containers.items():
            for attempt in range(max(container.attempt - 1, 0), container.attempt + 1):
                self.runtime.remove(self.container_name(name, attempt))
        if self.index is not None:
            self.network.remove_pod(self.index)
            self.release(self.index)
        volumes.remove(self.directory / "volumes")
