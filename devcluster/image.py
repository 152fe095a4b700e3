"""``make image``: the engine's image, built from the repository's own Dockerfile on a machine with no registry.

The Dockerfile is the one users build with ``docker build .``; here it is built by podman, unchanged, with one build
argument: ``BASE``, which users leave at ``python:3.11-slim`` from Docker Hub. No registry is reachable from the
development machine or CI, so the base is made locally, the way a distribution makes its own images:

1. ``debootstrap`` a minimal Debian (the release and mirror apt already uses) with Python 3.11, slimmed as
   ``debian:bookworm-slim`` is (:data:`SLIM_EXCLUDED`), and a virtual environment on ``PATH`` (Debian's Python refuses ``pip install`` into the system, PEP 668; ``python:3.11-slim``
   has a pip of its own on ``PATH``, so the Dockerfile needs one there too). The root filesystem is kept as a tar
   under ``~/.cache/volcano-jobflow/image/`` and imported into podman's storage; later runs reuse either.
2. ``podman build --pull=never --no-cache --network=host``: nothing is pulled, buildah 1.28's cache is not trusted
   (it reuses a stale layer for ``RUN --mount=...,from=<stage>``), and ``pip`` inside the build uses the host's
   network and, mounted read-only for the build only, the host's CA bundle (this sandbox intercepts TLS with a CA
   of its own; nothing of it lands in the image).
3. The image is tagged with the name and version ``manifests/`` deploys, and labelled with a digest of everything
   the build reads (Dockerfile, the context the .dockerignore lets in, the base): :func:`ensure_image` rebuilds
   only when that digest changed, so the tests always run an image of the tree they test.
4. The untagged images of this build and earlier ones are removed (:func:`prune_superseded`): every rebuild leaves
   its build stage (~220 MB) and the image it took the tag from (~390 MB).

Each step prints how long it took. Figures: docs/install.md#the-image.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import yaml

from devcluster.build import cache_root
from devcluster.podman import PodmanError, ensure_tools, environment, is_root, missing_packages, podman

REPO = Path(__file__).resolve().parent.parent
DEBIAN_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
BASE_RECIPE = 2  # bump when the steps of _debootstrap change, so the cached base is made again
SLIM_EXCLUDED = ("usr/share/doc", "usr/share/man", "usr/share/groff", "usr/share/info", "usr/share/lintian",
                 "usr/share/linda", "usr/share/locale")
"""What debian:bookworm-slim (the base of python:3.11-slim) leaves out, by dpkg's ``path-exclude``: documentation,
manual pages and translations; each package's copyright file stays, as there."""
DIGEST_LABEL = "dev.volcano-jobflow.build-digest"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def manifest_image() -> str:
    """The image ``manifests/handler.yaml`` deploys: the tag ``make image`` gives its build."""
    docs = yaml.safe_load_all((REPO / "manifests" / "handler.yaml").read_text())
    [deployment] = [doc for doc in docs if doc and doc["kind"] == "Deployment"]
    return deployment["spec"]["template"]["spec"]["containers"][0]["image"]


def repository() -> str:
    """The image repository the manifests name, without tag: ``ghcr.io/volcano-jobflow/jobflow-engine``."""
    return manifest_image().rsplit(":", 1)[0]


def base_tag() -> str:
    digest = hashlib.sha256(f"{DEBIAN_SUITE} {' '.join(BASE_PACKAGES)} {BASE_RECIPE}".encode()).hexdigest()[:12]
    return f"localhost/volcano-jobflow/python-base:{DEBIAN_SUITE}-{digest}"


