"""A client that closes its input with requests in flight still gets their answers (`record --answer-wait`).

`echo request | server` prints the answer even when the server takes a while: it sees
the end of its input and finishes what it was asked. Through `mcptape record` the same
must hold, and a server that never answers must not keep mcptape alive for ever.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE, everything_server_cmd
from tests.helpers.recording import INITIALIZE as INIT
from tests.helpers.recording import INITIALIZED, Recording

pytestmark = pytest.mark.slow

# Reads requests, answers none, and outlives its stdin by far (a server stuck on a request).
SILENT = [
    sys.executable,
    "-c",
    "import sys, time\nfor line in sys.stdin: pass\ntime.sleep(60)\n",
]
# server-everything's tool: 1.5 s of work, three times the grace the tests give, so the
# old shutdown (stdin closed, SIGTERM a grace later) stopped the server before it answered.
SLOW = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "trigger-long-running-operation", "arguments": {"duration": 1.5, "steps": 3}},
}


def _lines(*messages: dict[str, object]) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def _by_id(stdout: bytes) -> dict[object, dict[str, object]]:
    out = {}
    for line in stdout.splitlines():
        message = json.loads(line)
        if "id" in message and "method" not in message:
            out[message["id"]] = message
    return out


def _record(db: Path, flags: list[str], *messages: dict[str, object]) -> subprocess.CompletedProcess[bytes]:
    """`mcptape record --db DB FLAGS...` given ``messages`` on stdin, then its end of input."""
    return subprocess.run(
        [*MCPTAPE, "record", "--db", str(db), *flags],
        input=_lines(*messages),
        capture_output=True,
        timeout=60,
    )


def test_a_slow_answer_after_the_clients_eof_reaches_it_as_it_would_directly(tmp_path: Path) -> None:
    server = everything_server_cmd()
    assert server is not None, "server-everything is installed by .ci/run"
    db = tmp_path / "t.db"
    proc = _record(db, ["--grace", "0.5", "--", *server], INIT, INITIALIZED, SLOW)
    answers = _by_id(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    result = answers[1]["result"]
    assert isinstance(result, dict) and "Long running operation completed" in json.dumps(result)
    status, error = query(db, "select status, error from sessions")[0]
    assert status == "closed" and error is None
    # The server exited on its own once it had answered: mcptape stopped nothing.
    exits = query(db, "select data from events where kind = 'process_exit'")
    assert json.loads(exits[0][0])["stopped"] is False
    assert query(db, "select count(*) from frames where direction = 's2c' and rpc_id = '1'") == [(1,)]


def test_a_server_that_never_answers_is_stopped_after_answer_wait_and_the_client_told(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    ask = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "stuck"}}
    started = time.monotonic()
    proc = _record(db, ["--grace", "0.3", "--answer-wait", "0.5", "--", *SILENT], ask)
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert took < 30, "the server's 60 s sleep must not keep mcptape"
    error = _by_id(proc.stdout)[7]["error"]
    assert isinstance(error, dict)
    assert "stopped after the client closed its input" in str(error["message"])
    (text,) = query(db, "select text from events where kind = 'unanswered'")[0]
    assert "1 request(s) unanswered" in text and "silent for 0.5 s" in text
    # The error mcptape wrote in the server's place is recorded as its own.
    assert query(db, "select origin from frames where direction = 's2c' and rpc_id = '7'") == [("proxy",)]


def test_answer_wait_0_keeps_the_old_prompt_shutdown(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    ask = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "stuck"}}
    proc = _record(db, ["--grace", "0.3", "--answer-wait", "0", "--", *SILENT], ask)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"", "nothing is written in the server's place without the wait"
    assert query(db, "select count(*) from events where kind = 'unanswered'") == [(0,)]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_wait_ends_it_at_once(tmp_path: Path, signum: signal.Signals) -> None:
    db = tmp_path / "t.db"
    rec = Recording(db, SILENT, "--grace", "0.3", "--answer-wait", "600")
    try:
        rec.send(_lines({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "stuck"}}))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the request is recorded, so it was forwarded
            try:
                if query(db, "select count(*) from frames")[0][0]:
                    break
            except Exception:  # the store opens in the background
                pass
            time.sleep(0.02)
        rec.close_stdin()
        time.sleep(0.5)  # waiting now, for up to 600 s
        assert rec.proc.poll() is None
        rec.proc.send_signal(signum)
        assert rec.wait(timeout=15) == 128 + signum
    finally:
        rec.kill()
    # The client closed its input first: the signal is how it went on shutting down.
    assert query(db, "select status from sessions") == [("closed",)]
    assert query(db, "select text from events where kind = 'signal'") == [(signum.name,)]
    # Its request got an answer saying why there was none.
    (text,) = query(db, "select text from frames where direction = 's2c' and rpc_id = '3'")[0]
    assert f"was stopped ({signum.name})" in text


def test_a_request_the_client_cancelled_is_not_waited_for(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    ask = {"jsonrpc": "2.0", "id": "q-1", "method": "tools/call", "params": {"name": "stuck"}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "q-1"}}
    started = time.monotonic()
    proc = _record(db, ["--grace", "0.3", "--answer-wait", "600", "--", *SILENT], ask, cancel)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 30, "a cancelled request is answered by nobody: no wait"
    assert proc.stdout == b"", "nor is it answered with an error in the server's place"
    assert query(db, "select count(*) from events where kind = 'unanswered'") == [(0,)]


@pytest.mark.parametrize(("server", "transport"), [("streamableHttp", "http"), ("sse", "sse")])
def test_a_remote_servers_slow_answer_after_the_clients_eof_reaches_it(
    tmp_path: Path, server: str, transport: str
) -> None:
    from tests.helpers.http_servers import everything_http

    db = tmp_path / "t.db"
    with everything_http(server) as url:
        proc = _record(
            db, ["--grace", "0.5", "--url", url, "--transport", transport], INIT, INITIALIZED, SLOW
        )
    assert proc.returncode == 0, proc.stderr
    assert "Long running operation completed" in json.dumps(_by_id(proc.stdout)[1])
    assert query(db, "select status from sessions") == [("closed",)]


def test_a_server_chattering_without_answering_does_not_keep_record_alive(tmp_path: Path) -> None:
    # Log lines every 10 ms, never an answer, never an exit: only answers and progress
    # count as the server working on what the client asked.
    chatter = [
        sys.executable,
        "-c",
        "import sys, time\n"
        "sys.stdin.readline()\n"
        "while True:\n"
        '    sys.stdout.write(\'{"jsonrpc":"2.0","method":"notifications/message",\'\n'
        '                     \'"params":{"level":"info","data":"busy"}}\\n\')\n'
        "    sys.stdout.flush()\n"
        "    time.sleep(0.01)\n",
    ]
    db = tmp_path / "t.db"
    ask = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "stuck"}}
    proc = _record(db, ["--grace", "0.3", "--answer-wait", "0.5", "--", *chatter], ask)
    assert proc.returncode == 0, proc.stderr
    assert "stopped after the client closed its input" in json.dumps(_by_id(proc.stdout)[9])
    assert query(db, "select count(*) from events where kind = 'unanswered'") == [(1,)]
