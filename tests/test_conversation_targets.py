"""A conversation named where a session is expected: resolved once (store.targets), shown by `show`.

A shared ``conversation_id`` (one client session recorded by two gateway replicas) gives
every frame of its sessions; a ``trace-``/``client-`` id of the ``conversations`` view
gives its exchanges' frames only, with the events of their sessions while they ran. An
id that names neither is a one-line error.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mcptape.cli.main import cli
from mcptape.store import Store, open_store
from mcptape.store.queries import AmbiguousSessionError, SessionLookupError
from mcptape.store.targets import resolve_target, target_events, target_frames
from tests.helpers.conversations import SHARED, TRACE, Conversations, build_conversations
from tests.helpers.postgres import private_server


def check_resolution(store: Store, c: Conversations) -> None:
    """What every dialect must give for the sample's names."""
    session = resolve_target(store, "plain")
    assert session.conversation is None and session.session_ids == [c.plain]
    shared = resolve_target(store, SHARED)
    assert shared.conversation == SHARED and shared.session_ids == [c.shared_a, c.shared_b]
    assert shared.seqs is None  # every frame of both replicas' rows
    assert resolve_target(store, SHARED[:8]).conversation == SHARED  # a unique prefix
    assert resolve_target(store, SHARED[:8].upper()).conversation == SHARED  # as session prefixes are
    trace = resolve_target(store, c.trace)
    assert trace.session_ids == [c.pool_a, c.pool_b]
    assert trace.seqs == {c.pool_a: (1, 2, 4, 5), c.pool_b: (3, 4)}  # not the progress note (3), not call #4
    assert trace.span == pytest.approx((1_800_000_001.10, 1_800_000_001.45))
    assert resolve_target(store, f"trace-{TRACE[:10]}").conversation == c.trace
    client = resolve_target(store, c.client)
    assert client.session_ids == [c.pool_b] and client.seqs == {c.pool_b: (1, 2)}
    merged = [(trace.session_ids[i], f.seq) for i, f in target_frames(store, trace)]
    assert merged == [
        (c.pool_a, 1),
        (c.pool_a, 2),
        (c.pool_b, 3),
        (c.pool_b, 4),
        (c.pool_a, 4),
        (c.pool_a, 5),
    ]
    # The pool sessions' stderr while the trace ran, not before or after it.
    assert [e.text for _, e in target_events(store, trace)] == ["pool b: booking"]
    both = [(shared.session_ids[i], f.seq) for i, f in target_frames(store, shared)]
    assert both == [
        (c.shared_a, 1), (c.shared_a, 2), (c.shared_b, 1), (c.shared_b, 2),
        (c.shared_a, 3), (c.shared_a, 4), (c.shared_b, 3), (c.shared_b, 4),
    ]  # fmt: skip
    with pytest.raises(SessionLookupError, match=r"^no session or conversation 'nope' \(expected .*latest: "):
        resolve_target(store, "nope")
    with pytest.raises(SessionLookupError, match=r"^no conversation 'trace-0000' in the conversations view"):
        resolve_target(store, "trace-0000")


def test_a_session_a_shared_conversation_and_stitched_ones_resolve(
    conversations_store: Store, conversations: Conversations
) -> None:
    check_resolution(conversations_store, conversations)


@pytest.mark.slow
def test_the_same_names_resolve_on_postgresql() -> None:
    with private_server() as server:
        url = server.url(server.create_database())
        recorded = build_conversations(url)
        store = open_store(url)
        try:
            check_resolution(store, recorded)
        finally:
            store.close()


def test_a_prefix_of_two_conversations_is_ambiguous_and_a_session_prefix_wins(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "two.db")) as store:
        writer = store.writer()
        one = writer.create_session(mode="proxy", conversation_id="ab" + "1" * 30)
        writer.create_session(mode="proxy", conversation_id="ab" + "2" * 30)
        writer.close()
        with pytest.raises(
            AmbiguousSessionError, match=r"^conversation prefix 'ab' is ambiguous: it matches ab1"
        ):
            resolve_target(store, "ab")
        assert resolve_target(store, "ab1").conversation == "ab" + "1" * 30
        # A session's own id (or prefix) is a session first, as `show` always took it.
        assert resolve_target(store, one[:8]).conversation is None


