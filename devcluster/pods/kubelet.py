"""devcluster's node that really runs pods: the kubelet stand-in's main loop, and the scheduler's one decision.

The install tier (``tests/cluster/test_install*.py``) applies ``manifests/`` as a user would; the Deployments there
need a node that runs their pods from the image. kwok's fake nodes only pretend (they keep running the vcjobs'
pods); a real kubelet cannot run on this machine (docs/control-plane.md has the evidence). So this process plays
the kubelet of one more node, ``<cluster>-pods``, and every half second:

- **registers** the Node (Ready, its IP, ``podCIDR``), with the taint ``jobflow.dev/pods=true:NoSchedule`` so that
  Volcano's scheduler, which honours taints, keeps the vcjobs' pods on kwok's nodes;
- **binds** every pending pod of the default scheduler to it (no kube-scheduler runs: the taint is this node's own,
  so the binder ignores it, and nothing else is weighed: one node, no resources counted);
- lists its pods, the node's containers (one ``podman ps``) and the Services (for environment variables and
  ``/etc/hosts``), and hands each pod's :class:`~devcluster.pods.pod.PodWorker` the newest snapshot.

It also runs the relay that lets pods reach the API server (``network.Forwarder``). On SIGTERM it removes every
container and pod namespace it made; the node namespace itself is the cluster's (``devcluster/cluster.py``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster.pods.network import NodeNetwork
from devcluster.pods.pod import TICK, PodWorker, Snapshot
from devcluster.pods.runtime import Runtime

LOG = logging.getLogger(__name__)
TAINT = {"key": "jobflow.dev/pods", "value": "true", "effect": "NoSchedule"}
DEFAULT_SCHEDULER = "default-scheduler"


def _items(response) -> list[dict]:
    return json.loads(response.data)["items"]


class Kubelet:
    def __init__(self, *, api: client.ApiClient, network: NodeNetwork, node: str, pods_dir: Path) -> None:
        self.core = client.CoreV1Api(api)
        self.network, self.node, self.pods_dir = network, node, pods_dir
        self.runtime = Runtime(node)
        self.workers: dict[str, PodWorker] = {}
        self._free = list(range(2, 255))
        self._lock = threading.Lock()

    def allocate(self) -> int:
        with self._lock:
            if not self._free:
                raise RuntimeError(f"node {self.node} has no pod IP left in {self.network.pod_cidr}")
            return self._free.pop(0)

    def release(self, index: int) -> None:
        with self._lock:
            self._free.append(index)

    def register(self) -> None:
        labels = {"kubernetes.io/hostname": self.node, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
        body = {"metadata": {"name": self.node, "labels": labels},
                "spec": {"podCIDR": self.network.pod_cidr, "podCIDRs": [self.network.pod_cidr], "taints": [TAINT]}}
        try:
            self.core.create_node(body)
        except ApiException as error:
            if error.status != 409:
                raise
        capacity = {"cpu": "2", "memory": "8Gi", "pods": "110"}
        self.core.patch_node_status(self.node, {"status": {
            "capacity": capacity, "allocatable": capacity,
            "addresses": [{"type": "InternalIP", "address": self.network.node_ip},
                          {"type": "Hostname", "address": self.node}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "devcluster's pod node is running pods with podman"}],
            "nodeInfo": {"kubeletVersion": "devcluster-pods", "containerRuntimeVersion": "podman",
                         "operatingSystem": "linux", "architecture": "amd64", "osImage": "", "kernelVersion": "",
                         "kubeProxyVersion": "", "machineID": "", "systemUUID": "", "bootID": ""}}})

    def bind_pending(self) -> None:
        for pod in _items(self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=",
                                                                 _preload_content=False)):
            if pod["spec"].get("schedulerName", DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
                continue
            if pod["metadata"].get("deletionTimestamp"):
                continue
            selector = pod["spec"].get("nodeSelector") or {}
            if any(selector[key] != value for key, value in selector.items()
                   if key in ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch")
                   and value not in (self.node, "linux", "amd64")):
                continue
            meta = pod["metadata"]
            try:
                self.core.create_namespaced_pod_binding(
                    meta["name"], meta["namespace"],
                    {"metadata": {"name": meta["name"]}, "target": {"kind": "Node", "name": self.node}},
                    _preload_content=False)
                LOG.info("bound %s/%s to %s", meta["namespace"], meta["name"], self.node)
            except ApiException as error:
                if error.status not in (404, 409):
                    raise

    def sync(self) -> None:
        self.bind_pending()
        pods = _items(self.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={self.node}",
                                                            _preload_content=False))
        services = _items(self.core.list_service_for_all_namespaces(_preload_content=False))
        [kubernetes] = [s for s in services if (s["metadata"]["namespace"], s["metadata"]["name"])
                        == ("default", "kubernetes")]
        states_taken = time.monotonic()
        states = self.runtime.states()
        kubernetes_service = (kubernetes["spec"]["clusterIP"], kubernetes["spec"]["ports"][0]["port"])
        by_uid = {pod["metadata"]["uid"]: pod for pod in pods}
        for pod in pods:
            uid = pod["metadata"]["uid"]
            if uid not in self.workers:
                if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    continue
                worker = PodWorker(core=self.core, runtime=self.runtime, network=self.network,
                                   pods_dir=self.pods_dir, allocate=self.allocate, release=self.release, pod=pod)
                self.workers[uid] = worker
                worker.start()
        for uid, worker in list(self.workers.items()):
            if worker.done.is_set():
                del self.workers[uid]
                continue
            worker.offer(Snapshot(pod=by_uid.get(uid), states=states, states_taken=states_taken, services=services,
                                  kubernetes=kubernetes_service))

    def run(self, stop: threading.Event) -> None:
        self.runtime.remove_all()
        self.register()
        LOG.info("node %s ready: pods in %s, services in %s", self.node, self.network.pod_cidr,
                 self.network.service_cidr)
        while not stop.wait(TICK):
            try:
                self.sync()
            except ApiException as error:
                LOG.warning("API error %s %s; trying again", error.status, error.reason)
            except OSError as error:
                LOG.warning("cannot reach the API server (%s); trying again", error)

    def shutdown(self) -> None:
        """Remove every container and pod namespace (the cluster is going away: no grace, no API writes)."""
        self.runtime.remove_all()
        for worker in self.workers.values():
            if worker.index is not None:
                self.network.remove_pod(worker.index)