def apt_mirror() -> str:
    """The Debian mirror apt uses on this machine (deb822 or one-line sources), else deb.debian.org."""
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        text = path.read_text() if path.is_file() else ""
        match = (re.search(r"^URIs:\s*(\S+/debian)/?\s*$", text, re.M)
                 or re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s+", text, re.M))
        if match:
            return match[1]
    return DEFAULT_MIRROR


def _run(command: list[str], what: str) -> None:
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PodmanError(f"{what} failed (`{' '.join(command[:4])} ...`, exit {proc.returncode}):\n"
                          f"{(proc.stdout + proc.stderr)[-3000:]}")


def _debootstrap(tarball: Path, *, log) -> None:
    """Make the base's root filesystem as a tar (step 1 of the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="jobflow-base-", dir=tarball.parent) as scratch:
        root = Path(scratch) / "rootfs"
        mirror = apt_mirror()
        log(f"image: debootstrap {DEBIAN_SUITE} with {', '.join(BASE_PACKAGES)} from {mirror} (once per machine)")
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", DEBIAN_SUITE,
              str(root), mirror], "debootstrap")
        _run(["chroot", str(root), "python3", "-m", "venv", "/opt/venv"], "creating the base's virtual environment")
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (root / cache).glob("*"):
                if entry.is_file():
                    entry.unlink()
        _slim(root)
        partial = tarball.with_suffix(".partial")
        _run(["tar", "-C", str(root), "-cf", str(partial), "."], "packing the base")
        partial.rename(tarball)


def _slim(root: Path) -> None:
    """Leave out what debian:bookworm-slim leaves out (:data:`SLIM_EXCLUDED`), and tell dpkg to, as it does."""
    for excluded in SLIM_EXCLUDED:
        for path in sorted((root / excluded).rglob("*"), reverse=True):
            if path.is_dir() and not path.is_symlink():
                if not any(path.iterdir()):
                    path.rmdir()
            elif not (excluded == "usr/share/doc" and path.name == "copyright"):
                path.unlink()
    config = root / "etc/dpkg/dpkg.cfg.d/slim"
    config.write_text("".join(f"path-exclude /{excluded}/*\n" for excluded in SLIM_EXCLUDED)
                      + "path-include /usr/share/doc/*/copyright\n")


def ensure_base(*, log=print) -> str:
    """The local stand-in for python:3.11-slim in podman's storage, made or imported if missing."""
    tag = base_tag()
    if podman("image", "exists", tag, check=False).returncode == 0:
        return tag
    tarball = cache_root() / "image" / f"{tag.rsplit(':', 1)[1]}.tar"
    tarball.parent.mkdir(parents=True, exist_ok=True)
    if not tarball.exists():
        _debootstrap(tarball, log=log)
    podman("import", "--change", "ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "--change", "ENV LANG=C.UTF-8", "--change", 'CMD ["python3"]', str(tarball), tag)
    return tag


def _context_files() -> list[Path]:
    """The files the build context holds: the .dockerignore's allow-list (``*`` then ``!path`` lines)."""
    allowed = [line[1:].strip("/") for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.startswith("!")]
    files: list[Path] = []
    for entry in allowed:
        path = REPO / entry
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [p for p in candidates if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return files


def build_digest(base: str) -> str:
    """A digest of everything the build reads: the Dockerfile, the .dockerignore, the context, the base and the
    commit its labels name."""
    digest = hashlib.sha256()
    base_id = podman("image", "inspect", "--format", "{{.Id}}", base).stdout.strip()
    digest.update(base_id + revision().encode())
    for path in [REPO / "Dockerfile", REPO / ".dockerignore", *_context_files()]:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def built_digest(image: str) -> str | None:
    proc = podman("image", "inspect", "--format", f'{{{{index .Labels "{DIGEST_LABEL}"}}}}', image, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def build(image: str, *, base: str, digest: str) -> None:
    """Step 2 of the module docstring; the image's labels say its version (pyproject.toml's) and commit."""
    volumes = ["-v", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro"] if HOST_CA_BUNDLE.exists() else []
    labels = ["--build-arg", f"VERSION={project_version()}", "--build-arg", f"REVISION={revision()}"]
    podman("build", "--pull=never", "--no-cache", "--network=host", *volumes, "--build-arg", f"BASE={base}", *labels,
           "--label", f"{DIGEST_LABEL}={digest}", "--tag", image, "--file", str(REPO / "Dockerfile"), str(REPO),
           timeout=1200)


def project_version() -> str:
    """``version`` of pyproject.toml: the one source of the version."""
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def revision() -> str:
    """The commit the tree was checked out at (``unknown`` outside a git checkout)."""
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False)
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def prune_superseded(*, log=print) -> None:
    """Step 4 of the module docstring. Without ``--all`` podman prunes only dangling (untagged) images, and not one
    a container uses; the label keeps it to images this module built (both stages carry it), so the base, the pause
    image, Knative's images and anyone else's stay. A failure is reported, not raised: the new image is good."""
    proc = podman("image", "prune", "--force", "--filter", f"label={DIGEST_LABEL}", check=False)
    if proc.returncode != 0:
        log(f"image: could not remove the untagged images of earlier builds (exit {proc.returncode}: "
            f"{proc.stderr.decode(errors='replace').strip()[-500:]}); "
            f"`podman image prune --filter label={DIGEST_LABEL}` removes them")
        return
    removed = proc.stdout.decode().split()
    if removed:
        log(f"image: removed {len(removed)} untagged images of builds, intermediate ones included "
            f"(label {DIGEST_LABEL})")


def image_size(image: str) -> int:
    return int(podman("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())


def ensure_image(*, log=print) -> str:
    """The manifests' image, built from this tree unless an image of exactly this tree is there. Returns its tag."""
    timings: list[str] = []

    def step(name: str, started: float) -> None:
        timings.append(f"{name} {time.monotonic() - started:.1f} s")
        log(f"image: {name}: {time.monotonic() - started:.1f} s")

    if not is_root():
        missing = missing_packages()
        packages = (f" and packages this machine lacks ({', '.join(missing)}: `sudo apt-get install "
                    f"--no-install-recommends {' '.join(missing)}`, or let a run as root install them)"
                    if missing else "")
        raise PodmanError("building the image here needs root (debootstrap, rootful podman, network namespaces)"
                          f"{packages}. Run it as root, or build with Docker: docker build -t {manifest_image()} .")
    started = time.monotonic()
    ensure_tools(log=log)
    step("tools (podman, buildah, debootstrap, runc)", started)
    started = time.monotonic()
    base = ensure_base(log=log)
    step(f"base {base}", started)
    image = manifest_image()
    digest = build_digest(base)
    if built_digest(image) == digest:
        log(f"image: {image} is up to date (build digest {digest}); nothing to build")
        return image
    started = time.monotonic()
    log(f"image: building {image} from Dockerfile (BASE={base})")
    build(image, base=base, digest=digest)
    step(f"build {image}", started)
    prune_superseded(log=log)
    log(f"image: {image} ready, {image_size(image) / 1e6:.0f} MB ({'; '.join(timings)})")
    return image


def ensure_image_of(commit: str, *, log=print) -> str:
    """The image of an earlier commit (the upgrade tests' old version), built once from that commit's own
    Dockerfile and sources (``git archive``, so no worktree is left behind) and tagged ``<repository>:<version>-
    <commit>``. Its Dockerfile may install from PyPI: the build runs with the host's network."""
    resolved = subprocess.run(["git", "rev-parse", "--verify", f"{commit}^{{commit}}"], cwd=REPO, capture_output=True,
                              text=True, check=False)
    if resolved.returncode != 0:
        raise PodmanError(f"commit {commit} is not in this clone ({resolved.stderr.strip()}): the upgrade tests build "
                          f"the image of that release from it; fetch the whole history (git fetch --unshallow)")
    full = resolved.stdout.strip()
    tag = f"{repository()}:{_version_at(full)}-{full[:7]}"
    if podman("image", "exists", tag, check=False).returncode == 0:
        return tag
    base = ensure_base(log=log)
    source = cache_root() / "image" / f"source-{full[:12]}"
    shutil.rmtree(source, ignore_errors=True)
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", full], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    log(f"image: building {tag} from commit {full[:12]}'s Dockerfile")
    volumes = ["-v", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro"] if HOST_CA_BUNDLE.exists() else []
    try:
        podman("build", "--pull=never", "--no-cache", "--network=host", *volumes, "--build-arg", f"BASE={base}",
               "--label", f"{DIGEST_LABEL}=commit-{full[:12]}", "--tag", tag, "--file", str(source / "Dockerfile"),
               str(source), timeout=1800)
    finally:
        shutil.rmtree(source, ignore_errors=True)
    return tag


def _version_at(commit: str) -> str:
    text = subprocess.run(["git", "show", f"{commit}:pyproject.toml"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout
    return tomllib.loads(text)["project"]["version"]


def main() -> int:
    try:
        ensure_image()
    except PodmanError as error:
        print(f"image: {error}", file=sys.stderr)
        return 1
    if shutil.which("podman"):
        print(f"image: run it with `CONTAINERS_CONF={environment()['CONTAINERS_CONF']} podman run ...`; "
              "push it with `podman push` (docs/install.md#the-image)")
    return 0
