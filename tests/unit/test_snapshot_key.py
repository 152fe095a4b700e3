"""Where the snapshots' key comes from (issue 41): the Procfile's file created once and shared, a read-only Secret
volume that fills later followed by the handler, and ``no_key`` counted when a handler has none yet. The Secret the
event source creates: ``tests/cluster/test_snapshots.py``; the installed pods: ``tests/cluster/test_install.py``."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from apiclient.snapshot_key import FOLLOW_SECONDS, FollowedKey, create_key_file, snapshot_key


def test_an_absent_key_file_is_created_once_private_and_then_read(tmp_path: Path) -> None:
    path = tmp_path / "config" / "volcano-jobflow" / "snapshot-key"

    first = create_key_file(path)

    assert first is not None and len(first) == 64 and int(first, 16) >= 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert create_key_file(path) == first == snapshot_key({"SNAPSHOT_KEY_FILE": str(path)})
    assert [p.name for p in path.parent.iterdir()] == ["snapshot-key"]  # no temporary left behind


def test_two_programs_starting_together_get_the_same_key(tmp_path: Path) -> None:
    path, keys = tmp_path / "snapshot-key", []
    start = threading.Barrier(8)

    def program() -> None:
        start.wait()
        keys.append(create_key_file(path))

    threads = [threading.Thread(target=program) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(set(keys)) == 1 and keys[0] is not None


def test_a_secret_volume_without_its_secret_gives_no_key_and_writes_nothing(tmp_path: Path) -> None:
    """Where the file cannot be made (here its directory is a file; in a pod, a read-only volume)."""
    volume = tmp_path / "snapshot-key"
    volume.write_text("")

    assert snapshot_key({"SNAPSHOT_KEY_FILE": str(volume / "key")}) is None
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot-key"]


def test_the_key_itself_wins_and_nothing_configured_is_no_key(tmp_path: Path) -> None:
    assert snapshot_key({"SNAPSHOT_KEY": "abc", "SNAPSHOT_KEY_FILE": str(tmp_path / "k")}) == b"abc"
    assert not (tmp_path / "k").exists()
    assert snapshot_key({}) is None


def test_the_handler_takes_up_a_key_written_after_it_started_and_a_rotated_one(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    path = volume / "key"
    path.mkdir()  # stands for the kubelet's empty volume: the file cannot be created there
    now = [0.0]
    followed = FollowedKey({"SNAPSHOT_KEY_FILE": str(path)}, clock=lambda: now[0])
    assert followed() is None

    path.rmdir()
    path.write_bytes(b"the secret's key\n")  # the kubelet writes the Secret
    assert followed() is None  # not looked at again yet
    now[0] += FOLLOW_SECONDS
    assert followed() == b"the secret's key"

    replacement = volume / "new"
    replacement.write_bytes(b"rotated")
    replacement.replace(path)  # the kubelet's atomic swap
    now[0] += FOLLOW_SECONDS
    assert followed() == b"rotated"


def test_a_key_given_as_such_is_not_followed() -> None:
    now = [0.0]
    followed = FollowedKey({"SNAPSHOT_KEY": "fixed"}, clock=lambda: now[0])
    now[0] += 10 * FOLLOW_SECONDS

    assert followed() == b"fixed"
