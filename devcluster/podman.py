"""podman as this project runs it: installed by the project itself, configured by a file of its own.

The image is built and its containers run with Debian's podman (and buildah, inside ``podman build``). Two things
about machines like the development one decide the configuration, and neither may change the machine's own:

- ``crun``, podman's default runtime in Debian, refuses a kernel with both cgroup v1 hierarchies and a cgroup2
  mount with controllers ("cgroups in hybrid mode not supported"); ``runc`` runs there.
- Without ``CAP_SYS_RESOURCE`` a container cannot be given resource limits above the caller's hard limits, and
  podman's defaults ask for more (``setrlimit RLIMIT_NOFILE: Operation not permitted``).

So :func:`environment` writes a ``containers.conf`` under the cache (runc, and the limits this process may grant)
and every podman command runs with ``CONTAINERS_CONF`` pointing at it. Nothing global is edited; podman's storage
is its usual one (``/var/lib/containers``), so ``podman images`` shows what ``make image`` built.

:func:`ensure_tools` installs what is missing with ``apt-get`` when running as root, and otherwise says which
packages to install: a new machine (or CI) gets them from the project's own setup, not from a manual step.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from pathlib import Path

from devcluster.build import cache_root

TOOLS = {"podman": "podman", "buildah": "buildah", "debootstrap": "debootstrap", "runc": "runc", "conmon": "conmon"}
"""What building the image needs: a command (or a file's absolute path) -> the Debian package that provides it."""
NPROC_CEILING = 32768  # measured: higher nproc limits were refused in the sandbox even below the hard limit


class PodmanError(RuntimeError):
    """podman or a tool it needs failed; the message says which command and what to do."""


def is_root() -> bool:
    return os.geteuid() == 0


def missing_packages(tools: dict[str, str] = TOOLS) -> list[str]:
    """The Debian packages of the ``tools`` this machine lacks, sorted."""
    return sorted({package for command, package in tools.items()
                   if not (Path(command).exists() if command.startswith("/") else shutil.which(command))})


def ensure_tools(tools: dict[str, str] = TOOLS, *, log=print) -> None:
    """Install the packages of the missing ``tools`` (as root), or say how."""
    missing = missing_packages(tools)
    if not missing:
        return
    if not is_root():
        raise PodmanError(f"missing {', '.join(missing)}; installing them needs root. Run as "
                          f"root, or install them yourself: sudo apt-get install --no-install-recommends "
                          f"{' '.join(missing)}")
    log(f"installing {', '.join(missing)} with apt-get (once per machine)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        proc = subprocess.run(command, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise PodmanError(f"`{' '.join(command)}` failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}\n"
                              "Check the network and the apt sources, then run it again.")


def containers_conf() -> Path:
    """The project's containers.conf, rewritten on each call with this process's hard limits."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nofile = 1048576 if nofile == resource.RLIM_INFINITY else nofile
    nproc = NPROC_CEILING if nproc == resource.RLIM_INFINITY else min(nproc, NPROC_CEILING)
    path = cache_root() / "containers" / "containers.conf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# Written by devcluster/podman.py for this project's podman commands (CONTAINERS_CONF); see its docstring.\n"
        "[containers]\n"
        f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n'
        "[engine]\n"
        'runtime = "runc"\n'
        'cgroup_manager = "cgroupfs"\n'
        'events_logger = "file"\n'
    )
    return path


def environment() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(containers_conf())}


def podman(*args: str, check: bool = True, timeout: float | None = 600, env: dict[str, str] | None = None,
           stdin: bytes | None = None) -> subprocess.CompletedProcess:
    """Run ``podman args...`` with the project's configuration; raise PodmanError with its output on failure."""
    proc = subprocess.run(["podman", *args], env=env or environment(), capture_output=True, timeout=timeout,
                          input=stdin)
    if check and proc.returncode != 0:
        output = (proc.stdout + proc.stderr).decode(errors="replace").strip()
        raise PodmanError(f"`podman {' '.join(args[:6])}{' ...' if len(args) > 6 else ''}` failed "
                          f"(exit {proc.returncode}):\n{output[-3000:]}")
    return proc


def version() -> str:
    return podman("version", "--format", "{{.Client.Version}}").stdout.decode().strip()
