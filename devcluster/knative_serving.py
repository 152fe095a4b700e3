"""Knative Serving installed as a user installs it, its five programs running as pods on the pod node.

A Serving release is ``serving-core.yaml``: ``ko resolve`` run over the module's ``config/core/`` (namespace,
ClusterRoles and bindings, CRDs, ConfigMaps, the Deployments and Services of the controller, webhook, autoscaler
and activator, HPAs and a PodDisruptionBudget, the webhook configurations and their Secret, the queue-proxy's
caching ``Image``), with each ``ko://knative.dev/serving/cmd/<name>`` replaced by the image ko built and pushed.
The Go module zip holds every file of ``config/core/`` but the CRDs that the repository links in from
``knative.dev/networking`` and ``knative.dev/caching`` (a module zip drops symbolic links); those modules are the
ones Serving's go.mod pins, so :func:`release_documents` reads them from there: the same set of objects.

What ko does is done here without a registry (:func:`images`): the five programs are built from the pinned module
(``gomod/knative-serving``, like every other binary), each is put alone in an image the way ko lays it out
(``/ko-app/<name>``, run as the non-root user 65532 of ko's default base), and the images are imported into
podman's storage, from where the node's containerd gets them. The pod node's real kubelet then runs the release's
Deployments unchanged: their probes, ports, ServiceAccounts and security contexts, each pod with its own IP, so the
ports Serving hard-codes (8080, 8012, 8022, 9090) never meet.

Settings that differ from the release, all in ConfigMaps, all named in :data:`SETTINGS` and docs/knative.md:

- what any install without a registry or Istio sets: ``config-deployment``'s ``queue-sidecar-image`` (ko's job) and
  ``registries-skipping-tag-resolving`` (no registry to resolve a tag to a digest), and ``config-network``'s
  ``ingress-class`` (the networking layer installed: here the KIngress stand-in, devcluster/node/kingress.py);
- test settings that make scale to zero take seconds instead of minutes: ``config-autoscaler``'s ``stable-window``
  (the least Serving allows) and ``scale-to-zero-grace-period``.

The order matters once: the webhook configurations name the webhook's Service with ``failurePolicy: Fail``, so
every Serving object after them waits for the webhook pod to answer (:func:`install`).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient

from devcluster import objects, processes
from devcluster.build import build_module, cache_key, cache_root, go_version
from devcluster.components import KNATIVE_SERVING, KNATIVE_SERVING_VERSION
from devcluster.knative_eventing import apply
from devcluster.node import kingress
from devcluster.node.network import NodeNetwork
from devcluster.podman import podman
from devcluster.state import ClusterState

REPO = Path(__file__).resolve().parent.parent

SYSTEM_NAMESPACE = "knative-serving"
PROGRAMS = ("controller", "webhook", "autoscaler", "activator")
"""The release's Deployments; the fifth program, queue-proxy, runs beside each revision's user container."""
INGRESS_CLASS = "standin.ingress.jobflow.dev"
"""``config-network``'s ``ingress-class``: the KIngress stand-in reconciles exactly the Ingresses of this class."""
KO_USER = "65532:65532"  # the non-root user of ko's default base image (cgr.dev/chainguard/static)
SETTINGS = {
    "config-deployment": {
        "registries-skipping-tag-resolving": "kind.local,ko.local,dev.local,localhost,ghcr.io",
    },
    "config-network": {"ingress-class": INGRESS_CLASS},
    "config-autoscaler": {"stable-window": "6s", "scale-to-zero-grace-period": "10s"},
}
"""ConfigMap -> keys set over the release's (module docstring); ``queue-sidecar-image`` is added by
:func:`release_documents`."""
RELEASE_FILES = (
    "config/core/100-namespace.yaml", "config/core/200-roles/*.yaml", "config/core/200-serviceaccount.yaml",
    "config/core/300-resources/*.yaml", "config/core/300-knativecertificate.yaml", "config/core/configmaps/*.yaml",
    "config/core/deployments/*.yaml", "config/core/webhooks/*.yaml", "config/core/999-cache.yaml",
)
"""``config/core/`` of ``knative.dev/serving``, as ``ko resolve -R -f config/core`` reads it."""
LINKED_FILES = {
    "knative.dev/networking": ("config/certificate.yaml", "config/domain-claim.yaml", "config/ingress.yaml",
                               "config/serverlessservice.yaml", "config/config-network.yaml"),
    "knative.dev/caching": ("config/image.yaml",),
}
"""What ``config/core/`` links in from the other modules (module docstring)."""


