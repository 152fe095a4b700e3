"""Show a JobFlow's progress in the terminal, one line whenever something changes, until it ends."""

from __future__ import annotations

import time
from collections.abc import Callable

from jobflow_core.vocabulary.naming import job_name

FINAL_PHASES = ("Succeed", "Failed")


def describe(flow: dict) -> str:
    """``Running 2/5  a:Completed b:Running c:waiting(b) ...``: the phase, the progress, each flow's state."""
    status = flow.get("status") or {}
    state = status.get("state") or {}
    jobs = {record["name"]: record.get("state") or "Created" for record in status.get("jobStatusList") or []}
    waiting = {w["name"]: w.get("waitingFor") or [] for w in status.get("waitingFlows") or []}
    skipped = {s["name"] for s in status.get("skippedFlows") or []}
    parts = []
    for spec in (flow.get("spec") or {}).get("flows") or []:
        name = spec["name"]
        job = job_name(jobflow=flow["metadata"]["name"], flow=name)
        if job in jobs:
            parts.append(f"{name}:{jobs[job]}")
        elif name in skipped:
            parts.append(f"{name}:Skipped")
        else:
            parts.append(f"{name}:waiting({','.join(waiting.get(name, []))})")
    line = f"{state.get('phase', 'New'):9} {status.get('progress', '-'):>5}  {' '.join(parts)}"
    if state.get("message"):
        line += f"\n          {state['reason']}: {state['message']}"
    return line


def follow(read: Callable[[], dict | None], *, timeout: float, out: Callable[[str], None] = print) -> str | None:
    """Print a line per change until the JobFlow ends (or ``timeout``); returns its final phase."""
    started = time.monotonic()
    last = None
    phase = None
    while time.monotonic() - started < timeout:
        flow = read()
        if flow is not None:
            line = describe(flow)
            if line != last:
                out(f"[{time.monotonic() - started:6.1f}s] {line}")
                last = line
            phase = ((flow.get("status") or {}).get("state") or {}).get("phase")
            if phase in FINAL_PHASES:
                return phase
        time.sleep(0.25)
    return phase
