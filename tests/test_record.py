"""`mcptape record` end to end: real processes on real pipes, a real SQLite file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from tests.helpers.db import query
from tests.helpers.paths import MCPTAPE
from tests.helpers.recording import RAW_ECHO, Recording, frame_bytes
from tests.helpers.signalling import catching, serve_fifo

pytestmark = pytest.mark.slow

ODD_FRAMES = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"b":2,"a":1}}}',
    b'{ "jsonrpc" : "2.0", "id" : "1", "method" : "ping" }',  # spaces, string id
    b'{"id":2,"jsonrpc":"2.0","method":"future/method","params":{"unknownField":[1e400,-0.0,12345678901234567890]}}',
    '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"héllo ✓ 🎉"}}'.encode(),
    b'{"jsonrpc":"2.0","id":3,"method":"with/cr"}\r',
    b'[{"jsonrpc":"2.0","id":4,"method":"a"},{"jsonrpc":"2.0","method":"b"}]',
    b"this is not json",
    b'{"jsonrpc":"2.0","id":5,"method":"bad utf8","params":"\xff\xfe"}',
    b"",
]


def test_frames_are_forwarded_byte_for_byte_and_recorded_exactly(db_path: Path) -> None:
    rec = Recording(db_path, RAW_ECHO)
    try:
        for frame in ODD_FRAMES:
            rec.send(frame + b"\n")
            assert rec.recv() == frame + b"\n"
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        rec.kill()
    rows = query(db_path, "select direction, origin, text, raw, size from frames order by seq")
    assert len(rows) == 2 * len(ODD_FRAMES)
    sent = [r for r in rows if r[0] == "c2s"]
    echoed = [r for r in rows if r[0] == "s2c"]
    assert [frame_bytes(r[2], r[3]) for r in sent] == ODD_FRAMES
    assert [frame_bytes(r[2], r[3]) for r in echoed] == ODD_FRAMES
    assert [r[4] for r in sent] == [len(f) for f in ODD_FRAMES]
    assert {r[1] for r in sent} == {"client"} and {r[1] for r in echoed} == {"server"}


def test_kinds_methods_and_ids_are_recorded(db_path: Path) -> None:
    rec = Recording(db_path, RAW_ECHO)
    try:
        for frame in ODD_FRAMES:
            rec.send(frame + b"\n")
            rec.recv()
        rec.close_stdin()
        rec.wait()
    finally:
        rec.kill()
    rows = query(db_path, "select kind, method, rpc_id from frames where direction='c2s' order by seq")
    assert rows == [
        ("request", "tools/call", "1"),
        ("request", "ping", '"1"'),
        ("request", "future/method", "2"),
        ("notification", "notifications/message", None),
        ("request", "with/cr", "3"),
        ("batch", None, None),
        ("malformed", None, None),
        ("request", "bad utf8", "5"),  # classified on a lossy decode, as servers read it
        ("malformed", None, None),
    ]


def test_malformed_line_is_forwarded_and_recorded(db_path: Path) -> None:
    rec = Recording(db_path, RAW_ECHO)
    try:
        rec.send(b"{broken json\n")
        assert rec.recv() == b"{broken json\n"
        rec.close_stdin()
        rec.wait()
    finally:
        rec.kill()
    assert query(db_path, "select direction, kind, text from frames order by seq") == [
        ("c2s", "malformed", "{broken json"),
        ("s2c", "malformed", "{broken json"),
    ]


def test_a_20_mb_frame_passes_and_is_recorded(db_path: Path) -> None:
    payload = b"A" * (20 * 1024 * 1024)
    frame = b'{"jsonrpc":"2.0","id":9,"result":{"blob":"' + payload + b'"}}'
    rec = Recording(db_path, RAW_ECHO)
    try:
        rec.send(frame + b"\n")
        got = rec.recv(timeout=60)
        assert got is not None and len(got) == len(frame) + 1 and got == frame + b"\n"
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        rec.kill()
    rows = query(db_path, "select direction, kind, size, length(text) from frames order by seq")
    assert rows == [("c2s", "response", len(frame), len(frame)), ("s2c", "response", len(frame), len(frame))]
    # Stored as the exact text that was forwarded, both ways, and as text (the views read it as JSON).
    same = query(
        db_path, "select text = ?, typeof(text), raw is null from frames order by seq", frame.decode()
    )
    assert same == [(1, "text", 1), (1, "text", 1)]


def test_burst_of_10000_frames_is_all_recorded(db_path: Path) -> None:
    n = 10_000
    rec = Recording(db_path, RAW_ECHO)
    try:
        burst = b"".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"burst","params":{"i":%d}}\n' % (i, i) for i in range(n)
        )
        rec.send(burst)
        for i in range(n):
            line = rec.recv()
            assert line is not None and orjson.loads(line)["id"] == i
        rec.close_stdin()
        assert rec.wait() == 0
    finally:
        rec.kill()
    assert query(db_path, "select direction, count(*) from frames group by 1 order by 1") == [
        ("c2s", n),
        ("s2c", n),
    ]
    # Per direction, frames are recorded in the order they were sent.
    ids = [r[0] for r in query(db_path, "select rpc_id from frames where direction='c2s' order by seq")]
    assert ids == [str(i) for i in range(n)]
    assert query(db_path, "select count(distinct seq) from frames")[0][0] == 2 * n


def test_upstream_crash_answers_pending_requests_and_closes_the_session(db_path: Path) -> None:
    rec = Recording(db_path, [*RAW_ECHO, "--crash-on", "crash-now", "--exit-code", "3"])
    try:
        # raw_echo echoes a request back as a request, so it never answers one: use a notification.
        rec.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        assert rec.recv() is not None
        rec.send(b'{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"crash-now"}}\n')
        answer = rec.recv()
        assert answer is not None
        error = orjson.loads(answer)
        assert error["id"] == "abc"
        assert error["error"]["code"] == -32000
        assert (
            "exited with status 3 before answering tools/call; its last stderr line: crashing"
            in error["error"]["message"]
        )
        assert "crashing" in error["error"]["message"]
        assert rec.recv() is None  # and then mcptape closes our stdout
        assert rec.wait() == 3
    finally:
        rec.kill()
    status, exit_code, err, ended = query(db_path, "select status, exit_code, error, ended_at from sessions")[
        0
    ]
    assert (status, exit_code) == ("error", 3)
    assert "crashing" in err and ended is not None
    injected = query(db_path, "select origin, kind, rpc_id from frames where direction='s2c' order by seq")
    assert injected[-1] == ("proxy", "error", '"abc"')
    exits = query(db_path, "select text from events where kind='process_exit'")
    assert exits == [("exit status 3",)]


def test_server_stderr_is_recorded_line_by_line_and_copied(db_path: Path) -> None:
    rec = Recording(db_path, [*RAW_ECHO, "--stderr", "3"])
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        rec.recv()
        rec.close_stdin()
        rec.wait()
    finally:
        rec.kill()
    assert query(db_path, "select text from events where kind='stderr' order by id") == [
        ("log line 0",),
        ("log line 1",),
        ("log line 2",),
    ]
    assert b"log line 2\n" in rec.stderr


def test_sigterm_during_traffic_keeps_everything_sent_before_it(db_path: Path) -> None:
    rec = Recording(db_path, RAW_ECHO)
    n = 2000
    try:
        rec.send(b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"m"}\n' % i for i in range(n)))
        for _ in range(n):
            assert rec.recv() is not None
        rec.proc.send_signal(signal.SIGTERM)
        assert rec.wait() == 128 + signal.SIGTERM
    finally:
        rec.kill()
    assert query(db_path, "select count(*) from frames where origin != 'proxy'")[0][0] == 2 * n
    # raw_echo never answers a request (it echoes it back as one): each was still pending,
    # and got mcptape's error when the session was stopped.
    assert query(db_path, "select count(*) from frames where origin = 'proxy' and kind = 'error'")[0][0] == n
    status, ended = query(db_path, "select status, ended_at from sessions")[0]
    assert status == "interrupted" and ended is not None
    assert query(db_path, "select text from events where kind='signal'") == [("SIGTERM",)]


def test_sigint_stops_recording_cleanly(db_path: Path) -> None:
    rec = Recording(db_path, RAW_ECHO)
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"m"}\n')
        rec.recv()
        rec.proc.send_signal(signal.SIGINT)
        assert rec.wait() == 128 + signal.SIGINT
    finally:
        rec.kill()
    assert b"Traceback" not in rec.stderr
    assert query(db_path, "select status from sessions") == [("interrupted",)]


def test_a_signal_while_record_starts_up_stops_the_session_cleanly(db_path: Path, tmp_path: Path) -> None:
    # record reads --config before its heavy imports, the store and the server: a FIFO
    # holds it there, so the signal comes in that window every time. It used to end
    # record by the default action: exit -15, no session row, the frame in the pipe lost.
    fifo = tmp_path / "mcp.json"
    os.mkfifo(fifo)
    config = json.dumps({"mcpServers": {"echo": {"command": RAW_ECHO[0], "args": RAW_ECHO[1:]}}}).encode()
    rec = Recording(db_path, [], "--upstream", "echo", "--config", str(fifo))
    try:
        deadline = time.monotonic() + 30
        while not catching(rec.proc.pid, signal.SIGTERM):
            assert time.monotonic() < deadline and rec.proc.poll() is None
            time.sleep(0.002)
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"m"}\n')
        rec.proc.send_signal(signal.SIGTERM)
        feeder = threading.Thread(target=serve_fifo, args=(fifo, config, rec.proc), daemon=True)
        feeder.start()
        assert rec.wait() == 128 + signal.SIGTERM
        feeder.join(5)
    finally:
        rec.kill()
    assert b"Traceback" not in rec.stderr
    assert query(db_path, "select status, error from sessions") == [("interrupted", "stopped by SIGTERM")]
    assert query(db_path, "select text from events where kind='signal'") == [("SIGTERM",)]


@pytest.mark.parametrize(
    ("server_flags", "last_step"),
    [
        ((), "stdin"),
        (("--ignore-stdin-eof",), "SIGTERM"),
        (("--ignore-stdin-eof", "--ignore-sigterm"), "SIGKILL"),
    ],
)
def test_client_eof_shuts_the_server_down_stdin_then_sigterm_then_sigkill(
    db_path: Path, server_flags: tuple[str, ...], last_step: str
) -> None:
    # The echo leaves request 1 unanswered: --answer-wait bounds the wait for its answer.
    rec = Recording(db_path, [*RAW_ECHO, *server_flags], "--grace", "0.5", "--answer-wait", "0.3")
    try:
        rec.send(b'{"jsonrpc":"2.0","id":1,"method":"m"}\n')
        rec.recv()
        time.sleep(0.2)  # let the server install its signal handling
        rec.close_stdin()
        assert rec.wait(timeout=20) == 0
    finally:
        rec.kill()
    exit_code = query(db_path, "select exit_code from sessions")[0][0]
    expected = {"stdin": 0, "SIGTERM": -signal.SIGTERM, "SIGKILL": -signal.SIGKILL}[last_step]
    assert exit_code == expected
    assert query(db_path, "select status from sessions") == [("closed",)]
    assert query(db_path, "select count(*) from events where kind='client_closed'") == [(1,)]


def test_four_record_processes_write_one_database_at_once(db_path: Path) -> None:
    n = 1500
    recs = [Recording(db_path, RAW_ECHO, "--name", f"s{i}") for i in range(4)]
    try:
        payload = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"m"}\n' % i for i in range(n))
        for rec in recs:
            rec.send(payload)
        for rec in recs:
            for _ in range(n):
                assert rec.recv() is not None
            rec.close_stdin()
        for rec in recs:
            assert rec.wait() == 0
            assert b"locked" not in rec.stderr, rec.stderr.decode()
    finally:
        for rec in recs:
            rec.kill()
    counts = query(
        db_path,
        "select s.name, count(f.id) from sessions s join frames f on f.session_id = s.id group by 1 order by 1",
    )
    assert counts == [(f"s{i}", 2 * n) for i in range(4)]


def test_a_missing_server_command_is_a_one_line_error(db_path: Path) -> None:
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db_path), "--", "/no/such/server-binary", "--flag"],
        input=b"",
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 2
    err = proc.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "/no/such/server-binary" in err[0] and "not found" in err[0]
    status, error = query(db_path, "select status, error from sessions")[0]
    assert status == "error" and "not found" in error


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "give the server's command after --"),
        (("--upstream", "no-such-upstream"), "no-such-upstream"),
        (("--upstream", "demo", "--", "echo"), "not both"),
    ],
)
def test_bad_record_invocations_are_one_line_errors(
    db_path: Path, args: tuple[str, ...], needle: str
) -> None:
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db_path), *args], input=b"", capture_output=True, timeout=30
    )
    assert proc.returncode == 2
    err = proc.stderr.decode().strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_frames_without_final_newline_are_forwarded_without_one(db_path: Path, tmp_path: Path) -> None:
    # A client that writes its last frame without a newline and closes: the bytes pass as they were.
    script = tmp_path / "tail_echo.py"
    script.write_text("import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d)")
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db_path), "--", sys.executable, str(script)],
        input=b'{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","method":"b"}',
        capture_output=True,
        timeout=30,
    )
    assert proc.stdout == b'{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","method":"b"}'
    assert proc.returncode == 0
    rows = query(db_path, "select direction, text from frames where direction = 'c2s' order by seq")
    assert rows == [("c2s", '{"jsonrpc":"2.0","method":"a"}'), ("c2s", '{"jsonrpc":"2.0","method":"b"}')]
    assert query(db_path, "select count(*) from frames where direction = 's2c'") == [(2,)]


def test_database_file_is_private_to_the_user(db_path: Path) -> None:
    rec = Recording(db_path, RAW_ECHO)
    try:
        rec.close_stdin()
        rec.wait()
    finally:
        rec.kill()
    assert os.stat(db_path).st_mode & 0o077 == 0


def test_regular_files_as_stdin_and_stdout_work_too(db_path: Path, tmp_path: Path) -> None:
    # asyncio cannot watch regular files; record falls back to a reader thread and plain writes.
    frames_in = tmp_path / "in.jsonl"
    frames_out = tmp_path / "out.jsonl"
    lines = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"m"}\n' % i for i in range(500))
    frames_in.write_bytes(lines)
    with frames_in.open("rb") as stdin, frames_out.open("wb") as stdout:
        proc = subprocess.run(
            [*MCPTAPE, "record", "--db", str(db_path), "--", *RAW_ECHO],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr.decode()
    assert frames_out.read_bytes() == lines
    assert query(db_path, "select count(*) from frames") == [(1000,)]


def test_ctrl_c_in_a_terminal_ends_recorder_and_server_without_tracebacks(db_path: Path) -> None:
    # A terminal's Ctrl-C signals the whole foreground process group: mcptape and the server.
    proc = subprocess.Popen(
        [*MCPTAPE, "record", "--db", str(db_path), "--", sys.executable, "-m", "mcptape.servers.demo"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        )
        proc.stdin.flush()
        assert b'"result"' in proc.stdout.readline()
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGINT
    assert b"Traceback" not in err
    assert query(db_path, "select status, server_name from sessions") == [("interrupted", "mcptape-demo")]
    assert query(
        db_path, "select count(*) from events where kind = 'stderr' and text like '%Traceback%'"
    ) == [(0,)]


def test_upstream_from_a_wrapped_config_is_recorded_once(db_path: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(
        json.dumps({"mcpServers": {"echo": {"command": RAW_ECHO[0], "args": RAW_ECHO[1:]}}}), encoding="utf-8"
    )
    wrapped = subprocess.run(
        [*MCPTAPE, "wrap", str(config), "--db", str(db_path)], capture_output=True, text=True, timeout=30
    )
    assert wrapped.returncode == 0, wrapped.stderr
    proc = subprocess.run(
        [*MCPTAPE, "record", "--db", str(db_path), "--upstream", "echo", "--config", str(config)],
        input=b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    # One session, whose upstream is the original command, not another mcptape.
    assert query(db_path, "select count(*), min(upstream) like '%raw_echo.py' from sessions") == [(1, 1)]


def test_a_frame_over_64_mib_is_forwarded_whole_and_stored_cut_with_its_size(db_path: Path) -> None:
    payload = b"B" * (70 * 1024 * 1024)
    frame = b'{"jsonrpc":"2.0","id":1,"result":{"blob":"' + payload + b'"}}'
    rec = Recording(db_path, RAW_ECHO)
    try:
        rec.send(frame + b"\n")
        got = rec.recv(timeout=120)
        assert got is not None and len(got) == len(frame) + 1 and got == frame + b"\n"
        rec.close_stdin()
        assert rec.wait(timeout=120) == 0
    finally:
        rec.kill()
    rows = query(db_path, "select direction, kind, size, length(raw), meta from frames order by seq")
    assert [(d, k, s, n) for d, k, s, n, _ in rows] == [
        ("c2s", "response", len(frame), 64 * 1024 * 1024),
        ("s2c", "response", len(frame), 64 * 1024 * 1024),
    ]
    assert all(json.loads(meta)["truncated"] is True for *_, meta in rows)
