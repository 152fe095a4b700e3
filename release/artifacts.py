"""The steps of ``make release``, one function per artifact, each writing into ``dist``.

The image is the one ``make image`` builds (podman, as root), written as an OCI archive whose layers are already
gzip-compressed: a registry copy of it (``skopeo copy oci-archive:... docker://...``) keeps its manifest byte for
byte, so the digest the rendered manifests and the chart pin is the digest users pull. The manifests and the chart
are rendered for this version with that digest; the SBOM comes from the lock file the image installs from.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import yaml

from devcluster import image as images
from devcluster.helm import CHART, helm
from devcluster.podman import podman
from release.sbom import cyclonedx

REPO = Path(__file__).resolve().parents[1]
REPOSITORY = images.repository()
BIN = Path(sys.executable).parent
RENDERED = {
    "volcano-jobflow": "manifests",
    "volcano-jobflow-webhook": "manifests/webhook",
    "volcano-jobflow-webhook-cert-manager": "manifests/webhook/cert-manager",
    "volcano-jobflow-knative": "knative",
    "volcano-jobflow-knative-eventsource": "knative/eventsource",
}
"""Rendered manifest files (``<name>-<version>.yaml``) and the kustomize directory each is made from."""


def python_packages(dist: Path) -> list[Path]:
    """The wheel and the sdist, built by uv from pyproject.toml in a clean build environment."""
    subprocess.run([str(BIN / "uv"), "build", "--sdist", "--wheel", "--out-dir", str(dist), str(REPO)], check=True,
                   capture_output=True, timeout=600)
    (dist / ".gitignore").unlink(missing_ok=True)  # uv marks its output directory; dist/ is ignored already
    return sorted([*dist.glob("*.whl"), *dist.glob("*.tar.gz")])


def image_archive(dist: Path, version: str, *, log=print) -> tuple[Path, str]:
    """The image (built if this tree's is not there yet) as ``jobflow-engine-<version>.oci.tar``, and its digest."""
    tag = images.ensure_image(log=log)
    archive = dist / f"jobflow-engine-{version}.oci.tar"
    digest_file = dist / ".image-digest"
    podman("push", "--quiet", "--format=oci", "--compression-format=gzip", "--digestfile", str(digest_file),
           tag, f"oci-archive:{archive}:{REPOSITORY}:{version}", timeout=900)
    digest = digest_file.read_text().strip()
    digest_file.unlink()
    return archive, digest


def pinned(rendered: str, version: str, digest: str | None) -> str:
    """``rendered`` with every ``<repository>:<version>`` image pinned by ``@digest``; raises if there is none."""
    reference = f"{REPOSITORY}:{version}"
    if rendered.count(reference) == 0:
        raise ValueError(f"no image {reference} in the rendered manifests: is pyproject.toml's version the one "
                         f"manifests/ and knative/ name?")
    return rendered.replace(reference, f"{reference}@{digest}") if digest else rendered


def manifests(dist: Path, version: str, digest: str | None) -> list[Path]:
    """``kubectl kustomize`` of each directory of ``RENDERED``, the image pinned."""
    written = []
    for name, directory in RENDERED.items():
        out = subprocess.run([str(BIN / "kubectl"), "kustomize", str(REPO / directory)], capture_output=True,
                             text=True, check=True, timeout=120).stdout
        path = dist / f"{name}-{version}.yaml"
        path.write_text(pinned(out, version, digest))
        written.append(path)
    return written


def chart(dist: Path, version: str, digest: str | None) -> Path:
    """The chart packaged for this version, its default image pinned by digest (symlinked files resolved)."""
    with tempfile.TemporaryDirectory() as work:
        copy = Path(work) / CHART.name
        shutil.copytree(CHART, copy, symlinks=False)
        values = copy / "values.yaml"
        if digest:
            text = values.read_text()
            values.write_text(text.replace('  digest: ""\n', f'  digest: "{digest}"\n', 1))
            if yaml.safe_load(values.read_text())["image"]["digest"] != digest:
                raise ValueError(f"could not set image.digest in {CHART / 'values.yaml'}: is its default still "
                                 f'`digest: ""` under `image:`?')
        helm("package", str(copy), "--version", version, "--app-version", version, "--destination", str(dist))
    return dist / f"{CHART.name}-{version}.tgz"


def sbom(dist: Path, version: str) -> Path:
    document = cyclonedx((REPO / "requirements" / "image.txt").read_text(), name="volcano-jobflow-serverless",
                         version=version, revision=images.revision(), now=datetime.now(UTC))
    path = dist / f"volcano-jobflow-{version}.cdx.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def checksums(dist: Path, artifacts: list[Path]) -> Path:
    """``SHA256SUMS`` in ``sha256sum`` format: ``sha256sum -c SHA256SUMS`` in dist/ checks them all."""
    lines = []
    for path in sorted(artifacts):
        with path.open("rb") as stream:
            lines.append(f"{hashlib.file_digest(stream, 'sha256').hexdigest()}  {path.name}\n")
    target = dist / "SHA256SUMS"
    target.write_text("".join(lines))
    return target
