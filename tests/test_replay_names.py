"""Which recording a name means to `replay`, `serve` and `diff`, and a run that would compare nothing.

A session name means the latest session with it in which the client sent a request: the
README's tour records `demo` again without a client (`record --upstream demo` with no input),
and a replay of that would print "0/0 exchanges match" and pass while testing nothing. A
recording with no exchange at all is refused (exit 2) unless --allow-empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcptape.cli.main import cli
from mcptape.replay.tape import load_session
from mcptape.store import Store, open_store
from mcptape.store.queries import resolve_session
from mcptape.wire.frame import Frame

T0 = 1_800_000_000.0
INITIALIZE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","serverInfo":{"name":"s"}}}'
LOG = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"up"}}'


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(str(tmp_path / "rec.db"))
    yield opened
    opened.close()


def session(store: Store, name: str | None, start: float, frames: list[Frame], mode: str = "record") -> str:
    session_id = store.create_session(mode=mode, name=name)
    store.update_session(session_id, started_at=T0 + start, status="closed", ended_at=T0 + start + 1)
    writer = store.writer()
    for seq, frame in enumerate(frames, 1):
        writer.add_frame(session_id, seq, frame)
    writer.close()
    assert writer.errors == []
    return session_id


def exchange() -> list[Frame]:
    return [Frame(INITIALIZE, "c2s"), Frame(ANSWER, "s2c")]


def test_a_name_means_the_latest_session_with_it_in_which_the_client_sent_a_request(store: Store) -> None:
    recorded = session(store, "demo", 1, exchange())
    session(store, "demo", 2, [])  # recorded again with no client: nothing to compare
    session(store, "demo", 3, [Frame(LOG, "s2c")])  # the server spoke, the client never did
    assert resolve_session(store, "demo", replayable=True)["id"] == recorded
    assert resolve_session(store, "last", replayable=True)["id"] == recorded
    # `show` and `export` still take the latest session of that name, whatever it holds.
    assert resolve_session(store, "demo")["started_at"] == T0 + 3


def test_a_name_whose_sessions_all_lack_requests_means_the_latest_of_them(store: Store) -> None:
    session(store, "idle", 1, [])
    latest = session(store, "idle", 2, [Frame(LOG, "s2c")])
    assert resolve_session(store, "idle", replayable=True)["id"] == latest


def test_a_loaded_recording_says_its_id_name_mode_and_start(store: Store) -> None:
    recorded = session(store, "demo", 1, exchange(), mode="call")
    session(store, "demo", 2, [])
    tape = load_session(store, "demo")
    assert tape.session_id == recorded
    assert tape.source.startswith(f"session {recorded[:12]} (demo, call, started ")
    assert len(tape.exchanges) == 1


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_replaying_a_recording_with_no_exchange_is_refused_unless_allowed(
    store: Store, tmp_path: Path
) -> None:
    empty = session(store, "idle", 1, [Frame(LOG, "s2c")])
    db = str(tmp_path / "rec.db")
    code, out = run("replay", empty[:12], "--db", db, "--", "no-such-server-is-started")
    assert code == 2
    assert f"error: session {empty[:12]} (idle, record, started " in out
    assert "holds no exchange to compare (its client sent no request)" in out
    assert "--allow-empty" in out


def test_diff_of_recordings_with_no_exchange_is_refused_unless_allowed(store: Store, tmp_path: Path) -> None:
    session(store, "a", 1, [])
    session(store, "b", 2, [])
    db = str(tmp_path / "rec.db")
    code, out = run("diff", "a", "b", "--db", db)
    assert code == 2
    assert "holds no exchange to compare (the server answered no request)" in out
    code, out = run("diff", "a", "b", "--db", db, "--allow-empty")
    assert code == 0, out
    assert "0 breaking, 0 compatible; 0 answers compared, 0 differ" in out
