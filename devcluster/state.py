"""What a running local cluster is made of, saved as ``.devcluster/state.json`` so later commands can find it.

``make cluster`` writes it, ``make cluster-down`` and the pytest fixture read it. It names the ports, the admin
token and, for every process, the PID and the binary, which is what lets ``cluster-down`` stop exactly the
processes it started and nothing else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from devcluster.processes import Component


@dataclass
class ClusterState:
    root: str
    apiserver_port: int
    etcd_port: int
    webhook_port: int
    token: str
    components: list[Component] = field(default_factory=list)
    pod_network: int | None = None
    """``n`` of the pod node's network (devcluster/node/network.py) when the cluster has one."""

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def kubeconfig(self) -> Path:
        return Path(self.root) / "kubeconfig"

    @property
    def log_dir(self) -> Path:
        return Path(self.root) / "logs"

    def save(self) -> None:
        path = Path(self.root) / "state.json"
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, root: Path) -> ClusterState | None:
        path = root / "state.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        data["components"] = [Component(**c) for c in data.get("components", [])]
        return cls(**data)

    def dead_components(self) -> list[Component]:
        return [c for c in self.components if not c.alive()]


def write_kubeconfig(state: ClusterState) -> Path:
    """The kubeconfig every component, the Python client and kubectl use (static token, loopback only).

    The API server's certificate is the one it signed itself into --cert-dir (the file also holds its CA), so
    clients verify it instead of skipping TLS verification.
    """
    ca = Path(state.root) / "data" / "pki" / "apiserver.crt"
    state.kubeconfig.write_text(
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        f"- name: devcluster\n  cluster:\n    server: {state.server}\n    certificate-authority: {ca}\n"
        "users:\n"
        f"- name: admin\n  user:\n    token: {state.token}\n"
        "contexts:\n"
        "- name: devcluster\n  context:\n    cluster: devcluster\n    user: admin\n    namespace: default\n"
        "current-context: devcluster\n"
    )
    state.kubeconfig.chmod(0o600)
    return state.kubeconfig
