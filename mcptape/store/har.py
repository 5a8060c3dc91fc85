"""A recorded HTTP session as HAR 1.2 (``mcptape export --format har``), for browser devtools and HAR viewers.

From the HTTP metadata each frame carries (``meta``: ``http_method``, ``path``,
``status``, ``headers``, ``stream``, ``event_id``; the ``http_frames`` view's columns):

- each client POST is an entry: its JSON-RPC body as ``postData``, its recorded headers;
- its response holds the server frames that came back on that POST: the answers to the
  requests it carried (paired by the ``exchanges`` view's rule, direction and id), and
  what the server sent on the same SSE stream before them (progress, logs, its own
  requests), as ``text/event-stream`` with each event's id, or the JSON body;
- a POST that carried only notifications or answers got ``202 Accepted``; one whose
  requests got no HTTP answer (the upstream failed: mcptape answered the client itself)
  has status 0, as browsers show a request that failed;
- the frames of a GET stream (and of a legacy SSE stream) are one entry for that stream.

Headers are the ones mcptape records (those that matter to MCP, credentials already
redacted), not every header that was sent. Times: ``startedDateTime`` is the frame's,
``time`` runs to the last frame of the response. mcptape's own fields start with ``_``
as HAR allows: ``_mcptape_seq`` (the frames' sequence numbers, for ``mcptape show``).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcptape.store import traffic
from mcptape.wire.frame import parse
from mcptape.wire.ids import encode_id, id_key

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, RowMapping

STATUS_TEXT = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
               404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}  # fmt: skip


@dataclass
class _Entry:
    method: str
    path: str
    started: float
    headers: dict[str, str]
    body: str | None = None
    stream: str = "post"
    waiting: set[str] = field(default_factory=set)  # id keys of requests not answered yet
    frames: list[RowMapping] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)


def _headers(value: Any) -> dict[str, str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _request_ids(text: str) -> set[str]:
    """The id keys of the requests a POSTed body carried (one, or a batch's)."""
    msg = parse(text.encode("utf-8", "surrogatepass"))
    items = msg if isinstance(msg, list) else [msg]
    out = set()
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("method"), str) and "id" in item:
            try:
                out.add(id_key(encode_id(item["id"])))
            except Exception:  # an id nested too deep to encode: no answer will match it
                continue
    return out


