"""The key snapshots are signed with, shared by the event source (which signs) and the handler (which checks).

The contents of ``SNAPSHOT_KEY_FILE`` (a mounted Secret's key, optional: no file, no key), else ``SNAPSHOT_KEY``;
none: no snapshot is ever believed, or sent, and every reconcile reads the API server
(:mod:`jobflow_core.routing.snapshots`).
"""

from collections.abc import Mapping


def snapshot_key(environ: Mapping[str, str]) -> bytes | None:
    """The key ``environ`` names (see the module docstring), or None."""
    path = environ.get("SNAPSHOT_KEY_FILE")
    if path:
        try:
            with open(path, "rb") as file:
                return file.read().strip() or None
        except FileNotFoundError:
            return None
    return environ.get("SNAPSHOT_KEY", "").encode() or None
