"""The Helm chart (``charts/volcano-jobflow``), with a real ``helm`` v3 built from its Go module (devcluster/helm.py).

- ``helm lint`` passes, with the default values and with every option switched on.
- For the default values and for each option that has a kustomize counterpart, ``helm template`` renders the
  objects ``kubectl kustomize`` renders, field for field, but for the differences ``DIFFERENCES`` lists (and
  docs/helm.md explains): Helm's own labels, the CRDs kept on uninstall, the namespace the release is installed in
  (Helm's convention: ``helm install -n NS --create-namespace``), and the webhook's certificate, which the chart
  makes where kustomize leaves it to ``make-cert.sh``.
- A misspelt or unknown value is refused by ``values.schema.json``, with its name in the message.
- Another namespace moves every namespaced object, the bindings' subjects, the event source's sink and the
  webhook's certificate names with it; a digest pins the image.

No cluster is needed (``helm template`` renders offline); ``test_chart_install.py`` installs it on one.
"""

from __future__ import annotations

import base64
import os
import re
import ssl
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster import helm as helm_binary
from devcluster.helm import CHART, REPO, helm
from installation import KUBECTL

pytestmark = pytest.mark.cluster

KUBE_VERSION = "1.35.3"
HELM_LABELS = ("app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version",
               "helm.sh/chart")
DIFFERENCES = {
    ("Namespace", "volcano-jobflow"): "kustomize only: Helm installs into `-n NS --create-namespace`",
    ("Secret", "jobflow-admission-tls"): "chart only: the webhook's certificate, made at install, kept on upgrade",
}
"""Objects only one side renders, and why (docs/helm.md, "Differences from the manifests")."""


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    helm_binary.binary(log=lambda line: None)


