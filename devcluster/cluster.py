"""Start the local control plane in the right order, reuse it while it is healthy, stop exactly what it started.

Start order, each step waiting for the previous one to be ready:

1. etcd (``/health``)                          5. kwok, then the fake nodes (``Ready=True``)
2. kube-apiserver (``/readyz``)                6. vc-scheduler (it creates the ``root`` and ``default`` queues)
3. Volcano's CRDs and ours (``Established``)   7. vc-controller-manager (its queue controller opens ``default``)
4. kube-controller-manager (GC, namespaces)    8. Volcano's webhook manager (a dry-run vcjob comes back defaulted)

No kubelet, node-lifecycle or service-account controller runs, so the API server's ServiceAccount and
TaintNodesByCondition admission plugins are off (otherwise pods are rejected for lack of a default service account,
and new nodes keep a not-ready taint that nothing removes).

With the CRDs comes what docs/scheduling.md tells an operator to install: PriorityClass ``volcano-jobflow-started``
(``manifests/priorityclasses.yaml``; Volcano's ``priority`` plugin is in ``config/volcano-scheduler.conf``), so the
demo and the tests run as a real install does, not warning that it is missing.

With ``pods=True`` the cluster also has a node that really runs pods, and what that needs
(``devcluster/pod_node.py``): the install tier's cluster, in ``.devcluster/tests-install/``.

Everything listens on free loopback ports chosen at start. State (ports, token, PIDs) is saved in
``.devcluster/state.json``; the kubeconfig is ``.devcluster/kubeconfig``; logs are in ``.devcluster/logs/``.
"""

from __future__ import annotations

import secrets
import shutil
import ssl
import time
import urllib.request
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster import objects, pki, pod_node, processes
from devcluster.build import ensure_binaries, module_source_dir
from devcluster.components import module_named
from devcluster.state import ClusterState, write_kubeconfig

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ROOT = REPO / ".devcluster"
"""The cluster of ``make cluster`` and ``make demo``."""
TEST_ROOT = DEFAULT_ROOT / "tests"
"""The tests' own cluster: the demo's handler and event source, which outlive ``make demo``, never see it."""
INSTALL_ROOT = DEFAULT_ROOT / "tests-install"
"""The install tier's cluster, with the pod node (``pods=True``); the Serving tier's too."""
SERVING_ROOT = DEFAULT_ROOT / "serving"
"""``make knative-serving``'s cluster: the pod node with Knative Serving and the handler as a Knative Service."""
CONFIG = Path(__file__).parent / "config"
POD_CIDR = "127.1.0.0/16"  # loopback, so tests can listen on a fake pod's IP
READY_TIMEOUT = 90.0


PRIORITY_CLASSES = REPO / "manifests" / "priorityclasses.yaml"
"""What docs/scheduling.md tells an operator to install besides the engine: installed on the tests' and the demo's
clusters as on a real one (the install tier's cluster gets it from ``kubectl apply -k manifests/``, as an operator
does, so it is not installed there beforehand)."""


def our_crds() -> list[Path]:
    """The CRD files of manifests/crds, read when needed: they may change while a cluster keeps running."""
    return sorted((REPO / "manifests" / "crds").glob("*.yaml"))


class ClusterError(RuntimeError):
    """The cluster could not start or a component died; the message names it and what to do."""


def api_client(state: ClusterState) -> client.ApiClient:
    return objects.kube_client(state.kubeconfig)


def _http_ok(url: str, token: str | None = None) -> bool:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    context = ssl._create_unverified_context() if url.startswith("https") else None
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return response.status == 200
    except OSError:
        return False


def healthy(state: ClusterState) -> bool:
    """Every process alive, the API server ready and the ``default`` queue Open; a cluster started by an older
    version of this module (its API server trusts no client certificates) is not reused."""
    if state.dead_components() or not _http_ok(f"{state.server}/readyz", state.token):
        return False
    [apiserver] = [c for c in state.components if c.name == "kube-apiserver"] or [None]
    try:
        if apiserver is None or b"--client-ca-file" not in Path(f"/proc/{apiserver.pid}/cmdline").read_bytes():
            return False
    except OSError:
        return False
    try:
        with api_client(state) as api:
            return objects.queue_state(api, "default") == "Open"
    except Exception:
        return False


