"""How devcluster/knative.py prepares Knative's CRD YAMLs for a bare API server (no Knative webhooks there)."""

from __future__ import annotations

from pathlib import Path

import yaml

from devcluster.knative import CRD_DIRECTORIES, SOURCE_ANNOTATION, crd_documents

PINGSOURCE = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pingsources.sources.knative.dev, labels: {app.kubernetes.io/version: devel}}
spec:
  group: sources.knative.dev
  names: {kind: PingSource, plural: pingsources}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}, {name: v1beta2, served: true, storage: false}]
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1, v1beta1]
      clientConfig: {service: {name: eventing-webhook, namespace: knative-eventing}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
"""
SERVICE = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: services.serving.knative.dev}
spec:
  group: serving.knative.dev
  names: {kind: Service, plural: services}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
"""


def module(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    directory = tmp_path / name.replace("/", "_")
    (directory / CRD_DIRECTORIES[name]).mkdir(parents=True)
    for file, text in files.items():
        (directory / CRD_DIRECTORIES[name] / file).write_text(text)
    return directory


def test_crds_lose_only_the_conversion_webhook_and_say_where_they_come_from(tmp_path: Path) -> None:
    modules = {"knative.dev/eventing": ("v0.49.2", module(tmp_path, "knative.dev/eventing",
                                                          {"pingsource.yaml": PINGSOURCE})),
               "knative.dev/serving": ("v0.50.0", module(tmp_path, "knative.dev/serving", {"service.yaml": SERVICE}))}

    docs = {doc["metadata"]["name"]: doc for doc in crd_documents(modules)}

    assert sorted(docs) == ["pingsources.sources.knative.dev", "services.serving.knative.dev"]  # no ConfigMap
    ping = docs["pingsources.sources.knative.dev"]
    assert "conversion" not in ping["spec"]
    assert [v["name"] for v in ping["spec"]["versions"]] == ["v1", "v1beta2"]
    assert ping["metadata"]["annotations"] == {SOURCE_ANNOTATION: "knative.dev/eventing@v0.49.2"}
    assert ping["metadata"]["labels"] == {"app.kubernetes.io/version": "devel"}
    expected = yaml.safe_load(SERVICE)
    expected["metadata"]["annotations"] = {SOURCE_ANNOTATION: "knative.dev/serving@v0.50.0"}
    assert docs["services.serving.knative.dev"] == expected
