"""The node's kubelet (the real one, built from the pinned release) and the default scheduler that feeds it.

Run inside the node's network namespace with ``nsenter --net`` (not ``ip netns exec``, which remounts ``/sys`` and
so hides the cgroup hierarchies the kubelet and runc need). What its configuration (:func:`write_config`) says,
and why:

- ``failCgroupV1: false``: this host has cgroup v1 hierarchies (and a cgroup2 mount), which kubelet 1.35 otherwise
  refuses; ``cgroupDriver: cgroupfs`` (no systemd runs) under a cgroup root of the node's own
  (``/jobflow-pods-<n>``), made here in every hierarchy and removed by :func:`remove_cgroups`;
- its root directory, pod logs and an empty ``resolv.conf`` (no host search domains in pods) are the cluster's;
- ``clusterDNS`` is the node network's host address, where ``devcluster/node/dns.py`` answers for Services;
- anonymous, always-allowed access to its port from the API server (for ``kubectl logs`` and ``exec``), which only
  the host and the node's namespace can reach;
- no image garbage collection (every image is imported, none could be pulled again) and no iptables chains of
  its own (kube-proxy's are the ones that matter);
- the taint ``jobflow.dev/pods=true:NoSchedule``, so Volcano's scheduler, which honours taints, keeps the vcjobs'
  pods on kwok's nodes. kube-scheduler, which would too, runs with the TaintToleration filter off and an added
  node affinity away from kwok's nodes (:func:`write_scheduler_config`): the manifests' pods land here, unchanged.

The kubelet is patched in one place (``devcluster/components.py``): it warns about, instead of setting, three
host-wide kernel parameters. Everything else is upstream's.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from devcluster.node.network import NodeNetwork

TAINT = {"key": "jobflow.dev/pods", "value": "true", "effect": "NoSchedule"}
CGROUP_FS = Path("/sys/fs/cgroup")


def directory(root: Path) -> Path:
    return root / "node" / "kubelet"


def cgroup_root(network: NodeNetwork) -> str:
    return f"/jobflow-pods-{network.n}"


def write_config(root: Path, network: NodeNetwork, *, runtime_socket: Path) -> Path:
    base = directory(root)
    base.mkdir(parents=True, exist_ok=True)
    (base / "resolv.conf").write_text("")
    config = base / "config.yaml"
    config.write_text(f"""# Written by devcluster/node/kubelet.py; see its docstring.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: {cgroup_root(network)}
cgroupsPerQOS: true
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix://{runtime_socket}
podLogsDir: {base / 'pod-logs'}
resolvConf: {base / 'resolv.conf'}
clusterDNS: [{network.host_ip}]
clusterDomain: cluster.local
authentication: {{anonymous: {{enabled: true}}, webhook: {{enabled: false}}}}
authorization: {{mode: AlwaysAllow}}
address: {network.node_ip}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
makeIPTablesUtilChains: false
localStorageCapacityIsolation: false
registerWithTaints: [{{key: {TAINT['key']}, value: "{TAINT['value']}", effect: {TAINT['effect']}}}]
""")
    return config


def write_scheduler_config(root: Path, *, kubeconfig: Path) -> Path:
    path = directory(root).parent / "kube-scheduler.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""# Written by devcluster/node/kubelet.py; see its docstring.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      disabled: [{{name: TaintToleration}}]
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions: [{{key: type, operator: NotIn, values: [kwok]}}]
""")
    return path


def make_cgroups(network: NodeNetwork) -> None:
    """The kubelet's cgroup root in every hierarchy (it refuses to start without); a cpuset gets its parent's CPUs
    and memory nodes, or nothing could run in it."""
    for hierarchy in _hierarchies():
        path = hierarchy / cgroup_root(network).lstrip("/")
        path.mkdir(exist_ok=True)
        if hierarchy.name == "cpuset":
            for key in ("cpuset.cpus", "cpuset.mems"):
                (path / key).write_text((hierarchy / key).read_text())


def remove_cgroups(network: NodeNetwork) -> None:
    """Kill whatever still runs in the node's cgroups (pods of a crashed node), then remove them, deepest first."""
    for hierarchy in _hierarchies():
        top = hierarchy / cgroup_root(network).lstrip("/")
        if not top.exists():
            continue
        for _ in range(50):
            pids = {int(pid) for procs in top.rglob("cgroup.procs") for pid in procs.read_text().split()}
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        for path in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            _rmdir(path)
        _rmdir(top)


def _hierarchies() -> list[Path]:
    return [path for path in sorted(CGROUP_FS.iterdir()) if (path / "cgroup.procs").exists()]


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass
