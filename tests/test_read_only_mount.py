"""Recordings on a read-only file system (a backup disk, a container's read-only layer).

A WAL database needs its ``-shm`` file even to be read, and SQLite cannot create one on
a read-only mount: `sessions`, `show`, `export` and `sql` said "unable to open database
file" about a recording that was right there. Mounting needs privileges: without them
these tests are skipped, saying why.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import RAW_ECHO, record_one_ping

pytestmark = pytest.mark.slow


@pytest.fixture
def read_only_recording(tmp_path: Path) -> Iterator[Path]:
    """A finished recording on a tmpfs mounted read-only."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not allowed here: {made.stderr.decode().strip()}")
    try:
        db = record_one_ping(mount / "rec.db")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield db
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["sessions"], "closed"),
        (["show", "last"], "ping"),
        (["export", "last"], "ping"),
        (["sql", "select method from frames where seq = 1"], "ping"),
    ],
)
def test_read_commands_read_a_recording_on_a_read_only_mount(
    read_only_recording: Path, args: list[str], says: str
) -> None:
    proc = subprocess.run(
        [*MCPTAPE, *args, "--db", str(read_only_recording)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert says in proc.stdout


def test_record_into_a_recording_on_a_read_only_mount_says_it_is_read_only(read_only_recording: Path) -> None:
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(read_only_recording), "--", *RAW_ECHO],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_one_line_error(proc, "is read-only for you")
