"""containerd, the node's container runtime: Debian's, configured so that everything it makes stays under the cluster.

The kubelet talks CRI to containerd (Debian 12's 1.6.20), which runs each pod's sandbox and containers with runc and
wires the pod into the node's network namespace with CNI's ``ptp`` plugin (Debian's ``containernetworking-plugins``).
What this machine needs, all in the configuration :func:`write_config` writes, none of it a global change:

- ``restrict_oom_score_adj``: containerd gives every pod sandbox an OOM score of -998, which a process without
  ``CAP_SYS_RESOURCE`` (this sandbox's root) may not set; runc then fails every sandbox with "can't get final
  child's PID from pipe: EOF". Restricted, the score is no lower than containerd's own.
- its root, state, socket, CNI configuration, IPAM data and network namespaces (``netns_mounts_under_state_dir``)
  live in the cluster's directory, so two clusters never share them and :func:`remove` finds them all.
- no registry is reachable: images are imported from podman's storage (:func:`load`), and the pod sandbox image is
  Kubernetes' own ``pause``, compiled from the pinned release's ``build/pause/linux/pause.c`` (:func:`pause_image`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket as pysocket
import subprocess
import tempfile
from pathlib import Path

from devcluster.build import cache_root, module_source_dir
from devcluster.components import KUBERNETES_VERSION, module_named
from devcluster.node.network import NodeNetwork
from devcluster.podman import PodmanError, podman

NAMESPACE = "k8s.io"  # containerd's namespace for the CRI's images and containers
PAUSE_TAG = f"localhost/volcano-jobflow/pause:{KUBERNETES_VERSION}"
SHIM_SOCKETS = Path("/run/containerd/s")


def directory(root: Path) -> Path:
    return root / "node" / "containerd"


def socket(root: Path) -> Path:
    return directory(root) / "containerd.sock"


def write_config(root: Path, network: NodeNetwork) -> Path:
    """containerd's configuration and the CNI network it reads (module docstring)."""
    base = directory(root)
    cni = base / "cni"
    cni.mkdir(parents=True, exist_ok=True)
    (cni / "10-jobflow-pods.conflist").write_text(json.dumps({
        "cniVersion": "0.4.0", "name": "jobflow-pods",
        "plugins": [{"type": "ptp", "ipMasq": False,
                     "ipam": {"type": "host-local", "ranges": [[{"subnet": network.pod_cidr,
                                                                  "gateway": network.gateway}]],
                              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(base / "cni-ipam")}},
                    {"type": "loopback"}]}, indent=2))
    cri = '[plugins."io.containerd.grpc.v1.cri"]'
    config = base / "config.toml"
    config.write_text(f"""# Written by devcluster/node/containerd.py; see its docstring.
version = 2
root = "{base / 'root'}"
state = "{base / 'state'}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "{socket(root)}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{base / 'opt'}"
{cri}
  sandbox_image = "{PAUSE_TAG}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_cdi = false
{cri[:-1]}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
{cri[:-1]}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
{cri[:-1]}.containerd.runtimes.runc.options]
  Root = "{base / 'state' / 'runc'}"
{cri[:-1]}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{cni}"
""")
    return config


def ctr(root: Path, *args: str, stdin=None, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ctr", f"--address={socket(root)}", f"--namespace={NAMESPACE}", *args], stdin=stdin,
                          capture_output=True, timeout=timeout)
    if proc.returncode != 0:
        raise PodmanError(f"`ctr {' '.join(args)}` failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc


def answers(root: Path) -> bool:
    return socket(root).exists() and subprocess.run(
        ["ctr", f"--address={socket(root)}", "version"], capture_output=True, timeout=10).returncode == 0


def pause_image(*, log=print) -> str:
    """Kubernetes' pause, compiled statically from the pinned release's source and imported into podman's storage
    (once per machine; about a second)."""
    if podman("image", "exists", PAUSE_TAG, check=False).returncode == 0:
        return PAUSE_TAG
    source = module_source_dir(module_named("kubernetes"), "k8s.io/kubernetes") / "build/pause/linux/pause.c"
    if shutil.which("gcc") is None:
        raise PodmanError("gcc is needed to compile Kubernetes' pause for the pod node: apt-get install gcc libc6-dev")
    with tempfile.TemporaryDirectory(dir=cache_root()) as scratch:
        binary = Path(scratch) / "rootfs" / "pause"
        binary.parent.mkdir()
        proc = subprocess.run(["gcc", "-Os", "-static", "-Wall", f"-DVERSION={KUBERNETES_VERSION}", "-o",
                               str(binary), str(source)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise PodmanError(f"compiling {source} failed (is libc6-dev installed?):\n{proc.stderr}")
        tar = Path(scratch) / "rootfs.tar"
        subprocess.run(["tar", "-C", str(binary.parent), "-cf", str(tar), "."], check=True)
        podman("import", "--change", 'ENTRYPOINT ["/pause"]', str(tar), PAUSE_TAG)
    log(f"node: built {PAUSE_TAG} from {source.name}")
    return PAUSE_TAG


def load(root: Path, image: str) -> None:
    """Copy ``image`` from podman's storage into the node's containerd (an OCI archive through a pipe)."""
    digest = hashlib.sha256(image.encode()).hexdigest()[:12]
    archive = directory(root) / f"import-{digest}.tar"
    try:
        podman("save", "--format", "oci-archive", "--output", str(archive), image, timeout=600)
        ctr(root, "images", "import", "--no-unpack=false", str(archive))
    finally:
        archive.unlink(missing_ok=True)


def remove(root: Path) -> None:
    """What a stopped or crashed containerd leaves: its shims (and their containers), mounts and files."""
    base = directory(root)
    address = str(socket(root)).encode()
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if command.startswith(b"/usr/bin/containerd-shim") and address in command:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for mount in reversed(mounts_under(base)):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)
    _remove_stale_sockets(SHIM_SOCKETS)


def _remove_stale_sockets(directory: Path) -> None:
    """The shims' sockets (a path containerd 1.6 does not let us choose) that nothing listens on any more: a shim
    killed with SIGKILL leaves its socket behind. Another cluster's live shims keep theirs."""
    if not directory.exists():
        return
    for path in directory.iterdir():
        probe = pysocket.socket(pysocket.AF_UNIX, pysocket.SOCK_STREAM)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink(missing_ok=True)
        finally:
            probe.close()
    for empty in (directory, directory.parent):
        try:
            empty.rmdir()
        except OSError:
            pass


def mounts_under(path: Path) -> list[str]:
    """Mount points under ``path``, outermost first."""
    prefix = str(path.resolve()) + "/"
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        point = line.split()[1].replace("\\040", " ")
        if point.startswith(prefix):
            found.append(point)
    return sorted(found, key=len)
