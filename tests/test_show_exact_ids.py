"""`show --json` prints ids and numbers exactly as they were on the wire."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import RAW_ECHO

pytestmark = pytest.mark.slow


def test_show_json_keeps_ids_of_2_64_and_above_exact(db_path: Path) -> None:
    frame = b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping","params":{"n":1.0}}\n'
    subprocess.run(
        [*MCPTAPE, "record", "--db", str(db_path), "--", *RAW_ECHO],
        input=frame,
        capture_output=True,
        check=True,
    )
    out = subprocess.run(
        [*MCPTAPE, "show", "last", "--db", str(db_path), "--json"], capture_output=True, check=True
    ).stdout
    first = out.splitlines()[0]
    assert b'"id":18446744073709551617,"size"' in first
    assert (
        b'"message":{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping","params":{"n":1.0}}' in first
    )
