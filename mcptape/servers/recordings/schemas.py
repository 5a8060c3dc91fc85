"""The tools of ``mcptape mcp`` as ``tools/list`` shows them: names, descriptions, input and output schemas.

Every tool reads; none writes. Outputs are bounded (:data:`COUNTS`): a listing, a page of
exchanges, a query's rows and each value in them are cut at a size an agent can take in,
and the result says what was cut.
"""

from __future__ import annotations

from typing import Any, Final

COUNTS: Final[dict[str, tuple[int, int]]] = {  # default and most
    "sessions": (50, 500),  # list_sessions: sessions listed
    "exchanges": (20, 100),  # show_session: exchanges a page
    "chars": (2000, 20000),  # show_session, query: characters of one value
    "rows": (100, 1000),  # query: rows
}
SECONDS: Final[dict[str, tuple[float, float]]] = {  # default and most
    "query_timeout": (10.0, 30.0),  # query: its time limit
    "replay_timeout": (10.0, 60.0),  # replay: the wait for one answer
}
MAX_RESULT_CHARS: Final = 512_000  # what one structured result may hold in all, about

_STR: Final = {"type": "string"}
_INT: Final = {"type": "integer"}
_NUM: Final = {"type": "number"}
_BOOL: Final = {"type": "boolean"}


def _or_null(*types: str, description: str | None = None) -> dict[str, Any]:
    """A value of one of ``types`` or null, as ``anyOf`` branches of one type each: a type array
    (``["string", "null"]``) is valid JSON Schema, but clients that map tool schemas onto a
    single-type dialect (the Inspector's --strict warns of it) may reject or loosen it."""
    schema: dict[str, Any] = {"anyOf": [*({"type": kind} for kind in types), {"type": "null"}]}
    if description is not None:
        schema["description"] = description
    return schema


_OPT_STR: Final = _or_null("string")
_OPT_INT: Final = _or_null("integer")
_OPT_NUM: Final = _or_null("number")
_SESSION_REF: Final = {
    "type": "string",
    "description": "A session: its id, a unique prefix of it, a session name (the latest with it) or 'last'.",
}


def _bounded(kind: str, what: str) -> dict[str, Any]:
    if kind in SECONDS:
        default, most = SECONDS[kind]
        return {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": most,
            "default": default,
            "description": what,
        }
    low, high = COUNTS[kind]
    return {"type": "integer", "minimum": 1, "maximum": high, "default": low, "description": what}


SESSION: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "id": _STR,
        "name": _OPT_STR,
        "mode": _STR,
        "transport": _OPT_STR,
        "upstream": _OPT_STR,
        "started": _OPT_STR,
        "ended": _OPT_STR,
        "duration_s": _OPT_NUM,
        "frames": _OPT_INT,
        "status": _STR,
        "exit_code": _OPT_INT,
        "protocol_version": _OPT_STR,
        "client": _OPT_STR,
        "server": _OPT_STR,
    },
    "required": ["id", "mode", "status"],
}

EXCHANGE: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "direction": {"type": "string", "description": "c2s: the client asked; s2c: the server asked."},
        "method": _OPT_STR,
        "rpc_id": _or_null("string", description='The id as JSON text: 1 and "1" differ.'),
        "request_seq": _OPT_INT,
        "response_seq": _OPT_INT,
        "requested_at": _OPT_NUM,
        "latency_ms": _OPT_NUM,
        "is_error": _or_null("boolean", "integer"),
        "error_code": _OPT_INT,
        "error_message": _OPT_STR,
        "answered_by": _or_null("string", description="client, server or proxy (mcptape)."),
        "request": _or_null("string", description="The request's JSON text (cut when long)."),
        "response": _or_null("string", description="The reply's JSON text (cut when long)."),
    },
}