def _iso(ts: float) -> str:
    return (
        datetime.datetime.fromtimestamp(ts, datetime.UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def _stream_key(event_id: Any) -> str | None:
    """The stream an SSE event id names when mcptape minted it (``p3-7``: stream ``p3``)."""
    if not isinstance(event_id, str):
        return None
    return event_id.rpartition("-")[0] or None


def entries(rows: Iterable[RowMapping]) -> list[_Entry]:
    """Group a session's HTTP frames into HTTP exchanges (see the module docstring)."""
    posts: list[_Entry] = []
    streams: dict[tuple[str, str], _Entry] = {}
    by_id: dict[str, _Entry] = {}
    by_stream: dict[str, _Entry] = {}
    out: list[_Entry] = []
    for row in rows:
        if row["direction"] == "c2s":
            entry = _Entry(
                row["http_method"] or "POST", row["path"] or "/", row["ts"], _headers(row["headers"])
            )
            entry.body = row["text"]
            entry.seqs.append(row["seq"])
            entry.waiting = _request_ids(row["text"]) if row["kind"] in ("request", "batch") else set()
            for key in entry.waiting:
                by_id[key] = entry
            posts.append(entry)
            out.append(entry)
            continue
        entry = _owner(row, posts, streams, by_id, by_stream, out)
        entry.frames.append(row)
        entry.seqs.append(row["seq"])
    return out


def _owner(
    row: RowMapping,
    posts: list[_Entry],
    streams: dict[tuple[str, str], _Entry],
    by_id: dict[str, _Entry],
    by_stream: dict[str, _Entry],
    out: list[_Entry],
) -> _Entry:
    stream = row["stream"] or "post"
    key = _stream_key(row["event_id"])
    if row["kind"] in ("response", "error") and row["rpc_id"] is not None:
        entry = by_id.pop(id_key(row["rpc_id"]), None)
        if entry is not None:
            entry.waiting.discard(id_key(row["rpc_id"]))
            if key is not None:
                by_stream[key] = entry
            return entry
    if stream != "post":
        where = (stream, row["path"] or "/")
        entry = streams.get(where)
        if entry is None:
            method = row["http_method"] or "GET"
            entry = streams[where] = _Entry(method, where[1], row["ts"], {}, stream=stream)
            out.append(entry)
        return entry
    if key is not None and key in by_stream:
        return by_stream[key]
    entry = next((p for p in reversed(posts) if p.waiting), None) or (posts[-1] if posts else None)
    if entry is None:  # a server frame before any POST: a stream of its own
        entry = streams.get(("post", "/"))
        if entry is None:
            entry = streams[("post", "/")] = _Entry("POST", row["path"] or "/", row["ts"], {})
            out.append(entry)
    if key is not None:
        by_stream[key] = entry
    return entry


def _response(entry: _Entry) -> tuple[dict[str, Any], float]:
    frames = entry.frames
    if not frames:
        # Only notifications or answers: the server accepted them (202). Requests that got
        # no HTTP answer at all (the upstream failed): status 0, as browsers show a failed request.
        status = 0 if entry.waiting else 202
        content = {"size": 0, "mimeType": ""}
        return _response_doc(status, {}, content), entry.started
    first = frames[0]
    status = first["status"] if isinstance(first["status"], int) else 200
    headers = _headers(first["headers"])
    sse = entry.stream != "post" or any(f["event_id"] is not None for f in frames) or len(frames) > 1
    if sse:
        events = []
        for f in frames:
            line = f"id: {f['event_id']}\n" if f["event_id"] is not None else ""
            events.append(f"{line}event: message\ndata: {f['text']}\n\n")
        text, mime = "".join(events), "text/event-stream"
    else:
        text, mime = first["text"], "application/json"
    content = {"size": len(text.encode("utf-8", "surrogatepass")), "mimeType": mime, "text": text}
    return _response_doc(status, headers, content), frames[-1]["ts"]


def _response_doc(status: int, headers: dict[str, str], content: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": status,
        "statusText": STATUS_TEXT.get(status, ""),
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": [{"name": k, "value": v} for k, v in headers.items()],
        "content": content,
        "redirectURL": "",
        "headersSize": -1,
        "bodySize": content["size"],
    }


def _base(row: RowMapping) -> str:
    upstream = row["upstream"] or ""
    if row["mode"] != "proxy" and upstream.startswith(("http://", "https://")):
        parts = urlsplit(upstream)
        return f"{parts.scheme}://{parts.netloc}"
    return "http://localhost"  # the gateway: it listens on loopback


def har_entry(entry: _Entry, base: str) -> dict[str, Any]:
    response, last = _response(entry)
    elapsed = max((last - entry.started) * 1000.0, 0.0)
    request: dict[str, Any] = {
        "method": entry.method,
        "url": base + entry.path,
        "httpVersion": "HTTP/1.1",
        "cookies": [],
        "headers": [{"name": k, "value": v} for k, v in entry.headers.items()],
        "queryString": [],
        "headersSize": -1,
        "bodySize": len(entry.body.encode("utf-8", "surrogatepass")) if entry.body is not None else 0,
    }
    if entry.body is not None:
        request["postData"] = {"mimeType": "application/json", "text": entry.body}
    return {
        "startedDateTime": _iso(entry.started),
        "time": round(elapsed, 3),
        "request": request,
        "response": response,
        "cache": {},
        "timings": {"send": 0, "wait": round(elapsed, 3), "receive": 0},
        "_mcptape_seq": entry.seqs,
    }


def session_har(conn: Connection, row: RowMapping) -> dict[str, Any]:
    """The HAR 1.2 document of one recorded session (no entries when nothing went over HTTP)."""
    from mcptape import __version__

    base = _base(row)
    found = entries(traffic.http_frames(conn, row["id"]))
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "mcptape", "version": __version__},
            "pages": [],
            "entries": [har_entry(e, base) for e in found],
            "comment": f"mcptape session {row['id']} ({row['mode']}, {row['transport']})",
        }
    }
