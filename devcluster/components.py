"""Which binaries the local control plane needs, and from which pinned Go module each one is built.

Each ``GoModule`` is a throwaway module under ``gomod/<name>/`` whose go.mod pins one upstream release (and go.sum
pins every hash). The binaries of a module are built together, because they share almost all their dependencies.

Version notes (measured on the module proxy this project can reach, 2026-11):

- Volcano is pinned to v1.14.1, not 1.15.x: ``volcano.sh/apis`` v1.15.x is not served by the proxy (HTTP 403,
  "This module version is not available"), and Volcano v1.15.1 does not compile against the newest apis the proxy
  serves (v1.14.0: ``undefined: schedulingv1beta1.QueueAllocationGateKey``). v1.14.1 with apis v1.14.0 builds, and
  its client libraries (k8s 1.34) are within the supported skew of kube-apiserver 1.35.
- Kubernetes 1.35.3 is built through a module that replaces every staging module with its published version,
  because k8s.io/kubernetes requires them at the non-existent v0.0.0.
- Knative is not built, only downloaded (``KNATIVE``): its Go modules carry its CRD YAMLs, which the Knative
  manifest tests install (``devcluster/knative.py``). Serving v0.50.0 is knative-v1.23.0; eventing v0.49.2 is
  knative-v1.22.2, the newest eventing release the proxy serves.
- Knative Serving's programs are built from v0.49.1 (knative-v1.22.1; served, as are v0.48.0, v0.49.0, v0.50.0 and
  v0.51.0, while v0.48.3, v0.49.2, v0.49.3 and v0.50.1 answer 403): the release train of eventing v0.49.2, whose
  knative.dev/pkg and Kubernetes libraries it shares. Its knative.dev/networking and knative.dev/caching
  pseudo-versions are served as zips, but their ``.info`` answers 403 (``go list -m`` fails on them; the build does
  not need it).
- kube-state-metrics is pinned to v2.16.0, the newest release the proxy serves (v2.13.0, v2.15.0 and v2.16.0 are
  served; v2.14.0 and v2.17.0 answer 403). Its main package is the module root.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

GOMOD_DIR = Path(__file__).parent / "gomod"

KUBERNETES_VERSION = "v1.35.3"
VOLCANO_VERSION = "v1.14.1"
ETCD_VERSION = "v3.6.5"
KWOK_VERSION = "v0.8.0"
KUBE_STATE_METRICS_VERSION = "v2.16.0"
KNATIVE_EVENTING_VERSION = "v0.49.2"  # knative-v1.22.2, as gomod/knative pins
KNATIVE_SERVING_VERSION = "v0.49.1"  # knative-v1.22.1: the same release train (knative.dev/pkg, k8s 0.35.4)
HELM_VERSION = "v3.22.0"


@dataclass(frozen=True)
class SourcePatch:
    """A build-time edit of one upstream file, through ``go build -overlay``: the module cache stays untouched and
    nothing upstream is copied into this repository. Each ``(old, new)`` must match exactly once, so a new pin that
    moved the text fails the build loudly instead of building something unpatched. ``add`` names a Go file of ours
    (relative to the module directory) that is compiled into the same upstream package."""

    module: str
    file: str
    replace: tuple[tuple[str, str], ...]
    add: str | None = None


@dataclass(frozen=True)
class GoModule:
    """One pinned module and the binaries (output name -> Go package) it yields."""

    name: str
    upstream: str
    binaries: dict[str, str]
    ldflags: str = "-s -w"
    patches: tuple[SourcePatch, ...] = ()

    @property
    def directory(self) -> Path:
        return GOMOD_DIR / self.name

    @property
    def sources(self) -> list[Path]:
        """Go files of our own in the module (a main around upstream packages), built with it."""
        return sorted(self.directory.rglob("*.go"))


def _k8s_ldflags(version: str) -> str:
    """Version stamps, so ``--version`` and /version report the real release instead of v0.0.0-master."""
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.gitVersion={version}", f"-X {package}.gitMajor={major}",
                  f"-X {package}.gitMinor={minor}"]
    flags.append("-X k8s.io/component-base/version.gitTreeState=clean")
    return " ".join(flags)


MODULES: tuple[GoModule, ...] = (
    GoModule(
        name="etcd",
        upstream=f"go.etcd.io/etcd/server/v3 {ETCD_VERSION}",
        binaries={"etcd": "go.etcd.io/etcd/server/v3"},
    ),
    GoModule(
        name="kubernetes",
        upstream=f"k8s.io/kubernetes {KUBERNETES_VERSION}",
        binaries={
            "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
            "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
        },
        ldflags=_k8s_ldflags(KUBERNETES_VERSION),
    ),
    GoModule(
        name="volcano",
        upstream=f"volcano.sh/volcano {VOLCANO_VERSION}",
        binaries={
            "vc-scheduler": "volcano.sh/volcano/cmd/scheduler",
            "vc-controller-manager": "volcano.sh/volcano/cmd/controller-manager",
            "vc-webhook-manager": "volcano.sh/volcano/cmd/webhook-manager",
        },
        ldflags=f"-s -w -X volcano.sh/volcano/pkg/version.Version={VOLCANO_VERSION}",
    ),
    GoModule(
        name="kwok",
        upstream=f"sigs.k8s.io/kwok {KWOK_VERSION}",
        binaries={"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
    ),
)


# Not in MODULES: nothing is built from it and ``make cluster`` never needs it. Its go.mod pins the releases.
KNATIVE = GoModule(name="knative", upstream="knative.dev/serving and knative.dev/eventing (gomod/knative/go.mod)",
                   binaries={})


# Not in MODULES either: only the Knative delivery tests run them (``devcluster/knative_eventing.py``). Upstream's
# programs bind :8080 (and the dispatcher :8443) on all interfaces, hard-coded, for probes or for data. So the
# adapters and the controllers are the released packages behind mains of ours that leave the probe server out
# (gomod/knative-eventing/*/main.go), and the dispatcher, whose data port is a constant, is built with a two-line
# overlay that reads its ports from the environment. The broker ingress and filter take their ports from the
# environment already and are upstream's mains.
_IMC_DISPATCHER = "pkg/reconciler/inmemorychannel/dispatcher"
KNATIVE_EVENTING = GoModule(
    name="knative-eventing",
    upstream=f"knative.dev/eventing {KNATIVE_EVENTING_VERSION}",
    binaries={
        "apiserver-receive-adapter": "local.test/knative-eventing/apiserver-adapter",
        "ping-adapter": "local.test/knative-eventing/ping-adapter",
        "eventing-controller": "local.test/knative-eventing/eventing-controller",
        "mt-broker-controller": "local.test/knative-eventing/mt-broker-controller",
        "imc-controller": "local.test/knative-eventing/imc-controller",
        "broker-ingress": "knative.dev/eventing/cmd/broker/ingress",
        "broker-filter": "knative.dev/eventing/cmd/broker/filter",
        "imc-dispatcher": "knative.dev/eventing/cmd/in_memory/channel_dispatcher",
    },
    patches=(SourcePatch(
        module="knative.dev/eventing",
        file=f"{_IMC_DISPATCHER}/controller.go",
        replace=(("Port:         httpPort,", 'Port:         portFromEnv("IMC_DISPATCHER_PORT", httpPort),'),
                 ("Port:         httpsPort,", 'Port:         portFromEnv("IMC_DISPATCHER_PORT_HTTPS", httpsPort),')),
        add="patches/imc-dispatcher/ports.go",
    ),),
)

# Not in MODULES either: only the metrics tests run it (``devcluster/kube_state_metrics.py``), so ``make demo`` does
# not wait for it. Built the same way, into the same cache, the first time a test asks for it.
KUBE_STATE_METRICS = GoModule(
    name="kube-state-metrics",
    upstream=f"k8s.io/kube-state-metrics/v2 {KUBE_STATE_METRICS_VERSION}",
    binaries={"kube-state-metrics": "k8s.io/kube-state-metrics/v2"},
    ldflags=f"-s -w -X github.com/prometheus/common/version.Version={KUBE_STATE_METRICS_VERSION.lstrip('v')}",
)

# Not in MODULES either: only the install tier runs these (``devcluster/pod_node.py``), on the node that really runs
# pods. Modules of their own (same Kubernetes release and replaces as gomod/kubernetes/), because they need modules
# (knftables, ipvs, cadvisor, the CRI client) the API server does not, and adding them there would rebuild the
# control plane. Built on first use.
KUBERNETES_NODE = GoModule(
    name="kubernetes-node",
    upstream=f"k8s.io/kubernetes {KUBERNETES_VERSION} (cmd/kube-proxy, cmd/kube-scheduler)",
    binaries={"kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
              "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler"},
    ldflags=_k8s_ldflags(KUBERNETES_VERSION),
)

# The kubelet, with one patch: where it would set three host-wide kernel parameters (vm.overcommit_memory=1,
# kernel.panic=10, kernel.panic_on_oops=1) it only warns that they differ. Unpatched, its choice is to set them
# (changing the machine the tests run on) or, with protectKernelDefaults, to refuse to start.
KUBELET = GoModule(
    name="kubelet",
    upstream=f"k8s.io/kubernetes {KUBERNETES_VERSION} (cmd/kubelet)",
    binaries={"kubelet": "k8s.io/kubernetes/cmd/kubelet"},
    ldflags=_k8s_ldflags(KUBERNETES_VERSION),
    patches=(SourcePatch(
        module="k8s.io/kubernetes",
        file="pkg/kubelet/cm/container_manager_linux.go",
        replace=(("b := KernelTunableModify", "b := KernelTunableWarn"),),
    ),),
)


# Not in MODULES either: only the Serving tier runs them (``devcluster/knative_serving.py``), as pods on the pod node,
# from images made of these binaries. Upstream's five mains, unchanged: each runs in a pod of its own, so their
# hard-coded ports (8080, 8012, 8022, 9090, ...) collide with nothing. v0.49.1, not the v0.50.0 whose CRDs
# gomod/knative pins for the manifest tests: it shares Eventing v0.49.2's knative.dev/pkg and Kubernetes libraries,
# so a build after Eventing's reuses most of its compiled packages.
KNATIVE_SERVING = GoModule(
    name="knative-serving",
    upstream=f"knative.dev/serving {KNATIVE_SERVING_VERSION}",
    binaries={name: f"knative.dev/serving/cmd/{name}"
              for name in ("controller", "webhook", "autoscaler", "activator", "queue")},
)

# Not in MODULES either: only the chart's tests and ``make release`` run it (``devcluster/helm.py``). Helm 3, the
# major Volcano's, Kueue's and Argo's charts document and most clusters are installed with; v3.22.0 is the newest
# v3 the proxy serves. Helm 4 (v4.3.1 is served too) applies server-side by default, which would make Helm a field
# manager of the CRDs next to Volcano's chart: docs/helm.md says what changes.
HELM = GoModule(
    name="helm",
    upstream=f"helm.sh/helm/v3 {HELM_VERSION}",
    binaries={"helm": "helm.sh/helm/v3/cmd/helm"},
    ldflags=f"-s -w -X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
)


def module_named(name: str) -> GoModule:
    for module in MODULES:
        if module.name == name:
            return module
    raise KeyError(f"no Go module named {name!r}; known: {', '.join(m.name for m in MODULES)}")
