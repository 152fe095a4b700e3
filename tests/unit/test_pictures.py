"""The documentation's pictures of the dashboard stay true: each records the digest of the pages and scripts it was
made from (``tests/pictures.py``), and the digest of the working tree must be that one."""

from __future__ import annotations

import shutil
import struct
import zlib
from io import BytesIO
from pathlib import Path

import pytest

from pictures import DIGEST_KEY, IMAGES, PICTURES, REPO, NotAPng, dashboard_digest, texts, with_text

DOCS = REPO / "docs" / "dashboard.md"


def tiny_png() -> bytes:
    """A valid 1x1 grey PNG, written by hand (the same chunk layout Chromium's screenshots have)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\x80"))
            + chunk(b"IEND", b""))


@pytest.mark.parametrize("name", PICTURES)
def test_each_picture_was_made_from_the_dashboard_pages_and_scripts_as_they_are_now(name: str) -> None:
    path = IMAGES / name
    assert path.exists(), f"docs/images/{name} is missing: run `make screenshots` (it writes every picture)"
    recorded = texts(path.read_bytes()).get(DIGEST_KEY)
    assert recorded == dashboard_digest(), (
        f"docs/images/{name} shows the dashboard's pages and scripts (dashboard/templates, dashboard/static) as they "
        f"were at digest {recorded or '(none recorded)'}, not as they are now ({dashboard_digest()}): run "
        "`make screenshots` to make the pictures again, look at them, and commit them with the change")


@pytest.mark.parametrize("name", PICTURES)
def test_the_dashboard_page_shows_each_picture(name: str) -> None:
    assert f"](images/{name})" in DOCS.read_text(), f"docs/dashboard.md does not show images/{name}"


def test_a_text_chunk_written_by_hand_is_a_valid_png_chunk_that_pillow_reads() -> None:
    from PIL import Image

    png = with_text(tiny_png(), key=DIGEST_KEY, value="abc123")
    Image.open(BytesIO(png)).verify()  # checks every chunk's CRC
    image = Image.open(BytesIO(png))
    image.load()
    assert image.text == {DIGEST_KEY: "abc123"} and image.size == (1, 1)


def test_writing_the_digest_again_replaces_it_and_keeps_other_texts() -> None:
    png = with_text(with_text(tiny_png(), key="Software", value="Chromium"), key=DIGEST_KEY, value="old")
    again = with_text(png, key=DIGEST_KEY, value="new")
    assert texts(again) == {"Software": "Chromium", DIGEST_KEY: "new"}
    assert again.count(b"tEXt") == 2 and again.endswith(b"IEND\xaeB`\x82")


def test_what_is_not_a_png_is_refused_saying_to_make_it_again() -> None:
    with pytest.raises(NotAPng, match="make screenshots"):
        texts(b"<html>not a picture</html>")
    with pytest.raises(NotAPng, match="cut short"):
        texts(tiny_png()[:-6])


def copy_of_the_dashboard(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "dashboard", tmp_path / "dashboard", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_the_digest_changes_when_a_page_or_a_script_changes(tmp_path: Path) -> None:
    root = copy_of_the_dashboard(tmp_path)
    before = dashboard_digest(root)
    assert before == dashboard_digest(REPO)  # it depends on the files' contents and names, not where they are
    script = root / "dashboard" / "static" / "dashboard.js"
    script.write_text(script.read_text() + "\n// a change\n")
    after_script = dashboard_digest(root)
    page = root / "dashboard" / "templates" / "base.html"
    page.write_text(page.read_text().replace("<", "< ", 1))
    assert len({before, after_script, dashboard_digest(root)}) == 3


def test_the_digest_ignores_the_python_behind_the_views_and_line_endings(tmp_path: Path) -> None:
    root = copy_of_the_dashboard(tmp_path)
    before = dashboard_digest(root)
    views = root / "dashboard" / "views.py"
    views.write_text(views.read_text() + "\n# a refactor\n")
    style = root / "dashboard" / "static" / "dashboard.css"
    style.write_bytes(style.read_bytes().replace(b"\n", b"\r\n"))
    assert dashboard_digest(root) == before
