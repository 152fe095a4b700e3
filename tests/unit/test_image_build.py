"""``make image`` (devcluster/image.py) without podman: what a rebuild removes afterwards, and what a user who is not
root is told. The build itself runs in the cluster tiers, which build the image of the tree they test."""

from __future__ import annotations

import subprocess

import pytest

from devcluster import image, podman

PRUNE = ["image", "prune", "--force", "--filter", f"label={image.DIGEST_LABEL}"]


@pytest.fixture
def podman_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """A root machine with every tool, a base, and an image of digest ``old``; the podman commands run are recorded
    (and answered with two removed image IDs)."""
    calls: list[list[str]] = []

    def fake_podman(*args: str, check: bool = True, **_) -> subprocess.CompletedProcess:
        calls.append(list(args))
        return subprocess.CompletedProcess(["podman", *args], 0, stdout=b"deca4bdf3d42\nd9adbd9585c8\n", stderr=b"")

    monkeypatch.setattr(image, "is_root", lambda: True)
    monkeypatch.setattr(image, "ensure_tools", lambda log: None)
    monkeypatch.setattr(image, "ensure_base", lambda log: "localhost/base:1")
    monkeypatch.setattr(image, "built_digest", lambda name: "old")
    monkeypatch.setattr(image, "build", lambda name, base, digest: calls.append(["build", name, digest]))
    monkeypatch.setattr(image, "image_size", lambda name: 392_000_000)
    monkeypatch.setattr(image, "podman", fake_podman)
    return calls


def test_a_rebuild_prunes_only_the_dangling_images_labelled_with_the_build_digest(
        podman_calls: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image, "build_digest", lambda base: "new")
    lines: list[str] = []

    assert image.ensure_image(log=lines.append) == image.manifest_image()

    assert podman_calls == [["build", image.manifest_image(), "new"], PRUNE]  # no --all: tagged images stay
    assert ("image: removed 2 untagged images of builds, intermediate ones included "
            "(label dev.volcano-jobflow.build-digest)") in lines


def test_an_image_of_this_tree_is_neither_rebuilt_nor_pruned(
        podman_calls: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image, "build_digest", lambda base: "old")

    image.ensure_image(log=lambda line: None)

    assert podman_calls == []


def test_a_failed_prune_is_reported_with_the_command_and_the_image_still_returned(
        podman_calls: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image, "build_digest", lambda base: "new")
    monkeypatch.setattr(image, "podman", lambda *args, **_: subprocess.CompletedProcess(
        ["podman", *args], 125, stdout=b"", stderr=b"Error: database is locked"))
    lines: list[str] = []

    assert image.ensure_image(log=lines.append) == image.manifest_image()

    [report] = [line for line in lines if "could not remove" in line]
    assert "database is locked" in report
    assert f"`podman image prune --filter label={image.DIGEST_LABEL}`" in report


def test_not_root_names_the_missing_packages_and_the_docker_alternative(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image, "is_root", lambda: False)
    monkeypatch.setattr(podman.shutil, "which", lambda command: None if command in ("debootstrap", "runc") else "/x")

    with pytest.raises(podman.PodmanError) as error:
        image.ensure_image(log=lambda line: None)

    assert "needs root" in str(error.value)
    assert "`sudo apt-get install --no-install-recommends debootstrap runc`" in str(error.value)
    assert f"docker build -t {image.manifest_image()} ." in str(error.value)


def test_not_root_with_every_tool_only_asks_for_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image, "is_root", lambda: False)
    monkeypatch.setattr(podman.shutil, "which", lambda command: f"/usr/bin/{command}")

    with pytest.raises(podman.PodmanError) as error:
        image.ensure_image(log=lambda line: None)

    assert "needs root" in str(error.value) and "apt-get" not in str(error.value)


def test_the_image_holds_every_package_the_programs_import():
    """The image's build context and stages hold every package of ``.importlinter`` (the programs and all they
    import of this repository): a package left out installs without error and fails only when a pod imports it."""
    import configparser
    from pathlib import Path

    repo = Path(__file__).parents[2]
    contracts = configparser.ConfigParser()
    contracts.read(repo / ".importlinter")
    packages = contracts["importlinter"]["root_packages"].split()
    dockerfile = (repo / "Dockerfile").read_text().splitlines()
    allowed = (repo / ".dockerignore").read_text().splitlines()
    for package in packages:
        assert f"COPY {package} ./{package}" in dockerfile, f"the Dockerfile does not COPY {package}"
        assert f"!{package}/" in allowed, f".dockerignore leaves {package}/ out of the build context"
