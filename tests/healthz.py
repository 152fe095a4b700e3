"""Waiting for ``GET /healthz``: how tests (and benchmarks) know a handler they started is up.

The handler answers ``/healthz`` with 200 once it serves, however it runs (the Procfile's gunicorn, the Deployment's
or the Knative Service's command, the admission webhook's over TLS); a test that starts one polls it before sending
anything. The poll is defined once, here (``tests/unit/test_one_helper_each.py`` fails on a second): what counts as
up (200, nothing else), how often to ask, and what a failure says (the URL, and the server's last words when it died
first).
"""

from __future__ import annotations

import http.client
import ssl
import subprocess
import time
import urllib.request

from devcluster.processes import Component

POLL_SECONDS = 0.05  # a GET on loopback is cheap; a handler that is up is seen at once


def answers_healthz(url: str, *, context: ssl.SSLContext | None = None) -> bool:
    """Whether the server at ``url`` answers ``GET /healthz`` with 200 now (one try, 2 s at most)."""
    return _healthz(url, context=context) is not None


def wait_for_healthz(url: str, *, timeout: float = 30, context: ssl.SSLContext | None = None,
                     server: subprocess.Popen | Component | None = None) -> bytes:
    """Poll ``url``'s ``/healthz`` until it answers 200; the reply's body.

    ``context`` verifies an HTTPS server. ``server``, the process that serves ``url``: if it exits first, the wait
    fails at once with what it said (its stderr, when piped; a Component's log). Fails with AssertionError, so a
    test reads it as its own failure.
    """
    deadline = time.monotonic() + timeout
    while (body := _healthz(url, context=context)) is None:
        if (gone := _exited(server)) is not None:
            raise AssertionError(f"the server of {url} exited before it answered /healthz: {gone}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"{url} did not answer GET /healthz with 200 within {timeout:g} s")
        time.sleep(POLL_SECONDS)
    return body


def _healthz(url: str, *, context: ssl.SSLContext | None) -> bytes | None:
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/healthz", timeout=2, context=context) as reply:
            return reply.read() if reply.status == 200 else None
    except (OSError, http.client.HTTPException):  # refused, reset, timed out, an HTTP error status, half a reply
        return None


def _exited(server: subprocess.Popen | Component | None) -> str | None:
    """None while ``server`` runs (or none is known); else what it left behind."""
    if server is None:
        return None
    if isinstance(server, Component):
        return None if server.alive() else f"{server.name}:\n{server.log_tail()}"
    if server.poll() is None:
        return None
    said = server.stderr.read().decode(errors="replace") if server.stderr else "(its output was not captured)"
    return f"exit code {server.returncode}:\n{said}"
