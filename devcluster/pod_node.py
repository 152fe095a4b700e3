"""A cluster with a node that really runs pods: what changes in the control plane, and what runs beside it.

``devcluster.cluster.up(..., pods=True)`` starts the same control plane as always, with these differences, all of
them what a real cluster has and the plain test cluster leaves out:

- the API server admits pods with the **ServiceAccount** plugin (each pod gets its ``kube-api-access-*`` volume and
  must name an existing account), advertises the host's end of the node link and keeps the ``kubernetes``
  Service's endpoints itself (``--endpoint-reconciler-type=lease``), and takes Service IPs from the node network's
  own range (devcluster/pods/network.py);
- kube-controller-manager also runs the **deployment, replicaset, endpoints, endpointslice, serviceaccount** and
  **root-ca-certificate-publisher** controllers: Deployments get ReplicaSets and Pods, Services get endpoints of
  the ready pods, namespaces get their ``default`` account and ``kube-root-ca.crt``;
- vc-controller-manager runs with the flag that docs/install.md tells users of an upstream Volcano to set before
  installing this engine (:data:`VOLCANO_CONTROLLERS`: everything but Volcano's own JobFlow controllers);
- **kube-proxy** (the real one, built from the same Kubernetes release) runs in the node's network namespace and
  routes Service IPs there with iptables;
- **the pod node** (``python -m devcluster.pods``) registers a Node and runs its pods with podman.

Why a cluster of its own and not the tests' usual one: with those controllers on, kube-controller-manager would
make Pods for the Deployments that the Knative Eventing stand-ins play (``devcluster/knative_standins.py``) and
rewrite the Endpoints they publish. The two never share a cluster; Knative Serving (issue 26), whose pods need a
real node, should move Eventing's played Deployments onto this node instead (docs/control-plane.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from devcluster.build import build_module, go_version
from devcluster.components import KUBE_PROXY
from devcluster.pods import volumes
from devcluster.pods.network import NodeNetwork, claim, remove as remove_network
from devcluster.pods.runtime import Runtime
from devcluster.state import ClusterState

REPO = Path(__file__).resolve().parent.parent
CONTROLLER_MANAGER_CONTROLLERS = ("garbage-collector-controller,namespace-controller,deployment-controller,"
                                  "replicaset-controller,endpoints-controller,endpointslice-controller,"
                                  "serviceaccount-controller,root-ca-certificate-publisher-controller")
VOLCANO_CONTROLLERS = "*,-sharding-controller,-jobflow-controller,-jobtemplate-controller"
"""vc-controller-manager's default (``*,-sharding-controller``) without its JobFlow and JobTemplate controllers."""


def claim_network() -> NodeNetwork:
    """The pod node's network, the first free one on the machine (needs root)."""
    if os.geteuid() != 0:
        raise RuntimeError("a cluster with the pod node needs root (network namespaces, iptables, podman); run as "
                           "root (CI does)")
    return claim()


def node_name(network: NodeNetwork) -> str:
    """Unique on the machine, because podman's labels are: two clusters never share a node name."""
    return f"pods-{network.n}"


def apiserver_flags(network: NodeNetwork) -> list[str]:
    """Replace the plain cluster's flags of the same names (see the module docstring)."""
    return [f"--service-cluster-ip-range={network.service_cidr}", f"--advertise-address={network.host_ip}",
            "--endpoint-reconciler-type=lease", "--disable-admission-plugins=TaintNodesByCondition"]


def node_kubeconfig(state: ClusterState, network: NodeNetwork) -> Path:
    """The admin kubeconfig with the advertised address, for kube-proxy inside the node's namespace (the API
    server's certificate names that address; the relay of the pod node carries it to the loopback port)."""
    path = Path(state.root) / "kubeconfig-node"
    path.write_text(state.kubeconfig.read_text().replace(state.server, f"https://{network.host_ip}:"
                                                                       f"{state.apiserver_port}"))
    path.chmod(0o600)
    return path


def kube_proxy_command(state: ClusterState, network: NodeNetwork, *, log=print) -> tuple[Path, list[str]]:
    binary = build_module(KUBE_PROXY, go_version(), log=log).path("kube-proxy")
    return Path(shutil.which("ip") or "/usr/sbin/ip"), [
        "netns", "exec", network.netns, str(binary), f"--kubeconfig={node_kubeconfig(state, network)}",
        f"--hostname-override={node_name(network)}", "--proxy-mode=iptables", f"--cluster-cidr={network.pod_cidr}",
        "--conntrack-max-per-core=0", "--iptables-localhost-nodeports=false",
        "--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256", "--v=1"]


def pods_command(state: ClusterState, network: NodeNetwork) -> tuple[Path, list[str]]:
    return Path(sys.executable), ["-m", "devcluster.pods", f"--kubeconfig={state.kubeconfig}",
                                  f"--network={network.n}", f"--apiserver-port={state.apiserver_port}",
                                  f"--node={node_name(network)}", f"--pods-dir={Path(state.root) / 'pods'}"]


def service_routed(network: NodeNetwork, cluster_ip: str) -> bool:
    """kube-proxy has written the rules of the Service at ``cluster_ip`` in the node's namespace."""
    proc = subprocess.run(["ip", "netns", "exec", network.netns, "iptables", "-t", "nat", "-S", "KUBE-SERVICES"],
                          capture_output=True, text=True)
    return proc.returncode == 0 and f"{cluster_ip}/32" in proc.stdout


def remove(state: ClusterState) -> None:
    """What a pod node leaves behind when its process could not clean up (a crash, a kill): its containers, its
    network namespaces and links, its tmpfs volumes."""
    if state.pod_network is None:
        return
    Runtime(node_name(NodeNetwork(state.pod_network))).remove_all()
    pods = Path(state.root) / "pods"
    if pods.exists():
        for directory in pods.iterdir():
            volumes.remove(directory / "volumes")
        shutil.rmtree(pods, ignore_errors=True)
    remove_network(state.pod_network)