# -- show ---------------------------------------------------------------------------------


def show(db: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["show", *args, "--db", str(db)], env={"COLUMNS": "200"})


def test_show_merges_a_conversations_sessions_by_time_marking_each_line(
    db_path: Path, conversations: Conversations
) -> None:
    result = show(db_path, SHARED)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    a, b = conversations.shared_a[:6], conversations.shared_b[:6]
    assert lines[0] == f"conversation {SHARED} · 2 sessions"
    assert lines[1].startswith(f"  {a} = session {conversations.shared_a[:12]} · files · proxy · replica a")
    assert lines[2].startswith(f"  {b} = session {conversations.shared_b[:12]} · files · proxy · replica b")
    body = [line.split()[1:5] for line in lines[3:]]
    assert body == [
        [a, "→", "req", "initialize"], [a, "←", "resp", "initialize"],
        [b, "→", "req", "tools/call"], [b, "←", "resp", "tools/call"],
        [a, "→", "req", "tools/call"], [a, "·", "stderr", "replica"], [a, "←", "resp", "tools/call"],
        [b, "→", "req", "tools/call"], [b, "·", "stderr", "replica"], [b, "←", "error", "tools/call"],
    ]  # fmt: skip
    # Both replicas used id 2: each reply is named after its own session's request.
    assert "list:" in lines[9] and "-32602 path is required" in lines[12]
    assert lines[3].startswith(" +0.010s ")  # from the first session's start


def test_show_of_a_trace_shows_its_exchanges_across_replicas_and_nothing_else(
    db_path: Path, conversations: Conversations
) -> None:
    result = show(db_path, conversations.trace[:16])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"conversation {conversations.trace} · 2 sessions · 6 frames of its exchanges"
    body = lines[3:]
    assert [line.split()[2:5] for line in body] == [
        ["→", "req", "tools/call"], ["←", "resp", "tools/call"],
        ["→", "req", "tools/call"], ["·", "stderr", "pool"], ["←", "resp", "tools/call"],
        ["→", "req", "tasks/get"], ["←", "resp", "tasks/get"],
    ]  # fmt: skip
    assert [line.split()[1] for line in body] == [conversations.pool_a[:6]] * 2 + [
        conversations.pool_b[:6]
    ] * 3 + [conversations.pool_a[:6]] * 2
    assert "progress" not in result.output and "other" not in result.output  # other conversations' traffic
    assert body[0].startswith(" +0.000s ")  # from the conversation's first exchange


def test_show_json_of_a_conversation_names_each_frames_session(
    db_path: Path, conversations: Conversations
) -> None:
    result = show(db_path, conversations.client, "--json")
    assert result.exit_code == 0, result.output
    frames = [orjson.loads(line) for line in result.output.splitlines()]
    assert [(f["session_id"], f["seq"], f["kind"]) for f in frames] == [
        (conversations.pool_b, 1, "request"),
        (conversations.pool_b, 2, "response"),
    ]
    session = show(db_path, "plain", "--json")
    assert "session_id" not in orjson.loads(session.output.splitlines()[0])  # a session's output is as it was


def test_show_of_an_id_naming_neither_is_a_one_line_error(
    db_path: Path, conversations: Conversations
) -> None:
    for ref, said in (
        ("trace-ffff", "no conversation 'trace-ffff' in the conversations view"),
        ("no-such-thing", "no session or conversation 'no-such-thing' (expected a session id"),
    ):
        result = show(db_path, ref)
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr.splitlines() == [result.stderr.strip()]  # one line, no traceback
        assert result.stderr.startswith("mcptape: error: ") and said in result.stderr
