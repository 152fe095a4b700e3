"""The container runtime of devcluster's node: podman, one container per pod container, in the pod's namespace.

Where a kubelet talks CRI to containerd, this talks to podman (``devcluster/podman.py`` configures it). Containers
join the pod's network namespace (``--network ns:``), so they share the pod IP and reach each other on localhost,
but each has its own mount, PID and IPC namespace: there is no pause container and no shared process namespace.
Images come from podman's local storage only (``--pull=never``: no registry here; ``make image`` puts the engine's
there). Logs go where a kubelet puts them, in the CRI format: ``<pod dir>/logs/<container>/<attempt>.log``.

Every container carries the label ``jobflow.dev/node=<node>``; :meth:`Runtime.states` reads all of the node's at
once with one ``podman ps`` (a ``podman inspect`` per container per second would be a core's worth of work here).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from devcluster.podman import podman

NODE_LABEL = "jobflow.dev/node"
UID_LABEL = "jobflow.dev/pod-uid"


@dataclass(frozen=True)
class ContainerState:
    """One podman container as ``podman ps`` reports it."""

    id: str
    name: str
    running: bool
    exit_code: int | None
    started_at: int | None  # seconds since the epoch
    finished_at: int | None


@dataclass(frozen=True)
class Image:
    id: str
    user: str


class Runtime:
    def __init__(self, node: str) -> None:
        self.node = node
        self._images: dict[str, Image] = {}

    def image(self, reference: str) -> Image | None:
        """The image in local storage, or None (the pod then waits, as for a failed pull)."""
        if reference not in self._images:
            proc = podman("image", "inspect", "--format", "{{.Id}}|{{.Config.User}}", reference, check=False)
            if proc.returncode != 0:
                return None
            image_id, _, user = proc.stdout.decode().strip().partition("|")
            self._images[reference] = Image(id=image_id, user=user)
        return self._images[reference]

    def run(self, *, name: str, pod_uid: str, netns: str, hostname: str, hosts: Path, log: Path,
            args: list[str]) -> str:
        """Start a container (``args``: what ``spec.run_args`` made). Returns its ID."""
        log.parent.mkdir(parents=True, exist_ok=True)
        proc = podman("run", "--detach", "--pull=never", "--name", name, "--label", f"{NODE_LABEL}={self.node}",
                      "--label", f"{UID_LABEL}={pod_uid}", "--network", f"ns:{netns}", "--hostname", hostname,
                      "--no-hosts", "--dns=none", "--volume", f"{hosts}:/etc/hosts:ro", "--log-driver", "k8s-file",
                      "--log-opt", f"path={log}", "--stop-timeout", "30", *args, timeout=120)
        return proc.stdout.decode().strip()

    def states(self) -> dict[str, ContainerState]:
        """Every container of this node, by name."""
        proc = podman("ps", "--all", "--format", "json", "--filter", f"label={NODE_LABEL}={self.node}", timeout=60)
        result = {}
        for entry in json.loads(proc.stdout or b"[]"):
            name = entry["Names"][0]
            running = entry.get("State") == "running"
            result[name] = ContainerState(
                id=entry["Id"], name=name, running=running,
                exit_code=None if running else entry.get("ExitCode"),
                started_at=entry.get("StartedAt") or None, finished_at=None if running else entry.get("ExitedAt"))
        return result

    def stop(self, name: str, *, grace: int) -> None:
        """SIGTERM (the image's stop signal), SIGKILL after ``grace`` seconds, as the kubelet stops a container."""
        podman("stop", "--time", str(max(grace, 0)), name, check=False, timeout=grace + 60)

    def remove(self, name: str) -> None:
        podman("rm", "--force", "--time", "0", name, check=False, timeout=60)

    def exec(self, name: str, command: list[str], *, timeout: float) -> int:
        """An exec probe: the command's exit code (a timeout counts as a failure, exit code -1)."""
        try:
            return podman("exec", name, *command, check=False, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return -1

    def remove_all(self) -> None:
        """Every container of this node, whatever state (cleanup after a stop or a crash)."""
        proc = podman("ps", "--all", "--quiet", "--filter", f"label={NODE_LABEL}={self.node}", check=False)
        ids = proc.stdout.decode().split()
        if ids:
            podman("rm", "--force", "--time", "0", *ids, check=False, timeout=120)
