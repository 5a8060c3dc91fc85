"""One frame as its detail panel shows it: the exact bytes (hex when they are not text), the
HTTP metadata, the frame it pairs with, and the request as a `mcptape call` command."""

from __future__ import annotations

import shlex
from typing import Any, Final

import orjson
from sqlalchemy import select

from mcptape.store.queries import connect
from mcptape.store.schema import frames
from mcptape.view.data import NotFound, session_row
from mcptape.wire.jsontext import loads_or_none
from mcptape.wire.protocol import HELLO_METHODS

TEXT_MAX: Final = 1 << 20  # shown in the page; the whole frame is a download
HEX_MAX: Final = 64 << 10
# Requests `call` makes by itself, or that make no sense alone.
_NOT_CALLABLE: Final = HELLO_METHODS


def hex_dump(data: bytes) -> str:
    """``xxd``-style lines: offset, 16 bytes in hex, and the printable ASCII of them."""
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        lines.append(f"{offset:08x}  {hexes:<47}  |{text}|")
    return "\n".join(lines)


def call_command(message: Any, upstream: str | None) -> str | None:
    """The `mcptape call` command that sends this request again to the session's server, or None.

    The server is the session's upstream: ``--url`` for a URL, else its command line after
    ``--`` (as recorded: secrets in it were redacted and must be put back by hand).
    """
    if not isinstance(message, dict) or not isinstance(message.get("method"), str) or "id" not in message:
        return None
    method = message["method"]
    if method in _NOT_CALLABLE:
        return None
    params = message.get("params")
    params = {k: v for k, v in params.items() if k != "_meta"} if isinstance(params, dict) else None
    argv = ["mcptape", "call", "-m", method]
    if method == "tools/call" and params is not None and isinstance(params.get("name"), str):
        argv += ["--tool-name", params.pop("name")]
        arguments = params.pop("arguments", None)
        if arguments:
            argv += ["--tool-args", orjson.dumps(arguments).decode()]
    if params:
        argv += ["--params", orjson.dumps(params).decode()]
    if upstream and upstream.startswith(("http://", "https://")):
        argv += ["--url", upstream]
        return shlex.join(argv)
    if upstream:
        try:
            return shlex.join(argv) + " -- " + shlex.join(shlex.split(upstream))
        except ValueError:
            return shlex.join(argv) + " -- " + upstream
    return shlex.join(argv)


def frame_detail(store: Any, session_id: str, seq: int) -> dict[str, Any]:
    """The frame's row, its text (up to :data:`TEXT_MAX`), a hex dump when its bytes are not UTF-8,
    its metadata, the seq of the frame it pairs with, and the `call` command for a client request."""
    with connect(store) as conn:
        session = session_row(conn, session_id)
        row = (
            conn.execute(select(frames).where(frames.c.session_id == session_id, frames.c.seq == seq))
            .mappings()
            .first()
        )
        if row is None:
            raise NotFound(f"no frame {seq} in session {session_id[:12]}")
        pair = row["request_seq"]
        if row["kind"] == "request":
            pair = conn.execute(
                select(frames.c.seq)
                .where(frames.c.session_id == session_id, frames.c.request_seq == seq)
                .limit(1)
            ).scalar()
    data: bytes = row["raw"] if row["raw"] is not None else row["text"].encode("utf-8", "surrogatepass")
    text = row["text"]
    out: dict[str, Any] = {
        "seq": seq, "ts": row["ts"], "t": round((row["ts"] - session["started_at"]) * 1000, 3),
        "direction": row["direction"], "origin": row["origin"], "kind": row["kind"], "method": row["method"],
        "id": row["rpc_id"], "size": row["size"], "stored": len(data), "pair": pair,
        "is_text": row["raw"] is None, "text": text[:TEXT_MAX], "text_cut": len(text) > TEXT_MAX,
        "meta": loads_or_none(row["meta"]), "hex": None, "call": None,
    }  # fmt: skip
    if row["raw"] is not None:
        out["hex"] = hex_dump(data[:HEX_MAX])
        out["hex_cut"] = len(data) > HEX_MAX
    if row["direction"] == "c2s" and row["kind"] == "request":
        out["call"] = call_command(loads_or_none(text), session["upstream"])
    return out


def frame_bytes(store: Any, session_id: str, seq: int) -> bytes:
    """The frame's exact bytes as recorded."""
    with connect(store) as conn:
        row = conn.execute(
            select(frames.c.text, frames.c.raw).where(frames.c.session_id == session_id, frames.c.seq == seq)
        ).first()
    if row is None:
        raise NotFound(f"no frame {seq} in session {session_id[:12]}")
    return row.raw if row.raw is not None else row.text.encode("utf-8", "surrogatepass")
