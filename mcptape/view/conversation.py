"""A conversation's page: the frames of all its sessions on one timeline, as a session's page lays them out.

A conversation (:mod:`mcptape.store.targets`) spans sessions, and seqs repeat across
sessions, so its frames are numbered anew: each frame's place in the conversation (by
time, each session's frames in their own order) stands in for its seq, and a reply's
``req`` points at its request's place. Two more columns say where each frame was
recorded: ``sess`` (an index into ``sessions``) and ``sseq`` (its seq there, which the
frame's own routes take). Everything :mod:`mcptape.view.timeline` computes (latency,
tool bytes, grouped operations) then works across sessions as it does within one: an
``input_required`` round retried on another replica is one operation.

A conversation comes whole (no chunks) and is not live: it is read when the page opens.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection

from mcptape.store.queries import connect
from mcptape.store.targets import Target, target_events
from mcptape.view import timeline
from mcptape.view.data import (
    EVENT_TEXT_MAX,
    frame_rows,
    group_messages,
    laid_groups,
    plain,
    tool_names,
)


def _numbered(index: int, rows: list[timeline.Row]) -> Iterator[tuple[int, timeline.Row]]:
    for row in rows:
        yield index, row


class _Merged:
    """The conversation's frames rows renumbered (see the module docstring), and the way back."""

    def __init__(self, conn: Connection, target: Target) -> None:
        streams = []
        for index, session_id in enumerate(target.session_ids):
            rows = frame_rows(conn, session_id)
            if target.seqs is not None:
                wanted = set(target.seqs.get(session_id, ()))
                rows = [row for row in rows if row[timeline.SEQ] in wanted]
            streams.append(_numbered(index, rows))
        merged = list(heapq.merge(*streams, key=lambda item: (item[1][timeline.TS], item[0])))
        self.place = {(index, row[timeline.SEQ]): n for n, (index, row) in enumerate(merged, 1)}
        self.sess = [index for index, _ in merged]
        self.sseq = [row[timeline.SEQ] for _, row in merged]
        self.rows: list[timeline.Row] = []
        for n, (index, row) in enumerate(merged, 1):
            _, ts, direction, origin, kind, method, rpc_id, size, asked = row
            asked_place = self.place.get((index, asked)) if asked is not None else None
            self.rows.append((n, ts, direction, origin, kind, method, rpc_id, size, asked_place))

    def by_place(self, index: int, found: dict[int, Any]) -> dict[int, Any]:
        """``found`` (keyed by seq in session ``index``) keyed by place in the conversation."""
        return {self.place[(index, seq)]: value for seq, value in found.items() if (index, seq) in self.place}


def conversation_timeline(store: Any, target: Target) -> dict[str, Any]:
    """What a conversation's page draws: its sessions, all its frames and its events."""
    from mcptape.store.describe import session_label

    start = target.started_at
    with connect(store) as conn:
        sessions = []
        for row in target.sessions:
            session = plain(row)
            session["label"] = session_label(store, conn, row)
            sessions.append(session)
        merged = _Merged(conn, target)
        laid_events = [
            {"t": round((e.ts - start) * 1000, 3), "kind": e.kind, "text": (e.text or "")[:EVENT_TEXT_MAX],
             "sess": index}
            for index, e in target_events(conn, target)
        ]  # fmt: skip
    columns = timeline.columns(merged.rows, start)
    columns |= {"sess": merged.sess, "sseq": merged.sseq}
    end = max(columns["t"], default=0.0)
    return {
        "session": sessions[0],
        "sessions": sessions,
        "conversation": target.conversation,
        "stitched": target.seqs is not None,
        "last_id": None,
        "last_event_id": None,
        "frames": columns,
        "next": None,
        "last_seq": len(merged.rows),
        "end": end,
        "events": laid_events,
    }


def conversation_stats(store: Any, target: Target) -> dict[str, Any]:
    """Latency per method, bytes per tool and grouped operations across the conversation's sessions."""
    with connect(store) as conn:
        merged = _Merged(conn, target)
        messages: dict[int, Any] = {}
        tools: dict[int, str] = {}
        for index, session_id in enumerate(target.session_ids):
            messages |= merged.by_place(index, group_messages(conn, session_id))
            tools |= merged.by_place(index, tool_names(conn, session_id))
    return {
        "latency": timeline.latency(merged.rows),
        "tools": timeline.tool_bytes(merged.rows, tools),
        "groups": laid_groups(timeline.groups(merged.rows, messages), target.started_at),
        "facts": {},
        "conversations": [],
    }
