"""The key snapshots are signed with, shared by the event source (which signs) and the handler (which checks).

Where it comes from, first match wins:

- ``SNAPSHOT_KEY``: the key itself (tests, or a user who manages it elsewhere).
- ``SNAPSHOT_KEY_FILE``: a file holding it. The Procfile names one in the user's config directory; the manifests a
  mounted Secret's key. An absent file in a writable directory is created with a fresh random key by whichever
  program comes first (:func:`create_key_file`: atomic, mode 0600), so ``make demo`` and the Procfile sign
  snapshots without a step of the user's.
- ``SNAPSHOT_KEY_SECRET`` (the event source only, in a cluster): the Secret of that name in ``POD_NAMESPACE`` holds
  it under ``key``; the event source creates the Secret when absent (:func:`ensure_secret`), and the handlers, which
  mount it, take it up when the kubelet writes it into their volume (:class:`FollowedKey`).

The key is never logged. Without one no snapshot is believed, or sent, and every reconcile reads the API server
(:mod:`jobflow_core.routing.snapshots`; counted in ``jobflow_handler_snapshots_total``). Rotating it (docs/install.md)
costs reads, never correctness: until both programs hold the new key, signatures fail and the handler reads.
"""

from __future__ import annotations

import base64
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

KEY_BYTES = 32
FOLLOW_SECONDS = 10.0
"""How often the handler looks at its key file again: a Secret created or rotated after it started is taken up
within the kubelet's sync period (about a minute) plus this."""
SECRET_DATA_KEY = "key"


def read_key_file(path: str | os.PathLike[str]) -> bytes | None:
    """The key in ``path``, or None when there is no such file (yet) or it is empty."""
    try:
        return Path(path).read_bytes().strip() or None
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def create_key_file(path: str | os.PathLike[str]) -> bytes | None:
    """The key in ``path``, writing a fresh one first if the file is absent; None when it cannot be written (a
    read-only Secret volume whose Secret does not exist yet).

    Written to a temporary file and linked into place, so the two programs starting together never read half a key
    and never both win: the one whose link fails reads the other's."""
    target = Path(path)
    try:
        if (key := read_key_file(target)) is not None:
            return key
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".snapshot-key-")  # mode 0600
        try:
            with os.fdopen(handle, "w") as file:
                file.write(secrets.token_hex(KEY_BYTES) + "\n")
            try:
                os.link(temporary, target)
            except FileExistsError:  # the other program was first: its key
                pass
        finally:
            os.unlink(temporary)
        return read_key_file(target)
    except OSError:  # read-only (a Secret volume before its Secret exists), or not a file
        return None


def snapshot_key(environ: Mapping[str, str]) -> bytes | None:
    """The key ``environ`` names (see the module docstring), creating its file if absent, or None."""
    if environ.get("SNAPSHOT_KEY"):
        return environ["SNAPSHOT_KEY"].encode()
    if environ.get("SNAPSHOT_KEY_FILE"):
        return create_key_file(environ["SNAPSHOT_KEY_FILE"])
    return None


class FollowedKey:
    """The handler's key, looked up again at most every :data:`FOLLOW_SECONDS` while it comes from a file: a
    Secret created after the handler started (the event source creates it) or rotated is taken up without a
    restart. Calling it is cheap: one ``stat`` every ten seconds."""

    def __init__(self, environ: Mapping[str, str], *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._file = None if environ.get("SNAPSHOT_KEY") else environ.get("SNAPSHOT_KEY_FILE") or None
        self._key = snapshot_key(environ)
        self._looked, self._seen = clock(), self._stamp()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self._file) if self._file else None
        except OSError:
            return None
        return (found.st_mtime_ns, found.st_ino) if found else None

    def __call__(self) -> bytes | None:
        if self._file is not None and self._clock() - self._looked >= FOLLOW_SECONDS:
            self._looked = self._clock()
            if (stamp := self._stamp()) != self._seen:
                self._seen, self._key = stamp, read_key_file(self._file)
        return self._key


def ensure_secret(rest: Any, namespace: str, name: str) -> bytes:
    """The key in the Secret ``namespace/name``, creating the Secret with a fresh key when it does not exist;
    if another event source created it meanwhile, that one's key. ``rest`` is an :class:`apiclient.rest.Rest`."""
    from apiclient.rest import Exists

    path, params = "/api/v1/namespaces/{namespace}/secrets", {"namespace": namespace}
    found = rest.call("get", "GET", path + "/{name}", {**params, "name": name}, missing_ok=True)
    if found is None:
        key = secrets.token_hex(KEY_BYTES)
        body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": name, "namespace": namespace,
                             "labels": {"app.kubernetes.io/part-of": "volcano-jobflow"}},
                "data": {SECRET_DATA_KEY: base64.b64encode(key.encode()).decode()}}
        try:
            rest.call("create", "POST", path, params, body=body)
            return key.encode()
        except Exists:
            found = rest.call("get", "GET", path + "/{name}", {**params, "name": name})
    encoded = (found.get("data") or {}).get(SECRET_DATA_KEY)
    if not encoded:
        raise ValueError(f"the Secret {namespace}/{name} has no '{SECRET_DATA_KEY}': delete it and restart the "
                         f"event source to have a key generated, or put one under '{SECRET_DATA_KEY}'")
    return base64.b64decode(encoded).strip()