class ServingError(RuntimeError):
    """Serving could not be installed or did not become ready; the message says what and what to do."""


def module_dirs() -> dict[str, Path]:
    """Serving's module and the two it links files from, in the module cache at the versions the build module's
    go.mod pins (read from go.mod: the proxy serves these pseudo-versions' zips but answers 403 for their ``.info``,
    which ``go list -m`` asks for)."""
    pins = dict(re.findall(r"^\s+(knative\.dev/\S+) (v\S+)", (KNATIVE_SERVING.directory / "go.mod").read_text(), re.M))
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    found = {module: Path(cache) / f"{module}@{pins[module]}" for module in ("knative.dev/serving", *LINKED_FILES)}
    missing = [str(path) for path in found.values() if not path.is_dir()]
    if missing:
        raise ServingError(f"not in the module cache: {', '.join(missing)}; building the Serving programs downloads "
                           "them (devcluster.knative_serving.images)")
    return found


def image_name(program: str) -> str:
    """The image of ``program``, tagged with the build's cache key: a new pin or toolchain makes a new image."""
    return f"localhost/knative-serving/{program}:{KNATIVE_SERVING_VERSION}-{cache_key(KNATIVE_SERVING, go_version())}"


def ko_image(binary: Path, *, program: str, name: str, log=print) -> str:
    """``name`` in podman's storage: ``binary`` alone at ``/ko-app/<program>``, as ko lays out an image (made when
    missing)."""
    if podman("image", "exists", name, check=False).returncode != 0:
        with tempfile.TemporaryDirectory(dir=cache_root()) as scratch:
            layout = Path(scratch) / "ko-app"
            layout.mkdir()
            (layout / program).hardlink_to(binary)
            tar = Path(scratch) / "layer.tar"
            subprocess.run(["tar", "-C", scratch, "-cf", str(tar), "ko-app"], check=True)
            podman("import", "--change", f'ENTRYPOINT ["/ko-app/{program}"]', "--change", f"USER {KO_USER}",
                   "--change", "ENV KO_DATA_PATH=/var/run/ko", str(tar), name)
        log(f"serving: image {name}")
    return name


def images(*, log=print) -> dict[str, str]:
    """program -> image in podman's storage, for the five programs (module docstring)."""
    built = build_module(KNATIVE_SERVING, go_version(), log=log)
    return {program: ko_image(built.path(program), program=program, name=image_name(program), log=log)
            for program in KNATIVE_SERVING.binaries}


def release_documents(dirs: dict[str, Path], images_by_program: dict[str, str]) -> list[dict]:
    """Every object of the release, ko's references resolved to ``images_by_program`` and :data:`SETTINGS` set."""
    paths = [path for pattern in RELEASE_FILES for path in sorted(dirs["knative.dev/serving"].glob(pattern))]
    paths += [dirs[module] / name for module, names in LINKED_FILES.items() for name in names]
    docs = []
    for path in paths:
        text = path.read_text()
        for program, image in images_by_program.items():
            text = text.replace(f"ko://knative.dev/serving/cmd/{program}", image)
        docs += [doc for doc in yaml.safe_load_all(text) if doc]
    for doc in docs:
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] in SETTINGS:
            doc.setdefault("data", {}).update(SETTINGS[doc["metadata"]["name"]])
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == "config-deployment":
            doc["data"]["queue-sidecar-image"] = images_by_program["queue"]
    unresolved = [doc["metadata"]["name"] for doc in docs if "ko://" in yaml.safe_dump(doc)]
    if unresolved:
        raise ServingError(f"ko references left in {', '.join(unresolved)}: the release names a program that "
                           f"devcluster/components.py's KNATIVE_SERVING does not build; add it there")
    return docs