TOOLS: Final[dict[str, dict[str, Any]]] = {
    "list_sessions": {
        "title": "List recorded sessions",
        "description": (
            "The sessions mcptape recorded, latest first: id, name, mode (record, proxy, call, replay, "
            "serve), transport, upstream (the server's command or URL), start and end times, frame "
            "count, status (running, ok, closed, error, interrupted, lost) and the client and server "
            "names. Filters narrow the list; `name` and `server` take shell patterns (files-*)."
        ),
        "input": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Session name, or a pattern (smoke-*)."},
                "server": {
                    "type": "string",
                    "description": "Server name the session's server gave, or a pattern.",
                },
                "mode": {"type": "string", "enum": ["record", "proxy", "call", "replay", "serve"]},
                "status": {"type": "string", "description": "running, ok, closed, error or interrupted."},
                "since": {
                    "type": "string",
                    "description": "Started at or after: ISO 8601 (2026-01-31, 2026-01-31T14:00) or epoch seconds.",
                },
                "until": {"type": "string", "description": "Started before: ISO 8601 or epoch seconds."},
                "limit": _bounded("sessions", "How many sessions at most."),
            },
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {
                "sessions": {"type": "array", "items": SESSION},
                "truncated": {"type": "boolean", "description": "More sessions match than `limit`."},
            },
            "required": ["sessions", "truncated"],
        },
    },
    "show_session": {
        "title": "Show a session's exchanges",
        "description": (
            "One session: its row and a page of its exchanges (each request with its reply, in order: "
            "method, id, latency, error, who answered, and both JSON texts cut at `max_chars`). Page "
            "with `cursor` (the `next_cursor` of the previous page). `events` adds the session's "
            "events (server stderr, process start and exit, faults injected, errors)."
        ),
        "input": {
            "type": "object",
            "properties": {
                "session": _SESSION_REF,
                "cursor": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Exchanges to skip.",
                },
                "limit": _bounded("exchanges", "Exchanges on this page."),
                "max_chars": _bounded("chars", "Characters kept of each request and reply text."),
                "events": {
                    "type": "boolean",
                    "default": False,
                    "description": "Include the session's events (at most 200).",
                },
            },
            "required": ["session"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {
                "session": {**SESSION, "properties": {**SESSION["properties"], "error": _OPT_STR}},
                "exchanges": {"type": "array", "items": EXCHANGE},
                "total": {"type": "integer", "description": "Exchanges in the session."},
                "next_cursor": _or_null(
                    "integer", description="The cursor of the next page; null on the last."
                ),
                "events": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "ts": _NUM,
                            "kind": _STR,
                            "text": _OPT_STR,
                            "data": {"description": "Any JSON value: what the event carries."},
                        },
                    },
                },
            },
            "required": ["session", "exchanges", "total", "next_cursor"],
        },
    },
    "query": {
        "title": "Run a read-only SQL query",
        "description": (
            "One SQL statement over the recordings, read-only (writes, ATTACH, schema changes, pragma "
            "settings and load_extension are refused), stopped after `timeout` seconds. Views: messages, "
            "exchanges, tool_calls, log_messages, server_requests, http_frames, conversations; tables: "
            "sessions, frames, events (the resources mcptape://views/NAME document each view). Times are "
            "epoch seconds; rpc_id is JSON text. Rows past `max_rows` and characters past `max_chars` "
            "in a value are cut, and the result says so. Example: select tool, count(*), "
            "avg(latency_ms) from tool_calls group by 1"
        ),
        "input": {
            "type": "object",
            "properties": {
                "sql": {
                    "type": "string",
                    "description": "One SQL statement (SQLite or PostgreSQL, as the database is).",
                },
                "timeout": _bounded("query_timeout", "Seconds before the query is stopped."),
                "max_rows": _bounded("rows", "Rows returned at most."),
                "max_chars": _bounded("chars", "Characters kept of each text value."),
            },
            "required": ["sql"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {
                "columns": {"type": "array", "items": _STR},
                "rows": {"type": "array", "items": {"type": "array"}},
                "row_count": {"type": "integer", "description": "Rows returned."},
                "truncated": {"type": "boolean", "description": "More rows were there than returned."},
                "values_cut": {"type": "integer", "description": "Values cut at max_chars."},
            },
            "required": ["columns", "rows", "row_count", "truncated", "values_cut"],
        },
    },
    "replay": {
        "title": "Replay a recording against a registered server",
        "description": (
            "Re-drive a fresh instance of a registered server (a name from `mcptape servers`: a "
            "built-in or an mcpServers entry; never any other command) with the client frames of a "
            "recorded session, and compare its answers with the recording after normalisation "
            "(timestamps, minted ids left out). Returns the report: each exchange that differs with "
            "the JSON pointers and both values. Nothing is written: the replay is not recorded."
        ),
        "input": {
            "type": "object",
            "properties": {
                "session": _SESSION_REF,
                "server": {"type": "string", "description": "The registered server to replay against."},
                "timeout": _bounded("replay_timeout", "Seconds to wait for each answer."),
            },
            "required": ["session", "server"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {
                "report": {"type": "object", "description": "As `mcptape replay --report` writes it."},
                "summary": _STR,
                "passed": _BOOL,
            },
            "required": ["report", "summary", "passed"],
        },
    },
    "diff": {
        "title": "Compare two recordings of a server",
        "description": (
            "What changed in a server between two recorded sessions: tools, prompts, resources, "
            "resource templates and capabilities added, removed or changed (each breaking or "
            "compatible), and the requests both made whose answers differ, with JSON pointers."
        ),
        "input": {
            "type": "object",
            "properties": {"a": _SESSION_REF, "b": _SESSION_REF},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
        "output": {
            "type": "object",
            "properties": {
                "a": {"type": "object"},
                "b": {"type": "object"},
                "breaking": _INT,
                "changes": {"type": "array", "items": {"type": "object"}},
                "responses": {"type": "object"},
                "summary": _STR,
            },
            "required": ["a", "b", "breaking", "changes", "responses", "summary"],
        },
    },
}
