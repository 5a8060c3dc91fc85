"""A raw stdio MCP server that floods: many notifications for one tool call, a sampling request
in the middle, and quick answers to other calls meanwhile (no SDK: it writes as fast as its
stdout takes lines, which is what tests a proxy's back-pressure).

Tools:
- ``flood`` ``{"count": N, "size": BYTES, "sample_at": K}``: N ``notifications/message``
  of about BYTES each (related to the call), a ``sampling/createMessage`` request after
  the K-th (the flood waits for its answer), then the answer ``{"sent": N, "sampled": ...}``;
- ``echo`` ``{"text": ...}``: answered at once, even while a flood runs.

Run: ``python tests/servers/flood.py``.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

_out = sys.stdout.buffer
_lock = threading.Lock()
_sampled: dict[str, threading.Event] = {}
_answers: dict[str, Any] = {}


def write(message: dict[str, Any]) -> None:
    line = json.dumps(message, separators=(",", ":")).encode() + b"\n"
    with _lock:
        _out.write(line)
        _out.flush()


def result(rid: Any, value: Any) -> None:
    write({"jsonrpc": "2.0", "id": rid, "result": value})


def flood(rid: Any, args: dict[str, Any]) -> None:
    count, size, sample_at = int(args.get("count", 100)), int(args.get("size", 3000)), args.get("sample_at")
    related = {"io.modelcontextprotocol/related-request-id": rid}
    sampled = None
    for i in range(1, count + 1):
        data = {"n": i, "pad": "x" * size}
        write(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": data, "_meta": related},
            }
        )
        if i == sample_at:
            sid = f"sample-{rid}"
            _sampled[sid] = threading.Event()
            params = {
                "messages": [{"role": "user", "content": {"type": "text", "text": f"at {i}"}}],
                "maxTokens": 5,
                "_meta": related,
            }
            write({"jsonrpc": "2.0", "id": sid, "method": "sampling/createMessage", "params": params})
            _sampled[sid].wait()
            sampled = _answers.pop(sid, None)
    result(rid, {"content": [{"type": "text", "text": f"sent {count}"}], "sent": count, "sampled": sampled})


def main() -> None:
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, rid = message.get("method"), message.get("id")
        if method is None:  # an answer to our sampling request
            if rid in _sampled:
                _answers[rid] = message.get("result", message.get("error"))
                _sampled[rid].set()
            continue
        if rid is None:
            continue
        if method == "initialize":
            version = message.get("params", {}).get("protocolVersion", "2025-06-18")
            info = {"name": "flood", "version": "1"}
            result(rid, {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info})
        elif method == "tools/call":
            params = message.get("params") or {}
            args = params.get("arguments") or {}
            if params.get("name") == "flood":
                threading.Thread(target=flood, args=(rid, args), daemon=True).start()
            else:
                result(rid, {"content": [{"type": "text", "text": str(args.get("text", ""))}]})
        else:
            result(rid, {})


if __name__ == "__main__":
    main()
