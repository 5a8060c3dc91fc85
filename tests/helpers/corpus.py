"""The corpus sessions (tests/data/corpus) loaded into a store as finished recordings, through its public API."""

from __future__ import annotations

import json
from pathlib import Path

from mcptape.store import open_store
from mcptape.wire.frame import Frame
from tests.helpers.paths import CORPUS

BASE = 1_700_000_000.0
UPSTREAM = "npx -y @modelcontextprotocol/server-everything"
# name -> (file, started_at offset from BASE, frame count)
SESSIONS = {
    "everything-ts": ("everything-ts-client.jsonl", 0.0, 47),
    "everything-py": ("everything-py-client.jsonl", 100.0, 10),
    "py2026": ("py2026-client-server.jsonl", 200.0, 6),
}


def corpus_lines(file: str) -> list[str]:
    # U+2028 is a line break to str.splitlines() but not to a JSONL reader: split on "\n" only.
    return (CORPUS / file).read_text(encoding="utf-8").split("\n")[:-1]


def load_corpus(db: Path, file: str, name: str, started_at: float) -> str:
    """One corpus file as a finished session, through the store's public API."""
    store = open_store(str(db))
    try:
        sid = store.create_session(mode="record", name=name, transport="stdio->stdio", upstream=UPSTREAM)
        store.update_session(sid, started_at=started_at)
        writer = store.writer()
        last = 0.0
        for seq, line in enumerate(corpus_lines(file), 1):
            obj = json.loads(line)
            writer.add_frame(sid, seq, Frame(obj["frame"].encode(), obj["dir"], ts=started_at + obj["t"]))
            last = obj["t"]
        writer.add_event(sid, "stderr", "Starting default (STDIO) server...", ts=started_at + 0.1)
        writer.add_event(sid, "process_exit", "exit 0", data={"exit_code": 0}, ts=started_at + last + 0.05)
        writer.close()
        store.update_session(sid, ended_at=started_at + last + 0.05, status="ok", exit_code=0)
        return sid
    finally:
        store.close()