KIND_ORDER = ("Namespace", "ClusterRole", "ServiceAccount", "ConfigMap", "Secret")
"""Applied first, in this order: the Deployments' pods read their ConfigMaps at start (some exit without)."""


def install(api: client.ApiClient, *, load_image, log=print, timeout: float = 180) -> None:
    """The release on the cluster, its Deployments rolled out and the webhook admitting Serving's objects.

    ``load_image(name)`` puts an image from podman's storage onto the node (there is no registry to pull from).
    """
    started = time.monotonic()
    images_by_program = images(log=log)
    for image in images_by_program.values():
        load_image(image)
    log(f"serving: images on the node ({time.monotonic() - started:.1f} s)")
    docs = release_documents(module_dirs(), images_by_program)
    crds = [doc for doc in docs if doc["kind"] == "CustomResourceDefinition"]
    objects.create_crds(api, crds)
    objects.poll(f"Serving's {len(crds)} CRDs Established",
                 lambda: objects.crds_established(api, [doc["metadata"]["name"] for doc in crds]), timeout=60)
    webhooked = [doc for doc in docs if doc["apiVersion"].split("/")[0].endswith(".knative.dev")]
    rest = sorted((doc for doc in docs if doc["kind"] != "CustomResourceDefinition" and doc not in webhooked),
                  key=lambda doc: KIND_ORDER.index(doc["kind"]) if doc["kind"] in KIND_ORDER else len(KIND_ORDER))
    dynamic = DynamicClient(api)  # made after the CRDs, so its discovery knows them
    for doc in rest:
        apply(dynamic, doc)
    objects.poll("Serving's Deployments rolled out", lambda: rolled_out(api), timeout=timeout)
    objects.poll("Serving's webhook admitting its objects", lambda: _applied(dynamic, webhooked), timeout=60)
    log(f"serving: installed and ready ({time.monotonic() - started:.1f} s)")


def start(state: ClusterState, api: client.ApiClient, *, load_image, log=print) -> None:
    """Serving on a cluster with the pod node: the release (:func:`install`), then the KIngress stand-in as one of
    the cluster's processes (stopped with it; kept when the cluster is reused)."""
    if state.pod_network is None:
        raise ServingError("Knative Serving runs its programs as pods: start the cluster with the pod node "
                           "(devcluster.cluster.up(..., pods=True), as root)")
    install(api, load_image=load_image, log=log)
    if any(component.name == "kingress-standin" and component.alive() for component in state.components):
        return
    listen = f"{NodeNetwork(state.pod_network).host_ip}:80"
    component = processes.start("kingress-standin", Path(sys.executable), [
        "-m", "devcluster.node.kingress", f"--kubeconfig={state.kubeconfig}", f"--listen={listen}"],
        log_dir=state.log_dir, cwd=REPO)
    state.components.append(component)
    state.save()
    objects.poll("the KIngress stand-in listening", lambda: _published(api, component), timeout=30)


def _published(api: client.ApiClient, component: processes.Component) -> bool:
    if not component.alive():
        raise ServingError(f"the KIngress stand-in exited:\n{component.log_tail()}")
    try:
        client.DiscoveryV1Api(api).read_namespaced_endpoint_slice(kingress.SERVICE, SYSTEM_NAMESPACE)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def rolled_out(api: client.ApiClient) -> bool:
    apps = client.AppsV1Api(api)
    for name in PROGRAMS:
        try:
            found = apps.read_namespaced_deployment(name, SYSTEM_NAMESPACE)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        status = found.status
        if not (status.available_replicas and status.updated_replicas == status.replicas == found.spec.replicas):
            return False
    return True


def _applied(dynamic: DynamicClient, docs: list[dict]) -> bool:
    """Apply ``docs`` (objects the webhook admits); False while the webhook does not answer yet."""
    try:
        for doc in docs:
            apply(dynamic, doc)
    except ApiException as error:
        if error.status in (500, 502, 503) or "webhook" in str(error.body):
            return False
        raise
    return True
