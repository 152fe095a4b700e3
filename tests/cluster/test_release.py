"""``make release`` (``python -m release``), run as CI runs it, and each artifact checked as a user would use it.

- Every artifact is there and ``sha256sum -c SHA256SUMS`` passes.
- The wheel installs into an empty environment (its command line's dependencies from their lock) and says its
  version; the sdist builds the same wheel's files.
- The image archive is an OCI layout whose manifest digest is the one every rendered manifest and the packaged
  chart pin; that image is the one ``make image`` built from this tree.
- The packaged chart lints and renders that digest.
- The SBOM lists every package of the image's lock file.

It builds the image with podman, so it needs root, which CI has; elsewhere it is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from devcluster import image
from devcluster.helm import helm
from devcluster.podman import podman
from release.artifacts import RENDERED, REPOSITORY
from release.sbom import locked

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
UV = str(Path(sys.executable).with_name("uv"))
VERSION = image.project_version()


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("`make release` builds the image with podman, which needs root here; CI runs it as root")
    target = tmp_path_factory.mktemp("release") / "dist"
    made = subprocess.run([sys.executable, "-m", "release", "--dist", str(target)], cwd=REPO, capture_output=True,
                          text=True, timeout=1800)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    yield target


def digest_of_archive(archive: Path) -> str:
    with tarfile.open(archive) as layout:
        index = json.load(layout.extractfile("index.json"))
    [manifest] = index["manifests"]
    assert manifest["annotations"]["org.opencontainers.image.ref.name"] == f"{REPOSITORY}:{VERSION}"
    return manifest["digest"]


def test_every_artifact_is_there_and_its_checksum_holds(dist: Path) -> None:
    package = f"volcano_jobflow_serverless-{VERSION}"
    expected = {f"{package}-py3-none-any.whl", f"{package}.tar.gz",
                f"jobflow-engine-{VERSION}.oci.tar", f"volcano-jobflow-{VERSION}.tgz",
                f"volcano-jobflow-{VERSION}.cdx.json", "SHA256SUMS",
                *(f"{name}-{VERSION}.yaml" for name in RENDERED)}
    assert {path.name for path in dist.iterdir()} == expected

    checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=dist, capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout.count(": OK") == len(expected) - 1, checked.stdout


def test_the_wheel_installs_into_an_empty_environment_and_says_its_version(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = str(venv / "bin" / "python")
    for args in (["--require-hashes", "-r", str(REPO / "requirements" / "cli.txt")],
                 ["--no-deps", str(next(dist.glob("*.whl")))]):
        subprocess.run([UV, "pip", "install", "--quiet", "--python", python, *args], check=True, capture_output=True)

    said = subprocess.run([str(venv / "bin" / "kubectl-jobflow"), "--version"], capture_output=True, text=True)
    assert said.stdout == f"kubectl-jobflow {VERSION}\n"


def test_the_rendered_manifests_and_the_chart_pin_the_image_that_was_built(dist: Path) -> None:
    digest = digest_of_archive(dist / f"jobflow-engine-{VERSION}.oci.tar")
    pinned = f"{REPOSITORY}:{VERSION}@{digest}"
    built_id = podman("image", "inspect", "--format", "{{.Id}}", image.manifest_image()).stdout.decode().strip()
    with tarfile.open(dist / f"jobflow-engine-{VERSION}.oci.tar") as layout:
        manifest = json.load(layout.extractfile(f"blobs/sha256/{digest.split(':')[1]}"))
    assert manifest["config"]["digest"] == f"sha256:{built_id}"  # the image make image built, not another

    for name in RENDERED:
        images = {container["image"] for document in yaml.safe_load_all((dist / f"{name}-{VERSION}.yaml").read_text())
                  if document for container in _containers(document)}
        assert {i for i in images if i.startswith(REPOSITORY)} == {pinned}, name  # (Knative's event_display too)

    chart = str(dist / f"volcano-jobflow-{VERSION}.tgz")
    helm("lint", chart, "--kube-version", "1.35.3")
    rendered = helm("template", "volcano-jobflow", chart, "--kube-version", "1.35.3").stdout
    images = {container["image"] for document in yaml.safe_load_all(rendered) if document
              for container in _containers(document)}
    assert images == {pinned}


def test_the_sbom_lists_every_package_of_the_image(dist: Path) -> None:
    document = json.loads((dist / f"volcano-jobflow-{VERSION}.cdx.json").read_text())

    assert document["metadata"]["component"]["version"] == VERSION
    assert document["metadata"]["component"]["properties"] == [{"name": "vcs:commit", "value": image.revision()}]
    expected = {(p.name, p.version) for p in locked((REPO / "requirements" / "image.txt").read_text())}
    assert {(c["name"], c["version"]) for c in document["components"]} == expected


def _containers(document: dict) -> list[dict]:
    """The containers of a Deployment or a Knative Service or ContainerSource (their pod templates)."""
    spec = document.get("spec") or {}
    template = spec.get("template") or {}
    return list((template.get("spec") or {}).get("containers") or [])
