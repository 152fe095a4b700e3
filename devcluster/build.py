"""Build the control-plane binaries once, into a cache outside the repository, and reuse them.

The cache key of a module is a hash of its go.mod, go.sum, link flags and the Go version, so a binary is rebuilt
exactly when a pinned version (or the toolchain) changes. Layout::

    ~/.cache/volcano-jobflow/            (or $JOBFLOW_CACHE)
        bin/<module>-<key>/<binary>      finished binaries, plus a BUILT marker written last
        work/<module>-<key>/             the throwaway module the go command builds in

A half-finished build never counts as done: the marker is written only after every binary of the module linked.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from devcluster.components import MODULES, GoModule

MINIMUM_GO = (1, 26)
MARKER = "BUILT"


class BuildError(RuntimeError):
    """A binary could not be built; the message says which and what to do."""


def cache_root() -> Path:
    return Path(os.environ.get("JOBFLOW_CACHE", Path.home() / ".cache" / "volcano-jobflow"))


def go_environment() -> dict[str, str]:
    """The environment every go command runs in: no toolchain download, static binaries, no inherited GOFLAGS."""
    env = dict(os.environ)
    env.update(GOTOOLCHAIN="local", CGO_ENABLED="0", GOFLAGS="")
    return env


def go_version() -> str:
    """``go1.26.8``; raises BuildError with what to do when Go is missing or too old."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "the `go` command is not on PATH. Install Go >= 1.26 (https://go.dev/dl/) and put its bin directory "
            "on PATH, then run `make cluster` again."
        )
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, env=go_environment())
    version = out.stdout.strip()
    match = re.match(r"go(\d+)\.(\d+)", version)
    if out.returncode != 0 or match is None:
        raise BuildError(f"`go env GOVERSION` failed ({out.stderr.strip() or version!r}); is Go installed correctly?")
    if (int(match[1]), int(match[2])) < MINIMUM_GO:
        raise BuildError(f"{version} is too old: kwok {MODULES[-1].upstream} needs Go >= 1.26. Upgrade Go.")
    return version


