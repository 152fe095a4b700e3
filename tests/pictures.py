"""The documentation's pictures of the dashboard, and how a picture knows what it shows.

``make screenshots`` (``tests/cluster/screenshots.py``) writes :data:`PICTURES` into ``docs/images/``. Each PNG
records, in a ``tEXt`` chunk named :data:`DIGEST_KEY`, the digest of the dashboard's pages and scripts it was made
from (:func:`dashboard_digest`): a unit test (``tests/unit/test_pictures.py``) computes the digest of the working
tree and fails when the pages changed and the pictures did not, so the pictures cannot quietly fall behind the
dashboard again (they once missed eight changes).

"Pages and scripts" are what the browser is sent to draw a page: ``dashboard/templates/*`` (the HTML) and
``dashboard/static/*`` (the script, the templates it fills, the style sheet). The Python that computes a view
(``dashboard/views.py``, ``display/``) is left out on purpose: it changes far more often than what a page looks like
(a refactor, a new field nobody draws), and a picture that went stale for it would say so only by its numbers.

Writing the chunk is a few lines of the PNG format (length, type, data, CRC-32), so no image library is needed to
make or check the pictures.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"
DIGEST_KEY = "jobflow-dashboard-digest"
PAGES_AND_SCRIPTS = ("dashboard/templates/*", "dashboard/static/*")
"""What :func:`dashboard_digest` covers, as globs under the repository (see the module's docstring for why)."""

LOGS_PICTURE = "dashboard-logs.png"
"""The logs pane's picture: the only one made on the pod node's cluster (kwok's pods write no logs)."""
PICTURES = ("dashboard-list.png", "dashboard-running.png", "dashboard-succeed.png", "dashboard-gate.png",
            "dashboard-child.png", LOGS_PICTURE)
"""What ``make screenshots`` writes into ``docs/images/``, and the unit test checks."""

SIGNATURE = b"\x89PNG\r\n\x1a\n"


class NotAPng(ValueError):
    """The bytes are not a PNG (or one cut short); the message says which file to make again."""


def dashboard_digest(root: Path = REPO) -> str:
    """SHA-256 over every file of :data:`PAGES_AND_SCRIPTS`, each named by its path (so a rename counts too), with
    line endings made LF (a checkout with CRLF endings draws the same pages)."""
    digest = hashlib.sha256()
    files = sorted({path for pattern in PAGES_AND_SCRIPTS for path in root.glob(pattern) if path.is_file()})
    for path in files:
        content = path.read_bytes().replace(b"\r\n", b"\n")
        name = path.relative_to(root).as_posix().encode()
        digest.update(struct.pack(">I", len(name)) + name + struct.pack(">Q", len(content)) + content)
    return digest.hexdigest()


def _chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """(type, data) of each chunk, in order; checks the signature and that no chunk is cut short."""
    if not png.startswith(SIGNATURE):
        raise NotAPng("not a PNG file (no PNG signature): make it again with `make screenshots`")
    chunks, at = [], len(SIGNATURE)
    while at < len(png):
        if at + 8 > len(png):
            raise NotAPng("a PNG cut short (a chunk header is incomplete): make it again with `make screenshots`")
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        end = at + 8 + length + 4
        if end > len(png):
            raise NotAPng(f"a PNG cut short (chunk {kind!r} is incomplete): make it again with `make screenshots`")
        chunks.append((kind, png[at + 8:at + 8 + length]))
        at = end
    return chunks


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def with_text(png: bytes, *, key: str, value: str) -> bytes:
    """``png`` with a ``tEXt`` chunk ``key`` = ``value`` just before ``IEND``, replacing any of the same key (so a
    picture made again carries one digest). Key and value are Latin-1, as the PNG specification wants."""
    if not 1 <= len(key) <= 79:
        raise ValueError(f"a PNG text key has 1 to 79 characters, not {len(key)}: {key!r}")
    chunks = [(kind, data) for kind, data in _chunks(png)
              if not (kind == b"tEXt" and data.split(b"\0", 1)[0] == key.encode("latin-1"))]
    if not chunks or chunks[-1][0] != b"IEND":
        raise NotAPng("a PNG without its IEND chunk at the end: make it again with `make screenshots`")
    text = _chunk(b"tEXt", key.encode("latin-1") + b"\0" + value.encode("latin-1"))
    return SIGNATURE + b"".join(_chunk(kind, data) for kind, data in chunks[:-1]) + text + _chunk(b"IEND", b"")


def texts(png: bytes) -> dict[str, str]:
    """The ``tEXt`` chunks of ``png``, key -> value."""
    found = {}
    for kind, data in _chunks(png):
        if kind == b"tEXt" and b"\0" in data:
            key, value = data.split(b"\0", 1)
            found[key.decode("latin-1")] = value.decode("latin-1")
    return found
