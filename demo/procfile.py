"""Run the Procfile's processes in the background, and stop the ones a previous run left.

Each line ``name: command`` runs under ``bash -c`` with ``PORT`` and ``KUBECONFIG`` set and the project's virtual
environment first on PATH. PIDs are kept in ``.devcluster/procfile.json`` (with their start times, so a reused PID
is never signalled) and logs go to ``.devcluster/logs/<name>.log``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

from devcluster.processes import Component, free_port, port_taken, start

REPO = Path(__file__).resolve().parent.parent


def read_procfile(path: Path) -> dict[str, str]:
    entries = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, command = line.split(":", 1)
            entries[name.strip()] = command.strip()
    return entries


def stop_previous(root: Path) -> None:
    state = root / "procfile.json"
    if state.exists():
        for component in (Component(**c) for c in json.loads(state.read_text())):
            component.stop()
        state.unlink()


def start_all(root: Path, *, kubeconfig: Path, procfile: Path = REPO / "Procfile") -> tuple[int, list[Component]]:
    """Start every Procfile process; returns (the web PORT, the components)."""
    stop_previous(root)
    port = 8080 if not port_taken(8080) else free_port()  # 8080 when free, so the README's curl works as is
    bin_dir = Path(sys.executable).parent
    # No key of our own: the Procfile names the key file its two processes share (created on the first run).
    env = {**os.environ, "PORT": str(port), "KUBECONFIG": str(kubeconfig), "RESYNC_SECONDS": "60",
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    bash = Path(shutil.which("bash") or "/bin/bash")
    components = [start(name, bash, ["-c", command], log_dir=root / "logs", env=env, cwd=REPO)
                  for name, command in read_procfile(procfile).items()]
    (root / "procfile.json").write_text(json.dumps([asdict(c) for c in components], indent=2) + "\n")
    return port, components