def cache_key(module: GoModule, toolchain: str) -> str:
    digest = hashlib.sha256()
    for part in (module.directory / "go.mod", module.directory / "go.sum", *module.sources):
        digest.update(str(part.relative_to(module.directory)).encode())
        digest.update(part.read_bytes())
    digest.update(module.ldflags.encode())
    digest.update(repr(module.patches).encode())
    digest.update(toolchain.encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class BuiltModule:
    module: GoModule
    bin_dir: Path
    seconds: float | None  # None when it came from the cache

    def path(self, binary: str) -> Path:
        return self.bin_dir / binary


def _explain_go_failure(module: GoModule, output: str) -> str:
    tail = "\n".join(output.strip().splitlines()[-25:])
    proxy = go_environment().get("GOPROXY") or "https://proxy.golang.org"
    if re.search(r"dial tcp|no such host|connection refused|i/o timeout|TLS handshake timeout", output):
        hint = (f"the Go module proxy ({proxy}) could not be reached. Check the network or set GOPROXY to a "
                "reachable proxy, then run `make cluster` again.")
    elif re.search(r"403 Forbidden|404 Not Found|410 Gone|not available", output):
        hint = (f"the module proxy ({proxy}) does not serve a pinned module version. See the version notes in "
                "devcluster/components.py for which versions this proxy has.")
    elif "no space left" in output:
        hint = f"the disk is full; the build cache under {cache_root()} and $(go env GOCACHE) need ~6 GB."
    else:
        hint = "the go command failed; its last lines are above."
    return f"building {module.upstream} failed: {hint}\n--- go output (last lines) ---\n{tail}"


def build_module(module: GoModule, toolchain: str, *, log=print) -> BuiltModule:
    key = cache_key(module, toolchain)
    bin_dir = cache_root() / "bin" / f"{module.name}-{key}"
    if (bin_dir / MARKER).exists() and all((bin_dir / b).exists() for b in module.binaries):
        return BuiltModule(module, bin_dir, None)

    work = cache_root() / "work" / f"{module.name}-{key}"
    work.mkdir(parents=True, exist_ok=True)
    for path in (module.directory / "go.mod", module.directory / "go.sum", *module.sources):
        target = work / path.relative_to(module.directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    staging = bin_dir.with_name(bin_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)

    _apply_patches(module, work)
    names = ", ".join(module.binaries)
    log(f"devcluster: building {names} from {module.upstream} (cold builds take minutes on 2 cores)...")
    started = time.monotonic()
    for binary, package in module.binaries.items():
        command = ["go", "build", "-trimpath", "-ldflags", module.ldflags, "-o", str(staging / binary),
                   package]
        proc = subprocess.run(command, cwd=work, env=go_environment(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(_explain_go_failure(module, proc.stdout + proc.stderr))
    (staging / MARKER).write_text(f"{module.upstream}\n{toolchain}\n")
    shutil.rmtree(bin_dir, ignore_errors=True)
    staging.rename(bin_dir)
    seconds = time.monotonic() - started
    log(f"devcluster: built {names} in {seconds:.0f} s -> {bin_dir}")
    return BuiltModule(module, bin_dir, seconds)


def _apply_patches(module: GoModule, work: Path) -> None:
    """Build against patched copies of the upstream modules that ``module.patches`` edit: each is copied out of the
    module cache into ``work/patched/`` (the cache is read-only, and ``go build -overlay`` refuses files in it),
    edited there, and put in place with a ``replace`` line in the work module's go.mod."""
    replaced: dict[str, Path] = {}
    for patch in module.patches:
        if patch.module not in replaced:
            copy = work / "patched" / patch.module
            _copy_writable(_module_dir(work, patch.module), copy)
            replaced[patch.module] = copy
        target = replaced[patch.module] / patch.file
        text = target.read_text()
        for old, new in patch.replace:
            if text.count(old) != 1:
                raise BuildError(f"the source patch for {patch.module}/{patch.file} expects {old!r} exactly once "
                                 f"and found it {text.count(old)} times: the pinned release changed that file. "
                                 "Update the patch in devcluster/components.py to the new text.")
            text = text.replace(old, new)
        target.write_text(text)
        if patch.add:
            shutil.copyfile(work / patch.add, target.parent / f"zz_jobflow_{Path(patch.add).name}")
    with open(work / "go.mod", "a") as go_mod:
        for import_path, copy in replaced.items():
            go_mod.write(f"\nreplace {import_path} => ./{copy.relative_to(work)}\n")


def _copy_writable(source: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    for directory, _, files in os.walk(source):
        into = target / Path(directory).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            shutil.copyfile(Path(directory) / name, into / name)


def _module_dir(work: Path, import_path: str) -> Path:
    proc = subprocess.run(["go", "mod", "download", "-json", import_path], cwd=work, env=go_environment(),
                          capture_output=True, text=True)
    directory = json.loads(proc.stdout or "{}").get("Dir") if proc.returncode == 0 else None
    if not directory:
        raise BuildError(f"could not download {import_path} to patch it: {proc.stderr.strip() or proc.stdout}")
    return Path(directory)


def ensure_binaries(*, log=print) -> dict[str, Path]:
    """Every binary of the control plane, built if missing. Maps binary name to its path."""
    toolchain = go_version()
    paths: dict[str, Path] = {}
    for module in MODULES:
        built = build_module(module, toolchain, log=log)
        paths.update({b: built.path(b) for b in module.binaries})
    return paths


def module_source_dir(module: GoModule, import_path: str) -> Path:
    """Where the module cache holds ``import_path`` (e.g. volcano.sh/volcano, for its CRD YAML files)."""
    work = cache_root() / "work" / f"{module.name}-{cache_key(module, go_version())}"
    proc = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", import_path], cwd=work, env=go_environment(),
                          capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise BuildError(f"could not locate {import_path} in the module cache: {proc.stderr.strip()}")
    return Path(proc.stdout.strip())


def main() -> int:
    try:
        started = time.monotonic()
        paths = ensure_binaries()
    except BuildError as error:
        print(f"devcluster: {error}", file=sys.stderr)
        return 1
    print(f"devcluster: {len(paths)} binaries ready in {time.monotonic() - started:.0f} s")
    return 0
