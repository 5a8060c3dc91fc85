"""The read commands when their own output cannot be written: one line, exit status 1,
no traceback (it was an OSError traceback on a full disk)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import record_one_ping

pytestmark = pytest.mark.slow

FULL = Path("/dev/full")


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_one_ping(tmp_path_factory.mktemp("rec") / "t.db")


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full (Linux) to make every write fail with ENOSPC")
@pytest.mark.parametrize(
    "args",
    [
        ("sessions",),
        ("sessions", "--json"),
        ("show", "last"),
        ("show", "last", "--json"),
        ("export", "last"),
        ("sql", "select * from frames"),
        ("sql", "--csv", "select * from frames"),
    ],
)
def test_a_full_disk_under_stdout_is_a_one_line_error(rec: Path, args: tuple[str, ...]) -> None:
    with FULL.open("w") as out:
        proc = subprocess.run(
            [*MCPTAPE, *args, "--db", str(rec)], stdout=out, stderr=subprocess.PIPE, text=True, timeout=60
        )
    assert proc.returncode == 1
    assert proc.stderr == f"mcptape: error: cannot write the output: {os.strerror(28)}\n"


def test_a_reader_that_goes_away_ends_the_command_quietly(rec: Path) -> None:
    proc = subprocess.Popen(
        [*MCPTAPE, "show", "last", "--db", str(rec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    assert proc.wait(60) == 1
    assert proc.stderr.read() == b""
