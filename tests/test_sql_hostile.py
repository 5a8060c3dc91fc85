"""`mcptape sql` against queries that try to write outside the recording: refused in the
same words as every other write, the file and its directory untouched."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli_errors import assert_one_line_error
from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import record_one_ping

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_one_ping(tmp_path_factory.mktemp("rec") / "t.db")


@pytest.mark.parametrize("query", ["vacuum into '{target}'", "vacuum", "vacuum main into '{target}'"])
def test_vacuum_is_refused_like_every_write_and_creates_no_file(rec: Path, query: str) -> None:
    target = rec.parent / "copy.db"
    before = rec.read_bytes()
    command = [*MCPTAPE, "sql", "--db", str(rec), query.format(target=target)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert_one_line_error(proc, "only reads the recording")
    assert not target.exists()
    assert rec.read_bytes() == before
