"""A cluster with a node that really runs pods: what changes in the control plane, and what runs beside it.

``devcluster.cluster.up(..., pods=True)`` starts the same control plane as always, with these differences, all of
them what a real cluster has and the plain test cluster leaves out:

- the API server admits pods with the **ServiceAccount** plugin (each pod gets its ``kube-api-access-*`` volume),
  advertises the host's end of the node link and keeps the ``kubernetes`` Service's endpoints itself
  (``--endpoint-reconciler-type=lease``), takes Service IPs from the node network's own range
  (devcluster/node/network.py), and reaches kubelets by their InternalIP;
- kube-controller-manager also runs the **deployment, replicaset, endpoints, endpointslice, endpointslice-mirroring,
  clusterrole-aggregation, serviceaccount** and **root-ca-certificate-publisher** controllers;
- vc-controller-manager runs with the flag that docs/install.md tells users of an upstream Volcano to set before
  installing this engine (:data:`VOLCANO_CONTROLLERS`: everything but Volcano's own JobFlow controllers);
- **a node**, ``pods-<n>``: **containerd** (Debian's), the **kubelet** and **kube-proxy** (built from the pinned
  Kubernetes release) in the node's network namespace, and **kube-scheduler** (devcluster/node/kubelet.py says how
  it and Volcano's scheduler share the nodes); beside them a relay (socat) from the API server's advertised address
  to its loopback port, and the cluster-DNS stand-in (devcluster/node/dns.py).

Why a cluster of its own and not the tests' usual one: with those controllers on, kube-controller-manager would
make Pods for the Deployments that the Knative Eventing stand-ins play (``devcluster/knative_standins.py``) and
rewrite the Endpoints they publish. The two never share a cluster (docs/control-plane.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from devcluster.build import build_module, go_version
from devcluster.components import KUBELET, KUBERNETES_NODE
from devcluster.node import containerd, kubelet
from devcluster.node.network import NodeNetwork, claim, remove as remove_network
from devcluster.podman import ensure_tools
from devcluster.state import ClusterState

CONTROLLER_MANAGER_CONTROLLERS = ("garbage-collector-controller,namespace-controller,deployment-controller,"
                                  "replicaset-controller,endpoints-controller,endpointslice-controller,"
                                  "endpointslice-mirroring-controller,clusterrole-aggregation-controller,"
                                  "serviceaccount-controller,root-ca-certificate-publisher-controller,"
                                  "disruption-controller")
"""On by default in any cluster. Knative Serving needs the mirroring and aggregation controllers: the Endpoints it
writes for a revision's public Service reach kube-proxy (which reads EndpointSlices) through the mirroring
controller, and its controller's ClusterRole ``knative-serving-admin`` is an aggregated one. The disruption controller
keeps a PodDisruptionBudget's status, which a drain reads (the webhook's)."""
VOLCANO_CONTROLLERS = "*,-sharding-controller,-jobflow-controller,-jobtemplate-controller"
"""vc-controller-manager's default (``*,-sharding-controller``) without its JobFlow and JobTemplate controllers."""
NODE_TOOLS = {"containerd": "containerd", "ctr": "containerd", "socat": "socat", "nsenter": "util-linux",
              "iptables": "iptables", "gcc": "gcc", "/usr/lib/cni/ptp": "containernetworking-plugins",
              "/usr/lib/x86_64-linux-gnu/libc.a": "libc6-dev"}
"""What the node needs from Debian (a command, or a file's path) -> its package."""
DEVICE_PLUGIN_SOCKET = Path("/var/lib/kubelet/device-plugins/kubelet.sock")  # kubelet constants, not configurable:
CONTAINER_LOG_LINKS = Path("/var/log/containers")  # it links each container's log here


def claim_network(*, log=print) -> NodeNetwork:
    """The node's network, the first free one on the machine, and the packages the node needs (needs root)."""
    if os.geteuid() != 0:
        raise RuntimeError("a cluster with the pod node needs root (network namespaces, cgroups, containerd); run "
                           "as root (CI does)")
    ensure_tools(NODE_TOOLS, log=log)
    return claim()


def node_name(network: NodeNetwork) -> str:
    return f"pods-{network.n}"


def apiserver_flags(network: NodeNetwork) -> list[str]:
    """Replace the plain cluster's flags of the same names (see the module docstring)."""
    return [f"--service-cluster-ip-range={network.service_cidr}", f"--advertise-address={network.host_ip}",
            "--endpoint-reconciler-type=lease", "--disable-admission-plugins=TaintNodesByCondition",
            "--kubelet-preferred-address-types=InternalIP"]


def node_kubeconfig(state: ClusterState, network: NodeNetwork) -> Path:
    """The admin kubeconfig at the advertised address, for the programs inside the node's namespace (the API
    server's certificate names that address; the relay carries it to the loopback port). A real node's kubelet
    would sign in as ``system:node:<name>``; here every node program is admin."""
    path = Path(state.root) / "kubeconfig-node"
    path.write_text(state.kubeconfig.read_text().replace(state.server, f"https://{network.host_ip}:"
                                                                       f"{state.apiserver_port}"))
    path.chmod(0o600)
    return path