def assert_alive(state: ClusterState) -> None:
    """Raise ClusterError with the tail of its log when any component has died."""
    dead = state.dead_components()
    if dead:
        parts = [f"{c.name} (pid {c.pid}) is not running any more; last lines of {c.log}:\n{c.log_tail()}"
                 for c in dead]
        raise ClusterError("\n\n".join(parts) + "\n\nRun `make cluster-down && make cluster` to start afresh.")


def _failure(component: processes.Component, problem: str) -> ClusterError:
    tail = component.log_tail()
    hint = ("a port it wanted was taken by another program; run `make cluster` again to pick new free ports"
            if "address already in use" in tail else
            "on a busy 2-core machine a retry often helps: `make cluster-down && make cluster`")
    return ClusterError(f"{component.name} {problem}. Last lines of {component.log}:\n{tail}\nWhat to do: {hint}.")


class _Starter:
    """One start of the cluster: starts processes, records them, and fails with the right component's log."""

    def __init__(self, root: Path, binaries: dict[str, Path], log, *, pods: bool = False) -> None:
        self.root, self.binaries, self.log, self.pods = root, binaries, log, pods
        self.network: pod_node.NodeNetwork | None = None
        self.state = ClusterState(root=str(root), apiserver_port=processes.free_port(),
                                  etcd_port=processes.free_port(), webhook_port=processes.free_port(),
                                  token=secrets.token_hex(16))

    def start(self, name: str, args: list[str], *, binary: Path | None = None, **kwargs) -> processes.Component:
        component = processes.start(name, binary or self.binaries[name], args, log_dir=self.state.log_dir, **kwargs)
        self.state.components.append(component)
        self.state.save()
        return component

    def wait(self, what: str, check, component: processes.Component, timeout: float = READY_TIMEOUT) -> None:
        started = time.monotonic()

        def still_running() -> None:
            if not component.alive():
                raise _failure(component, "exited while starting")

        try:
            objects.poll(what, check, timeout=timeout, on_tick=still_running)
        except objects.NotReady as error:
            raise _failure(component, str(error)) from None
        self.log(f"devcluster: {what}: ok ({time.monotonic() - started:.1f} s)")

    def run(self) -> ClusterState:
        state, data = self.state, self.root / "data"
        admin = str(state.kubeconfig)
        etcd_peer = processes.free_port()
        etcd = self.start("etcd", [
            "--name=default", f"--data-dir={data / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{state.etcd_port}",
            f"--advertise-client-urls=http://127.0.0.1:{state.etcd_port}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-cluster=default=http://127.0.0.1:{etcd_peer}",
            "--unsafe-no-fsync=true", "--auto-compaction-retention=1", "--log-level=warn",
        ])
        self.wait("etcd /health", lambda: _http_ok(f"http://127.0.0.1:{state.etcd_port}/health"), etcd)

        sa_key, sa_pub = pki.service_account_keys(data / "pki")
        client_ca = pki.client_ca(data / "pki")
        (data / "tokens.csv").write_text(f"{state.token},admin,admin,system:masters\n")
        if self.pods:
            self.network = pod_node.claim_network(log=self.log)
            state.pod_network = self.network.n
            state.save()
        apiserver = self.start("kube-apiserver", self._with_pod_node([
            f"--etcd-servers=http://127.0.0.1:{state.etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={state.apiserver_port}",
            f"--cert-dir={data / 'pki'}", f"--token-auth-file={data / 'tokens.csv'}", "--authorization-mode=RBAC",
            f"--client-ca-file={client_ca}",
            f"--service-account-issuer=https://127.0.0.1:{state.apiserver_port}",
            f"--service-account-key-file={sa_pub}", f"--service-account-signing-key-file={sa_key}",
            "--service-cluster-ip-range=10.96.0.0/24", "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            "--allow-privileged=true", "--endpoint-reconciler-type=none", "--profiling=false",
            "--enable-priority-and-fairness=false", "--v=1",
        ], pod_node.apiserver_flags))
        self.wait("kube-apiserver /readyz", lambda: _http_ok(f"{state.server}/readyz", state.token), apiserver)
        write_kubeconfig(state)

        with api_client(state) as api:
            volcano_src = module_source_dir(module_named("volcano"), "volcano.sh/volcano")
            docs = objects.crd_documents([*(volcano_src / "config/crd/volcano/bases").glob("*.yaml"), *our_crds()])
            self.log(f"devcluster: installing {len(docs)} CRDs (Volcano's and manifests/crds)")
            names = objects.create_crds(api, docs)
            self.wait("CRDs Established", lambda: objects.crds_established(api, names), apiserver)
            if not self.pods:
                installed = objects.install_priority_classes(api, PRIORITY_CLASSES)
                self.log(f"devcluster: installed PriorityClass {', '.join(installed)} (docs/scheduling.md)")

            self.start("kube-controller-manager", self._with_pod_node([
                f"--kubeconfig={admin}", "--controllers=garbage-collector-controller,namespace-controller",
                "--leader-elect=false", "--secure-port=0", "--concurrent-gc-syncs=5",
                "--concurrent-namespace-syncs=2", "--v=1",
            ], lambda _: [f"--controllers={pod_node.CONTROLLER_MANAGER_CONTROLLERS}",
                          f"--root-ca-file={data / 'pki' / 'apiserver.crt'}"]))

            kwok_home = data / "kwok-home"
            kwok_home.mkdir(parents=True, exist_ok=True)
            kwok = self.start("kwok", [
                f"--kubeconfig={admin}", f"--config={CONFIG / 'kwok-stages.yaml'}",
                "--manage-nodes-with-label-selector=type=kwok", f"--cidr={POD_CIDR}", "--node-ip=127.0.0.1",
            ], env={"HOME": str(kwok_home), "PATH": "/usr/bin:/bin"})
            nodes = objects.install_fake_nodes(api)
            self.wait(f"fake nodes {', '.join(nodes)} Ready", lambda: objects.nodes_ready(api, nodes), kwok)

            scheduler = self.start("vc-scheduler", [
                f"--kubeconfig={admin}", "--leader-elect=false", "--scheduler-name=volcano",
                f"--scheduler-conf={CONFIG / 'volcano-scheduler.conf'}", "--default-queue=default",
                "--cache-dumper=false", "--schedule-period=500ms", "--v=2",
            ])
            self.wait("queue `default` created", lambda: objects.queue_state(api, "default") is not None,
                      scheduler)
            controllers = self.start("vc-controller-manager", self._with_pod_node([
                f"--kubeconfig={admin}", "--leader-elect=false", "--scheduler-name=volcano", "--worker-threads=3",
                "--controllers=job-controller,pg-controller,queue-controller,gc-controller", "--v=2",
            ], lambda _: [f"--controllers={pod_node.VOLCANO_CONTROLLERS}"]))
            self.wait("queue `default` Open", lambda: objects.queue_state(api, "default") == "Open", controllers)

            cert = pki.loopback_serving_cert(data / "pki", "volcano-webhook")
            objects.install_volcano_webhooks(api, port=state.webhook_port, ca_bundle=cert.ca_bundle)
            webhook = self.start("vc-webhook-manager", [
                f"--kubeconfig={admin}", "--listen-address=127.0.0.1", f"--port={state.webhook_port}",
                f"--webhook-url=https://127.0.0.1:{state.webhook_port}", f"--tls-cert-file={cert.cert}",
                f"--tls-private-key-file={cert.key}", f"--ca-cert-file={cert.ca}",
                "--enabled-admission=/jobs/mutate,/jobs/validate", "--scheduler-name=volcano", "--v=2",
            ])
            self.wait("Volcano's webhook defaulting a dry-run vcjob", lambda: objects.volcano_webhook_answers(api),
                      webhook)
            if self.network is not None:
                self._start_pod_node(api)
        return state

    def _with_pod_node(self, args: list[str], flags) -> list[str]:
        """``args`` with the pod node's ``flags(network)`` in place of the flags of the same names."""
        if self.network is None:
            return args
        replacements = flags(self.network)
        names = {flag.split("=", 1)[0] for flag in replacements}
        return [arg for arg in args if arg.split("=", 1)[0] not in names] + replacements

    def _start_pod_node(self, api: client.ApiClient) -> None:
        """The node's programs in order, each once the one before is ready (devcluster/pod_node.py)."""
        state, network = self.state, self.network
        node = pod_node.node_name(network)
        binary, args = pod_node.relay_command(state, network)
        self.start("api-relay", args, binary=binary)
        binary, args = pod_node.dns_command(state, network)
        self.start("cluster-dns", args, binary=binary, cwd=REPO)
        binary, args = pod_node.containerd_command(state, network)
        runtime = self.start("containerd", args, binary=binary)
        self.wait("containerd answering", lambda: pod_node.containerd.answers(Path(state.root)), runtime)
        pod_node.load_pause(state, log=self.log)
        binary, args = pod_node.scheduler_command(state, log=self.log)
        self.start("kube-scheduler", args, binary=binary)
        binary, args = pod_node.kubelet_command(state, network, log=self.log)
        kubelet = self.start("kubelet", args, binary=binary)
        self.wait(f"node {node} Ready", lambda: _node_ready(api, node), kubelet)
        binary, args = pod_node.kube_proxy_command(state, network, log=self.log)
        proxy = self.start("kube-proxy", args, binary=binary)
        kubernetes = client.CoreV1Api(api).read_namespaced_service("kubernetes", "default").spec.cluster_ip
        self.wait("kube-proxy routing the kubernetes Service", lambda: pod_node.service_routed(network, kubernetes),
                  proxy)


