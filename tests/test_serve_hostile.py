"""`mcptape serve` (stdio) against a client with unusual ids: integers beyond 64 bits and
floats get their answers with the id exactly as sent, matched or not, alone or in a batch."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import MCPTAPE

pytestmark = pytest.mark.slow

TAPE = [
    ("c2s", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
    (
        "s2c",
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}},
    ),
]
BIG = "99999999999999999999999999"


def _serve(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess[str]:
    """`serve --file` of the tape above, fed ``lines`` on stdin until EOF."""
    tape = tmp_path / "tape.jsonl"
    tape.write_text("".join(json.dumps({"dir": d, "t": 0.0, "frame": json.dumps(m)}) + "\n" for d, m in TAPE))
    return subprocess.run(
        [*MCPTAPE, "serve", "--file", str(tape), "--no-record"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MCPTAPE_DB": str(tmp_path / "x.db")},
    )


def test_ids_beyond_64_bits_and_floats_come_back_exactly_as_sent(tmp_path: Path) -> None:
    requests = [
        f'{{"jsonrpc":"2.0","id":{BIG},"method":"tools/list","params":{{}}}}',  # on the tape
        f'{{"jsonrpc":"2.0","id":-{BIG}1,"method":"ping"}}',
        f'{{"jsonrpc":"2.0","id":{BIG}2,"method":"prompts/list"}}',  # a miss
        '{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
    ]
    done = _serve(tmp_path, requests)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(str(a["id"]) for a in answers) == sorted([BIG, f"-{BIG}1", f"{BIG}2", "1.5"])
    by_id = {str(a["id"]): a for a in answers}
    assert by_id[BIG]["result"]["tools"][0]["name"] == "t"
    assert by_id[f"-{BIG}1"]["result"] == {} and "error" in by_id[f"{BIG}2"]
    # As text too: no float rendering of the integer.
    assert f'"id":{BIG},' in done.stdout and "e+" not in done.stdout


def test_lines_that_are_no_message_get_the_json_rpc_errors_a_server_gives(tmp_path: Path) -> None:
    lines = [
        "not json",
        "[]",
        '"text"',
        "{}",
        '{"jsonrpc":"2.0","id":8}',
        '{"jsonrpc":"2.0","id":9,"method":"ping"}',
    ]
    done = _serve(tmp_path, lines)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    codes = sorted(a["error"]["code"] for a in answers if "error" in a)
    assert codes == [-32700, -32600, -32600, -32600]  # nothing for what may be a broken reply (id 8)
    assert [a["id"] for a in answers if "result" in a] == [9]
