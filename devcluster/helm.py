"""A real ``helm``, built from its Go module (``gomod/helm``, pinned by ``components.HELM``) into the shared cache on
first use, for the chart's tests and ``make release``. Nothing else needs it, so ``make cluster`` never waits for it.

Every call gets a ``HELM_*`` home of its own under the cache: Helm otherwise reads and writes the user's
``~/.config/helm`` and ``~/.cache/helm`` (repositories, plugins), and a test must not depend on them or change them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from devcluster.build import build_module, cache_root, go_version
from devcluster.components import HELM

REPO = Path(__file__).resolve().parents[1]
CHART = REPO / "charts" / "volcano-jobflow"


def binary(*, log=print) -> Path:
    """The helm binary, built from its pinned module if the cache lacks it (about 3 minutes cold on 2 cores)."""
    return build_module(HELM, go_version(), log=log).path("helm")


def environment(kubeconfig: Path | None = None) -> dict[str, str]:
    """The environment helm runs in: homes of its own, and the cluster ``kubeconfig`` names (or none)."""
    home = cache_root() / "helm-home"
    env = {key: value for key, value in os.environ.items() if not key.startswith("HELM_")}
    env.update(HELM_CONFIG_HOME=str(home / "config"), HELM_CACHE_HOME=str(home / "cache"),
               HELM_DATA_HOME=str(home / "data"))
    env.pop("KUBECONFIG", None)
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(kubeconfig)
    return env


def helm(*args: str, kubeconfig: Path | None = None, check: bool = True,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``helm *args``; with ``check``, a failure raises with helm's own message."""
    result = subprocess.run([str(binary()), *args], capture_output=True, text=True, timeout=timeout,
                            env=environment(kubeconfig))
    if check and result.returncode != 0:
        raise RuntimeError(f"helm {' '.join(args)} failed ({result.returncode}):\n{result.stderr}{result.stdout}")
    return result