def _node_ready(api: client.ApiClient, name: str) -> bool:
    try:
        return objects.nodes_ready(api, [name])
    except ApiException as error:
        if error.status == 404:  # not registered yet
            return False
        raise

def up(root: Path = DEFAULT_ROOT, *, log=print, pods: bool = False) -> tuple[ClusterState, bool]:
    """Start the cluster, or reuse a healthy one. Returns (state, started_here). ``pods``: with the pod node."""
    existing = ClusterState.load(root)
    if existing is not None:
        if healthy(existing):
            with api_client(existing) as api:
                objects.replace_crds(api, objects.crd_documents(our_crds()))
                if not pods:  # a cluster kept from before the PriorityClass was installed at start gets it now
                    objects.install_priority_classes(api, PRIORITY_CLASSES)
            log(f"devcluster: reusing the running cluster at {existing.server} (CRDs of manifests/crds refreshed)")
            return existing, False
        log("devcluster: the recorded cluster is not healthy; stopping what is left of it and starting afresh")
        down(root, log=log)
    binaries = ensure_binaries(log=log)
    shutil.rmtree(root / "data", ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    starter = _Starter(root, binaries, log, pods=pods)
    try:
        state = starter.run()
    except BaseException:
        for component in reversed(starter.state.components):
            component.stop()
        pod_node.remove(starter.state)
        (root / "state.json").unlink(missing_ok=True)
        raise
    log(f"devcluster: cluster ready in {time.monotonic() - started:.1f} s")
    return state, True


def down(root: Path = DEFAULT_ROOT, *, log=print) -> None:
    """Stop every process this project started (by PID, newest first) and remove the cluster's data."""
    state = ClusterState.load(root)
    if state is None:
        log("devcluster: no cluster recorded; nothing to stop")
        return
    for component in reversed(state.components):
        if component.alive():
            log(f"devcluster: stopping {component.name} (pid {component.pid})")
        component.stop()
    pod_node.remove(state)
    (root / "state.json").unlink(missing_ok=True)
    state.kubeconfig.unlink(missing_ok=True)
    shutil.rmtree(root / "data", ignore_errors=True)
    log("devcluster: stopped")