def documents(text: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The objects of a rendered stream, by (kind, namespace, name)."""
    found = {}
    for document in yaml.safe_load_all(text):
        if document:
            metadata = document["metadata"]
            found[(document["kind"], metadata.get("namespace", ""), metadata["name"])] = document
    return found


def template(*args: str, namespace: str = "volcano-jobflow") -> dict[tuple[str, str, str], dict[str, Any]]:
    rendered = helm("template", "volcano-jobflow", str(CHART), "--namespace", namespace,
                    "--kube-version", KUBE_VERSION, *args).stdout
    return documents(rendered)


def kustomize(*directories: Path, components: tuple[Path, ...] = ()) -> dict[tuple[str, str, str], dict[str, Any]]:
    """What ``kubectl kustomize`` renders for ``directories`` together (and ``components``), as the README's
    ``kubectl apply -k`` steps would apply them one after another."""
    with tempfile.TemporaryDirectory() as work:
        overlay = Path(work)
        kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                         "resources": [os.path.relpath(d, overlay) for d in directories],
                         "components": [os.path.relpath(c, overlay) for c in components]}
        (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        out = subprocess.run([KUBECTL, "kustomize", "--load-restrictor=LoadRestrictionsNone", str(overlay)],
                             capture_output=True, text=True, check=True, timeout=60)
    return documents(out.stdout)


def without_helm_parts(document: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    """``document`` without what only Helm adds: its labels, the CRDs' keep policy (where the manifest's CRD, as
    upstream's JobTemplate CRD does, does not carry it already), the webhook's caBundle."""
    document = yaml.safe_load(yaml.safe_dump(document))
    metadata = document["metadata"]
    for label in HELM_LABELS:
        metadata.get("labels", {}).pop(label, None)
    if "helm.sh/resource-policy" not in manifest["metadata"].get("annotations", {}):
        metadata.get("annotations", {}).pop("helm.sh/resource-policy", None)
    if not metadata.get("annotations", True):
        metadata.pop("annotations")
    for webhook in document.get("webhooks", []):
        webhook["clientConfig"].pop("caBundle", None)
    return document


MANIFESTS = REPO / "manifests"
OPTIONS = {
    "defaults": ((), (MANIFESTS, MANIFESTS / "webhook"), ()),
    "namespaced": (("--set", "namespaces={team-a,team-b}"), (MANIFESTS, MANIFESTS / "webhook"),
                   (MANIFESTS / "namespaced",)),
    "cert-manager": (("--set", "webhook.certManager=true"), (MANIFESTS, MANIFESTS / "webhook" / "cert-manager"),
                     ()),
    "dashboard and ServiceMonitors": (("--set", "dashboard.enabled=true", "--set", "monitoring.serviceMonitors=true"),
                                      (MANIFESTS, MANIFESTS / "webhook", MANIFESTS / "dashboard",
                                       MANIFESTS / "monitoring"), ()),
    "dashboard with its logs": (("--set", "dashboard.enabled=true", "--set", "dashboard.logs=true"),
                                (MANIFESTS, MANIFESTS / "webhook", MANIFESTS / "dashboard-logs"), ()),
    "knative": (("--set", "mode=knative"), (REPO / "knative", MANIFESTS / "webhook"), ()),
    "knative with our event source": (("--set", "mode=knative", "--set", "knative.source=eventsource"),
                                      (REPO / "knative" / "eventsource", MANIFESTS / "webhook"), ()),
}


@pytest.mark.parametrize("option", OPTIONS)
def test_the_chart_renders_the_objects_of_the_manifests(option: str) -> None:
    values, directories, components = OPTIONS[option]
    chart, manifests = template(*values), kustomize(*directories, components=components)

    only_chart = {key for key in chart.keys() - manifests.keys() if (key[0], key[2]) not in DIFFERENCES}
    only_manifests = {key for key in manifests.keys() - chart.keys() if (key[0], key[2]) not in DIFFERENCES}
    assert (only_chart, only_manifests) == (set(), set())
    for key in chart.keys() & manifests.keys():
        assert without_helm_parts(chart[key], manifests[key]) == manifests[key], key


def test_every_object_carries_the_labels_of_its_release() -> None:
    for key, document in template("--set", "dashboard.enabled=true").items():
        labels = document["metadata"]["labels"]
        assert labels["app.kubernetes.io/part-of"] == "volcano-jobflow", key
        assert labels["app.kubernetes.io/instance"] == "volcano-jobflow", key
        assert labels["app.kubernetes.io/managed-by"] == "Helm", key


def test_the_crds_stay_when_the_release_goes_unless_told_otherwise() -> None:
    crds = [d for d in template().values() if d["kind"] == "CustomResourceDefinition"]
    assert sorted(d["metadata"]["name"] for d in crds) == ["jobflows.flow.volcano.sh",
                                                           "jobflowtemplates.flow.volcano.sh",
                                                           "jobtemplates.flow.volcano.sh"]
    assert all(d["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep" for d in crds)

    # Upstream's JobFlow and JobTemplate CRDs (and so ours) carry the policy themselves; keep=false adds it to none.
    assert [d["metadata"]["name"] for d in template("--set", "crds.keep=false").values()
            if "helm.sh/resource-policy" in d["metadata"].get("annotations", {})] == ["jobflows.flow.volcano.sh",
                                                                                         "jobtemplates.flow.volcano.sh"]
    assert not [d for d in template("--set", "crds.install=false").values()
                if d["kind"] == "CustomResourceDefinition"]


def test_another_namespace_moves_everything_that_names_it() -> None:
    rendered = template("--set", "dashboard.enabled=true", namespace="jobflow-engine")

    namespaced = [key for key in rendered if key[1]]
    assert namespaced and {key[1] for key in namespaced} == {"jobflow-engine"}
    assert "volcano-jobflow.svc" not in yaml.safe_dump_all(rendered.values())
    for document in rendered.values():
        for subject in document.get("subjects", []):
            assert subject["namespace"] == "jobflow-engine"
    source = rendered[("Deployment", "jobflow-engine", "jobflow-eventsource")]
    env = {e["name"]: e.get("value") for e in source["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["K_SINK"] == "http://jobflow-handler.jobflow-engine.svc.cluster.local/"
    webhooks = rendered[("ValidatingWebhookConfiguration", "", "jobflow-admission")]["webhooks"]
    assert {w["clientConfig"]["service"]["namespace"] for w in webhooks} == {"jobflow-engine"}


def test_the_generated_certificate_is_for_the_webhook_service_and_signed_by_the_ca_bundle() -> None:
    rendered = template(namespace="jobflow-engine")
    data = rendered[("Secret", "jobflow-engine", "jobflow-admission-tls")]["data"]
    webhooks = rendered[("ValidatingWebhookConfiguration", "", "jobflow-admission")]["webhooks"]
    assert {w["clientConfig"]["caBundle"] for w in webhooks} == {data["ca.crt"]}

    with tempfile.TemporaryDirectory() as work:
        for name in ("ca.crt", "tls.crt", "tls.key"):
            (Path(work) / name).write_bytes(base64.b64decode(data[name]))
        context = ssl.create_default_context(cafile=str(Path(work) / "ca.crt"))
        context.load_cert_chain(str(Path(work) / "tls.crt"), str(Path(work) / "tls.key"))  # the key matches
        verified = subprocess.run(["openssl", "verify", "-CAfile", "ca.crt", "-verify_hostname",
                                   "jobflow-admission.jobflow-engine.svc", "tls.crt"], cwd=work,
                                  capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_digest_pins_the_image_of_every_container() -> None:
    digest = "sha256:" + "ab" * 32
    rendered = template("--set", f"image.digest={digest}", "--set", "image.tag=9.9.9", "--set",
                        "dashboard.enabled=true")

    images = {container["image"] for document in rendered.values() if document["kind"] == "Deployment"
              for container in document["spec"]["template"]["spec"]["containers"]}
    assert images == {f"ghcr.io/volcano-jobflow/jobflow-engine:9.9.9@{digest}"}


@pytest.mark.parametrize(("setting", "named"), [
    ("handler.replica=3", "replica"),
    ("webhook.enable=false", "enable"),
    ("imag.tag=1", "imag"),
    ("webhook.failurePolicy=Ignored", "failurePolicy"),
    ("image.digest=abc", "digest"),
])
def test_a_misspelt_or_wrong_value_is_refused_by_name(setting: str, named: str) -> None:
    result = helm("template", "volcano-jobflow", str(CHART), "--kube-version", KUBE_VERSION, "--set", setting,
                  check=False)

    assert result.returncode != 0
    assert named in result.stderr and "values don't meet the specifications of the schema" in result.stderr


def test_the_prometheus_rule_names_metrics_the_engine_exports() -> None:
    rendered = template("--set", "monitoring.prometheusRule=true")
    [rule] = [d for d in rendered.values() if d["kind"] == "PrometheusRule"]
    alerts = {r["alert"]: r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]}
    metrics = (REPO / "docs" / "metrics.md").read_text()

    assert set(alerts) == {"JobFlowNoProgress", "JobFlowHandlerErrors", "JobFlowEventSourceBacklog"}
    for expression in alerts.values():
        names = set(re.findall(r"\b(?:kube_)?jobflow_[a-z_]+", expression))
        assert names
        for name in names:
            assert f"`{name}`" in metrics, name


def test_lint_passes_with_the_defaults_and_with_every_option_on() -> None:
    helm("lint", str(CHART), "--kube-version", KUBE_VERSION)
    helm("lint", str(CHART), "--kube-version", KUBE_VERSION, "--set", "dashboard.enabled=true", "--set",
         "monitoring.serviceMonitors=true", "--set", "monitoring.prometheusRule=true", "--set",
         "webhook.certManager=true", "--set", "namespaces={team-a}", "--set", "image.digest=sha256:" + "0" * 64)


def test_knative_mode_refuses_the_namespaced_install_saying_why() -> None:
    result = helm("template", "volcano-jobflow", str(CHART), "--kube-version", KUBE_VERSION, "--set", "mode=knative",
                  "--set", "namespaces={team-a}", check=False)

    assert result.returncode != 0 and "namespaces (the namespaced install) is for mode=plain" in result.stderr


def test_knative_mode_moves_with_the_namespace_and_pins_the_image() -> None:
    digest = "sha256:" + "cd" * 32
    for source in ("apiserversource", "eventsource"):
        rendered = template("--set", "mode=knative", "--set", f"knative.source={source}", "--set",
                            f"image.digest={digest}", namespace="jobflow-engine")

        assert {key[1] for key in rendered if key[1]} == {"jobflow-engine"}
        text = yaml.safe_dump_all(rendered.values()).replace("ghcr.io/volcano-jobflow/", "")
        assert "volcano-jobflow/" not in text and "volcano-jobflow.svc" not in text  # the PingSource's filter too
    ours = {c["image"] for d in rendered.values() if d["kind"] in ("Service", "ContainerSource")
            for c in ((d["spec"].get("template") or {}).get("spec") or {}).get("containers", [])
            if "jobflow-engine" in c["image"]}
    assert ours == {f"ghcr.io/volcano-jobflow/jobflow-engine:0.1.0@{digest}"}
