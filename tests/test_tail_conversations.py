"""`mcptape tail --session` given a conversation: it follows the conversation as it grows.

In process: the reader, the follower and the printer `tail` runs, over a real SQLite
store that the test writes to between polls, as replicas would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mcptape.cli.main import cli
from mcptape.cli.tail import Printer, _following
from mcptape.store import Store
from mcptape.view.filters import ItemFilter
from mcptape.view.reader import FeedReader
from mcptape.wire.frame import Frame
from tests.helpers.conversations import CLIENT, MODERN, SHARED, TRACED, Conversations

T1 = 1_800_000_100.0


class Recorder:
    """Writes frames into sessions, numbering each session's frames after what it holds."""

    def __init__(self, store: Store) -> None:
        self.writer = store.writer()
        self.seqs: dict[str, int] = {}
        with store.engine.connect() as conn:
            for sid, top in conn.exec_driver_sql("select session_id, max(seq) from frames group by 1"):
                self.seqs[sid] = top
        self.t = T1

    def send(self, session: str, direction: str, **message: Any) -> None:
        self.seqs[session] = self.seqs.get(session, 0) + 1
        self.t += 0.01
        body = orjson.dumps({"jsonrpc": "2.0", **message})
        self.writer.add_frame(session, self.seqs[session], Frame(body, direction, None, self.t))  # type: ignore[arg-type]

    def stderr(self, session: str, text: str) -> None:
        self.t += 0.01
        self.writer.add_event(session, "stderr", text, ts=self.t)


def shown(printer: Printer, reader: FeedReader) -> list[dict[str, Any]]:
    found = reader.poll()
    return [orjson.loads(line) for line in printer.lines(found, reader.sessions)]


def test_a_shared_conversation_is_followed_into_a_replica_that_joins_later(
    conversations_store: Store, conversations: Conversations
) -> None:
    following = _following(conversations_store, (SHARED[:10],))
    reader = FeedReader(
        conversations_store, session_ids=None if following.everything_read else following.session_ids
    )
    printer = Printer(ItemFilter.build(), True, following)
    rec = Recorder(conversations_store)
    late = rec.writer.create_session(mode="proxy", replica="c", conversation_id=SHARED, started_at=T1)
    stranger = rec.writer.create_session(mode="proxy", replica="c", started_at=T1)
    for session, rpc in ((late, 7), (stranger, 7), (conversations.shared_a, 9)):
        rec.send(session, "c2s", id=rpc, method="tools/call", params={"name": "read_file"})
        rec.send(session, "s2c", id=rpc, result={"content": []})
    rec.stderr(late, "replica c: reading")
    rec.writer.flush()
    items = shown(printer, reader)
    assert sorted((i["type"], i["session_id"], i["rpc_id"]) for i in items) == sorted(
        [("exchange", late, "7"), ("exchange", conversations.shared_a, "9"), ("event", late, None)]
    )
    rec.writer.close()
    reader.close()