def in_node(network: NodeNetwork, binary: Path | str, *args: str) -> tuple[Path, list[str]]:
    """A command run in the node's network namespace (only that namespace: /sys and the cgroups stay visible)."""
    return Path(shutil.which("nsenter") or "/usr/bin/nsenter"), [
        f"--net=/run/netns/{network.netns}", "--", str(binary), *args]


def relay_command(state: ClusterState, network: NodeNetwork) -> tuple[Path, list[str]]:
    port = state.apiserver_port
    return Path(shutil.which("socat") or "/usr/bin/socat"), [
        f"TCP-LISTEN:{port},bind={network.host_ip},fork,reuseaddr", f"TCP:127.0.0.1:{port}"]


def dns_command(state: ClusterState, network: NodeNetwork) -> tuple[Path, list[str]]:
    return Path(sys.executable), ["-m", "devcluster.node.dns", f"--kubeconfig={state.kubeconfig}",
                                  f"--listen={network.host_ip}:53"]


def containerd_command(state: ClusterState, network: NodeNetwork) -> tuple[Path, list[str]]:
    config = containerd.write_config(Path(state.root), network)
    return in_node(network, shutil.which("containerd") or "/usr/bin/containerd", f"--config={config}")


def scheduler_command(state: ClusterState, *, log=print) -> tuple[Path, list[str]]:
    binary = build_module(KUBERNETES_NODE, go_version(), log=log).path("kube-scheduler")
    config = kubelet.write_scheduler_config(Path(state.root), kubeconfig=state.kubeconfig)
    return binary, [f"--config={config}", "--secure-port=0", "--v=1"]


def kubelet_command(state: ClusterState, network: NodeNetwork, *, log=print) -> tuple[Path, list[str]]:
    binary = build_module(KUBELET, go_version(), log=log).path("kubelet")
    root = Path(state.root)
    kubelet.make_cgroups(network)
    config = kubelet.write_config(root, network, runtime_socket=containerd.socket(root))
    return in_node(network, binary, f"--config={config}", f"--kubeconfig={node_kubeconfig(state, network)}",
                   f"--hostname-override={node_name(network)}", f"--node-ip={network.node_ip}",
                   f"--root-dir={kubelet.directory(root) / 'root'}", f"--cert-dir={kubelet.directory(root) / 'pki'}",
                   "--v=1")


def kube_proxy_command(state: ClusterState, network: NodeNetwork, *, log=print) -> tuple[Path, list[str]]:
    binary = build_module(KUBERNETES_NODE, go_version(), log=log).path("kube-proxy")
    return in_node(network, binary, f"--kubeconfig={node_kubeconfig(state, network)}",
                   f"--hostname-override={node_name(network)}", "--proxy-mode=iptables",
                   f"--cluster-cidr={network.pod_cidr}", "--conntrack-max-per-core=0",
                   "--iptables-localhost-nodeports=false", "--metrics-bind-address=127.0.0.1:10249",
                   "--healthz-bind-address=127.0.0.1:10256", "--v=1")


def load_pause(state: ClusterState, *, log=print) -> None:
    containerd.load(Path(state.root), containerd.pause_image(log=log))


def load_image(state: ClusterState, image: str) -> None:
    """Put ``image`` (from podman's storage) on the node: there is no registry to pull it from."""
    containerd.load(Path(state.root), image)


def service_routed(network: NodeNetwork, cluster_ip: str) -> bool:
    """kube-proxy has written the rules of the Service at ``cluster_ip`` in the node's namespace."""
    proc = subprocess.run(["ip", "netns", "exec", network.netns, "iptables", "-t", "nat", "-S", "KUBE-SERVICES"],
                          capture_output=True, text=True)
    return proc.returncode == 0 and f"{cluster_ip}/32" in proc.stdout


def remove(state: ClusterState) -> None:
    """What the node leaves once its processes are stopped (or after a crash): the pods' processes and cgroups,
    containerd's shims, mounts and files, the kubelet's volume mounts, log links and device-plugin socket, the
    network."""
    if state.pod_network is None:
        return
    network, root = NodeNetwork(state.pod_network), Path(state.root)
    kubelet.remove_cgroups(network)
    containerd.remove(root)
    node = root / "node"
    for mount in reversed(containerd.mounts_under(node)):
        subprocess.run(["umount", "-l", mount], capture_output=True)
    shutil.rmtree(node, ignore_errors=True)
    for link in CONTAINER_LOG_LINKS.glob("*.log") if CONTAINER_LOG_LINKS.exists() else []:
        if link.is_symlink() and str(node) in os.readlink(link):
            link.unlink()
    leftovers = [CONTAINER_LOG_LINKS]
    if not _kubelet_running():
        DEVICE_PLUGIN_SOCKET.unlink(missing_ok=True)
        leftovers += [DEVICE_PLUGIN_SOCKET.parent, DEVICE_PLUGIN_SOCKET.parent.parent]
    for directory in leftovers:
        try:
            directory.rmdir()  # only when empty: another cluster's kubelet may use it
        except OSError:
            pass
    remove_network(state.pod_network)


def _kubelet_running() -> bool:
    """Another cluster's kubelet shares the device-plugin socket's path: leave it alone while one runs."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"/kubelet\0" in (entry / "cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False
