"""Start the control-plane processes, remember their PIDs, and stop exactly those.

Every process gets its own session (so a Ctrl-C in the terminal that ran ``make cluster`` does not kill it) and
its own log file. A PID alone is not proof of identity (PIDs are reused), so a component is recorded with its
PID *and* its start time from /proc/<pid>/stat; only a process with both is ours to signal. (/proc/<pid>/cmdline is
no good for this: right after exec it can read empty for a moment.)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Component:
    """A running process of the control plane, as recorded in the state file."""

    name: str
    pid: int
    start_ticks: int
    binary: str
    log: str

    def alive(self) -> bool:
        stat = _stat(self.pid)
        return stat is not None and stat[0] != "Z" and stat[1] == self.start_ticks

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = Path(self.log).read_text(errors="replace")
        except OSError:
            return f"(no log at {self.log})"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the process's whole group (it leads its own session, see ``start``; a shell's children go
        too), then SIGKILL after ``timeout``; a no-op when the process is already gone."""
        if not self.alive():
            return
        os.killpg(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return
            time.sleep(0.1)
        os.killpg(self.pid, signal.SIGKILL)
        while self.alive():
            time.sleep(0.05)


def _stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks) of a process, or None when there is no such process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[19])


def start(name: str, binary: Path, args: list[str], *, log_dir: Path, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> Component:
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    with open(log, "ab") as out:
        out.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} {binary} {' '.join(args)}\n".encode())
        out.flush()
        proc = subprocess.Popen([str(binary), *args], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env, cwd=cwd)
    stat = _stat(proc.pid)
    return Component(name=name, pid=proc.pid, start_ticks=stat[1] if stat else -1, binary=str(binary), log=str(log))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False