def test_a_trace_is_followed_across_replicas_through_states_and_tasks(
    conversations_store: Store, conversations: Conversations
) -> None:
    rec = Recorder(conversations_store)
    pa, pb = conversations.pool_a, conversations.pool_b
    # In flight when tail starts: a retry of the trace's round S1, answered once tail runs.
    rec.send(
        pb, "c2s", id=9, method="tools/call", params={"name": "book", "requestState": "S1", "_meta": MODERN}
    )
    rec.writer.flush()
    following = _following(conversations_store, (conversations.trace,))
    assert following.everything_read
    reader = FeedReader(conversations_store, meta=True)
    printer = Printer(ItemFilter.build(), True, following)
    rec.send(pb, "s2c", id=9, result={"resultType": "complete", "content": []})
    # A poll of the task the trace started before tail did, on the other replica.
    rec.send(pb, "c2s", id=10, method="tasks/result", params={"taskId": "K1", "_meta": MODERN})
    rec.stderr(pb, "pool b: fetching K1")
    rec.send(pb, "s2c", id=10, result={"resultType": "complete", "content": []})
    rec.stderr(pb, "pool b: idle")  # no exchange of the trace running: not its line
    # Another client on the same pool sessions, and a new call of the same trace.
    rec.send(pa, "c2s", id=11, method="tools/call", params={"name": "other", "_meta": CLIENT})
    rec.send(pa, "s2c", id=11, result={"content": []})
    rec.send(pa, "c2s", id=12, method="tools/call", params={"name": "pay", "_meta": TRACED})
    rec.send(
        pa, "s2c", id=12, result={"resultType": "input_required", "requestState": "S2", "inputRequests": {}}
    )
    rec.writer.flush()
    first = shown(printer, reader)
    assert [(i["session_id"], i["rpc_id"]) for i in first if i["type"] == "exchange"] == [
        (pb, "9"),
        (pb, "10"),
        (pa, "12"),
    ]
    assert [i["detail"] for i in first if i["type"] == "event"] == ["pool b: fetching K1"]
    # The retry of round S2 lands on replica b; then an unrelated retry of a state nobody minted.
    rec.send(
        pb, "c2s", id=13, method="tools/call", params={"name": "pay", "requestState": "S2", "_meta": MODERN}
    )
    rec.send(pb, "s2c", id=13, result={"resultType": "complete", "content": []})
    rec.send(
        pb, "c2s", id=14, method="tools/call", params={"name": "x", "requestState": "S404", "_meta": MODERN}
    )
    rec.send(pb, "s2c", id=14, result={"resultType": "complete", "content": []})
    rec.writer.flush()
    second = shown(printer, reader)
    assert [(i["session_id"], i["rpc_id"]) for i in second] == [(pb, "13")]
    rec.writer.close()
    reader.close()


def test_a_retry_read_before_the_answer_it_continues_still_joins(
    conversations_store: Store, conversations: Conversations
) -> None:
    """Two replicas' writers flush apart: the retry's row can come before the answer minting its state."""
    following = _following(conversations_store, (conversations.trace,))
    reader = FeedReader(conversations_store, meta=True)
    printer = Printer(ItemFilter.build(), True, following)
    rec = Recorder(conversations_store)
    pa, pb = conversations.pool_a, conversations.pool_b
    rec.send(pa, "c2s", id=20, method="tools/call", params={"name": "pay", "_meta": TRACED})
    rec.send(
        pb, "c2s", id=21, method="tools/call", params={"name": "pay", "requestState": "S3", "_meta": MODERN}
    )
    rec.send(
        pa, "s2c", id=20, result={"resultType": "input_required", "requestState": "S3", "inputRequests": {}}
    )
    rec.send(pb, "s2c", id=21, result={"resultType": "complete", "content": []})
    rec.writer.flush()
    assert [(i["session_id"], i["rpc_id"]) for i in shown(printer, reader)] == [(pa, "20"), (pb, "21")]
    rec.writer.close()
    reader.close()


def test_tail_from_the_start_shows_only_the_conversations_exchanges(
    conversations_store: Store, conversations: Conversations
) -> None:
    following = _following(conversations_store, (conversations.client,))
    reader = FeedReader(conversations_store, after_frame=0, after_event=0, meta=True)
    printer = Printer(ItemFilter.build(), True, following)
    assert [(i["type"], i["session_id"], i["subject"]) for i in shown(printer, reader)] == [
        ("exchange", conversations.pool_b, "other")
    ]
    reader.close()


def test_tail_of_an_id_naming_neither_is_a_one_line_error(
    db_path: Path, conversations: Conversations
) -> None:
    result = CliRunner().invoke(cli, ["tail", "--db", str(db_path), "--session", "client-nobody"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        "mcptape: error: no conversation 'client-nobody' in the conversations view; "
        '`mcptape sql "select distinct conversation_id from conversations"` lists them\n'
    )
