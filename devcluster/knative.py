"""Knative's CRDs on the local control plane, so that our Knative manifests meet the real schemas.

Knative publishes its CRD YAMLs inside its Go modules: ``knative.dev/serving`` in ``config/core/300-resources/``
(Service, Configuration, Revision, Route, ...), ``knative.dev/eventing`` in ``config/core/resources/`` (Broker,
Trigger, ApiServerSource, PingSource, ContainerSource, SinkBinding, ...). ``gomod/knative/`` pins both releases
(go.mod) and their hashes (go.sum); the go command downloads them into its module cache, and nothing is built.

Only the CRDs are installed: no Knative controller or webhook runs here. An object is therefore judged by the CRDs'
OpenAPI schemas alone (what a server-side dry-run shows), and two changes make the documents fit a bare API server:

- ``spec.conversion`` is dropped where it names Knative's conversion webhook (PingSource, EventType): that webhook
  does not exist here, and with a single served schema per version the API server converts by itself;
- each CRD gets the annotation ``jobflow.dev/knative-source: <module>@<version>``, so a cluster holding the CRDs
  of another pin gets them replaced, and one holding these is left alone.

The tests that need them install them (``tests/cluster/test_knative_manifests.py``), not ``make cluster``: most
runs never look at a Knative object, and every CRD costs the API server memory and start time.
"""

from __future__ import annotations

import json
import subprocess
from json.decoder import WHITESPACE
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from devcluster import objects
from devcluster.build import BuildError, _explain_go_failure, cache_key, cache_root, go_environment, go_version
from devcluster.components import KNATIVE

# module -> where its CRD YAMLs are inside the module zip (symlinked copies elsewhere are not in the zip)
CRD_DIRECTORIES = {
    "knative.dev/serving": "config/core/300-resources",
    "knative.dev/eventing": "config/core/resources",
}
SOURCE_ANNOTATION = "jobflow.dev/knative-source"


def download() -> dict[str, tuple[str, Path]]:
    """module -> (version, its directory in the module cache), downloading what the cache lacks."""
    work = cache_root() / "work" / f"{KNATIVE.name}-{cache_key(KNATIVE, go_version())}"
    work.mkdir(parents=True, exist_ok=True)
    for name in ("go.mod", "go.sum"):
        (work / name).write_bytes((KNATIVE.directory / name).read_bytes())
    proc = subprocess.run(["go", "mod", "download", "-json", *CRD_DIRECTORIES], cwd=work, env=go_environment(),
                          capture_output=True, text=True)
    found: dict[str, tuple[str, Path]] = {}
    decoder, text = json.JSONDecoder(), proc.stdout
    index = WHITESPACE.match(text, 0).end()
    while index < len(text):  # `-json` prints one JSON object per module, back to back
        info, index = decoder.raw_decode(text, index)
        index = WHITESPACE.match(text, index).end()
        if info.get("Dir") and not info.get("Error"):
            found[info["Path"]] = (info["Version"], Path(info["Dir"]))
    if proc.returncode != 0 or set(found) != set(CRD_DIRECTORIES):
        raise BuildError(_explain_go_failure(KNATIVE, proc.stdout + proc.stderr))
    return found


def crd_documents(modules: dict[str, tuple[str, Path]]) -> list[dict]:
    """Every CRD of the pinned modules, ready for a bare API server (see the module docstring)."""
    docs = []
    for module, (version, directory) in sorted(modules.items()):
        for path in sorted((directory / CRD_DIRECTORIES[module]).glob("*.yaml")):
            for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                if (doc["spec"].get("conversion") or {}).get("strategy") == "Webhook":
                    del doc["spec"]["conversion"]
                doc["metadata"].setdefault("annotations", {})[SOURCE_ANNOTATION] = f"{module}@{version}"
                docs.append(doc)
    return docs


def install(api: client.ApiClient, *, timeout: float = 60) -> list[str]:
    """Create (or replace, when another pin installed them) Knative's CRDs and wait until they are served."""
    ext = client.ApiextensionsV1Api(api)
    docs = crd_documents(download())
    for doc in docs:
        name = doc["metadata"]["name"]
        try:
            current = ext.read_custom_resource_definition(name)
        except ApiException as error:
            if error.status != 404:
                raise
            objects.create_crds(api, [doc])  # a concurrent installer's 409 is fine
            continue
        if (current.metadata.annotations or {}).get(SOURCE_ANNOTATION) != doc["metadata"]["annotations"][
                SOURCE_ANNOTATION]:
            doc["metadata"]["resourceVersion"] = current.metadata.resource_version
            ext.replace_custom_resource_definition(name, doc)
    names = [doc["metadata"]["name"] for doc in docs]
    objects.poll(f"Knative's {len(names)} CRDs Established", lambda: objects.crds_established(api, names),
                 timeout=timeout)
    return names
