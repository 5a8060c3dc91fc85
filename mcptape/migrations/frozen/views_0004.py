"""The views of revision 0004: proxy edits, mcptape's own copies, HTTP metadata, cheaper JSON on PostgreSQL.

Frozen once released (tests/test_migrations_frozen.py pins this file's hash).

What changes from 0003:

- `exchanges` leaves out a request that a proxy edit replaced. The recorder writes the
  replacement right after the frame it replaces, with ``{"replaces": SEQ}`` in its
  ``meta``; the original never reached the peer, so nobody answers it, and the
  replacement carries the exchange. Only a request with no reply is looked at, with one
  index lookup at ``seq + 1``.
- `server_requests` takes the questions of ``input_required`` results from the frames
  the server sent (``origin = 'server'``): the trimmed copy the injector forwards to the
  client (origin ``proxy``) asked nothing new.
- `http_frames` (new): the frames recorded with HTTP metadata (``mcptape proxy``,
  ``record --url``, ``call`` over HTTP) with that metadata as columns: HTTP method,
  path, stream, status, whether it came as an SSE event and its event id, and the
  headers that matter (``Mcp-Session-Id``, ``MCP-Protocol-Version``, ``Content-Type``,
  all of them as a JSON object, credentials already redacted by the recorder).
- PostgreSQL: texts are cast directly where the cast cannot fail, instead of through
  the PL/pgSQL mcptape_jsonb, whose exception handler costs a subtransaction per row
  (:func:`_pg_jsonb`, :func:`_pg_json`, :func:`_pg_meta`); `tool_calls` reads json,
  which needs no check of numbers; `exchanges` looks up a batch reply only for a
  request no frame answers, so the planner no longer sorts every request with its text.
  On a 200k-frame session (bench/bench_views.py) the README's `tool_calls` query went
  from about 10x a full scan of `frames` to about 4x.

`messages` keeps its 0003 definition, and SQLite's `tool_calls` and `log_messages` their
0002 ones (recreated, as they depend on `exchanges` and `messages`).
"""

from __future__ import annotations

from typing import Final

from mcptape.migrations.frozen.common import View, create, drop
from mcptape.migrations.frozen.views_0002 import (
    _LOG_MESSAGES_SQLITE_V2,
    _MESSAGES_SQLITE_V2,
    _SERVER_REQUESTS_POSTGRESQL_V2,
    _SERVER_REQUESTS_SQLITE_V2,
    _TOOL_CALLS_SQLITE_V2,
    PG_JSONB_FUNCTION_V2,
)
from mcptape.migrations.frozen.views_0003 import (
    _MESSAGES_POSTGRESQL_V3,
    _REPLY_JOINS,
    PG_ROUND_FUNCTION,
)

# Longest text (in bytes) the views cast directly. Every frame mcptape cut is longer: it
# cuts at 64 MiB, and since the 64 KiB preview the text it keeps is 64 KiB at least, give
# or take a replaced last character. Below it no number can overflow PostgreSQL's
# numeric once its exponent has at most 3 digits (scale at most 15,000 + 999 < 16,383).
_PG_DIRECT_CAST_MAX: Final = 15000


def _pg_jsonb(text: str) -> str:
    """``text`` as jsonb, NULL when PostgreSQL cannot read it, without a call per row where possible.

    Only texts of frames the recorder parsed (kinds request, notification, response,
    error, batch elements) and mcptape's own ``meta`` go through here. Such a text
    fails the cast only when it was cut, carries a ``\\u`` escape jsonb refuses
    (``\\u0000``, a lone surrogate) or a number beyond numeric's range; a text that may
    be any of those goes through mcptape_jsonb, whose exception handler costs a
    subtransaction per row, and the rest is cast directly (several times cheaper).
    A short text of one of those kinds that is no JSON is a row mcptape never writes
    (only its writer's rows are vouched for): the query would fail on it.
    """
    return (
        f"(CASE WHEN octet_length({text}) < {_PG_DIRECT_CAST_MAX} AND strpos({text}, '\\u') = 0"
        f" AND {text} !~ '[0-9][eE][-+]?[0-9]{{4}}' THEN ({text})::jsonb ELSE mcptape_jsonb({text}) END)"
    )


def _pg_json(text: str) -> str:
    """``text`` as json (validated, not converted), NULL when PostgreSQL cannot read it.

    The same texts as :func:`_pg_jsonb`; json keeps numbers as written, so only a cut
    or a ``\\u`` escape (which json refuses when it decodes a string) can fail it.
    """
    return (
        f"(CASE WHEN octet_length({text}) < {_PG_DIRECT_CAST_MAX} AND strpos({text}, '\\u') = 0"
        f" THEN ({text})::json ELSE mcptape_jsonb({text})::json END)"
    )


def _pg_meta(meta: str) -> str:
    """A frame's ``meta`` as jsonb: mcptape wrote it (orjson), so its numbers always fit numeric.

    Only a ``\\u`` escape (orjson writes control characters so, NUL included) or an
    unusually long value sends it through mcptape_jsonb.
    """
    return (
        f"(CASE WHEN octet_length({meta}) < {_PG_DIRECT_CAST_MAX} AND strpos({meta}, '\\u') = 0"
        f" THEN ({meta})::jsonb ELSE mcptape_jsonb({meta}) END)"
    )


# ---------------------------------------------------------------------------------------------
# exchanges
# ---------------------------------------------------------------------------------------------

# The frame after request q replaces it (a proxy edit): q was never forwarded.
_LITE_REPLACED = """EXISTS (
      SELECT 1 FROM frames AS n
      WHERE n.session_id = q.session_id
        AND n.seq = q.seq + 1
        AND n.meta IS NOT NULL
        AND instr(n.meta, '"replaces"') > 0
        AND (CASE WHEN json_valid(n.meta) THEN json_extract(n.meta, '$.replaces') END) = q.seq
    )"""

_EXCHANGES_SQLITE_V4 = f"""
SELECT
  x.session_id AS session_id,
  x.direction AS direction,
  x.method AS method,
  x.rpc_id AS rpc_id,
  x.seq AS request_seq,
  x.reply_seq AS response_seq,
  x.ts AS requested_at,
  x.reply_ts AS responded_at,
  (x.reply_ts - x.ts) * 1000.0 AS latency_ms,
  CASE WHEN x.reply_kind IS NULL THEN NULL WHEN x.reply_kind = 'error' THEN 1 ELSE 0 END AS is_error,
  CASE WHEN x.reply_kind = 'error' AND json_valid(x.reply_text)
    THEN json_extract(x.reply_text, '$.error.code') END AS error_code,
  CASE WHEN x.reply_kind = 'error' AND json_valid(x.reply_text)
    THEN json_extract(x.reply_text, '$.error.message') END AS error_message,
  x.text AS request,
  x.reply_text AS response,
  x.reply_origin AS answered_by,
  x.batch_index AS request_batch_index,
  x.reply_batch_index AS response_batch_index
FROM (
  SELECT
    q.session_id AS session_id,
    q.direction AS direction,
    q.method AS method,
    q.rpc_id AS rpc_id,
    q.seq AS seq,
    q.ts AS ts,
    q.text AS text,
    q.batch_index AS batch_index,
    coalesce(d.seq, b.seq) AS reply_seq,
    coalesce(d.ts, b.ts) AS reply_ts,
    coalesce(d.origin, b.origin) AS reply_origin,
    CASE WHEN p.reply_index >= 0 THEN p.reply_index END AS reply_batch_index,
    CASE
      WHEN d.id IS NOT NULL THEN d.text
      WHEN p.reply_index >= 0 THEN
        CASE WHEN json_valid(b.text) THEN json_extract(b.text, '$[' || p.reply_index || ']') END
      ELSE b.text
    END AS reply_text,
    CASE
      WHEN d.id IS NOT NULL THEN d.kind
      WHEN b.id IS NULL THEN NULL
      WHEN p.reply_index < 0 THEN b.kind
      WHEN json_valid(b.text) AND json_type(b.text, '$[' || p.reply_index || '].error') IS NOT NULL
        THEN 'error'
      ELSE 'response'
    END AS reply_kind
  FROM messages AS q{_REPLY_JOINS}
  WHERE q.kind = 'request'
    AND CASE WHEN d.id IS NULL AND p.reply_seq IS NULL THEN NOT {_LITE_REPLACED} ELSE 1 END
) AS x
"""

# OFFSET 0 keeps it a lookup per unanswered request: without it the planner hashes the
# whole subquery, a scan of every frame's meta, however few requests go unanswered.
_PG_REPLACED = f"""EXISTS (
    SELECT 1 FROM frames AS n
    WHERE n.session_id = q.session_id
      AND n.seq = q.seq + 1
      AND strpos(n.meta, '"replaces"') > 0
      AND {_pg_meta("n.meta")} ->> 'replaces' = q.seq::text
    OFFSET 0
  )"""

# The reply of request q on PostgreSQL: frame d when neither side is in a batch, else the
# batch_replies row and its reply frame, as p (looked up only for a request d does not
# answer). 0003's three outer joins made the planner sort every request with its text
# (batch_replies, empty or nearly, has no statistics), spilling to disk on large sessions.
_PG_REPLY_JOINS = """
LEFT JOIN frames AS d
  ON q.batch_index IS NULL AND d.session_id = q.session_id AND d.request_seq = q.seq
LEFT JOIN LATERAL (
  SELECT pr.reply_index, b.id, b.seq, b.ts, b.origin, b.kind, b.text
  FROM batch_replies AS pr
  JOIN frames AS b ON b.session_id = pr.session_id AND b.seq = pr.reply_seq
  WHERE d.id IS NULL
    AND pr.session_id = q.session_id
    AND pr.request_seq = q.seq
    AND pr.request_index = coalesce(q.batch_index, -1)
) AS p ON TRUE"""

_EXCHANGES_POSTGRESQL_V4 = f"""
SELECT
  q.session_id AS session_id,
  q.direction AS direction,
  q.method AS method,
  q.rpc_id AS rpc_id,
  q.seq AS request_seq,
  r.seq AS response_seq,
  q.ts AS requested_at,
  r.ts AS responded_at,
  (r.ts - q.ts) * 1000.0 AS latency_ms,
  CASE WHEN r.kind IS NULL THEN NULL WHEN r.kind = 'error' THEN 1 ELSE 0 END AS is_error,
  CASE WHEN jsonb_typeof(rj.doc -> 'error' -> 'code') = 'number'
    THEN (rj.doc -> 'error' ->> 'code')::numeric END AS error_code,
  rj.doc -> 'error' ->> 'message' AS error_message,
  q.text AS request,
  r.text AS response,
  r.origin AS answered_by,
  q.batch_index AS request_batch_index,
  r.batch_index AS response_batch_index
FROM messages AS q{_PG_REPLY_JOINS}
CROSS JOIN LATERAL (
  SELECT CASE WHEN p.reply_index >= 0 THEN mcptape_jsonb(p.text) -> p.reply_index END AS doc
) AS be
CROSS JOIN LATERAL (
  SELECT
    coalesce(d.seq, p.seq) AS seq,
    coalesce(d.ts, p.ts) AS ts,
    coalesce(d.origin, p.origin) AS origin,
    CASE WHEN p.reply_index >= 0 THEN p.reply_index::bigint END AS batch_index,
    CASE WHEN d.id IS NOT NULL THEN d.text WHEN be.doc IS NOT NULL THEN be.doc::text ELSE p.text END AS text,
    CASE
      WHEN d.id IS NOT NULL THEN d.kind
      WHEN p.id IS NULL THEN NULL
      WHEN p.reply_index < 0 THEN p.kind
      WHEN be.doc -> 'error' IS NOT NULL THEN 'error'
      ELSE 'response'
    END AS kind
) AS r
CROSS JOIN LATERAL (
  SELECT CASE WHEN r.kind = 'error' THEN coalesce(be.doc, {_pg_jsonb("r.text")}) END AS doc
) AS rj
WHERE q.kind = 'request'
  AND CASE WHEN d.id IS NULL AND p.id IS NULL THEN NOT {_PG_REPLACED} ELSE TRUE END
"""

# ---------------------------------------------------------------------------------------------
# tool_calls and log_messages (PostgreSQL; SQLite keeps 0002's)
# ---------------------------------------------------------------------------------------------

# tool_calls reads its columns as json, not jsonb: json keeps numbers as they are
# written, so only a cut text or a \u escape can fail the cast (no costly check for
# numbers), and json_extract_path reads one member without building the whole document.
# The jsonb comparisons of a round that asked for input run only for such rounds.
_TOOL_CALLS_POSTGRESQL_V4 = f"""
SELECT
  e.session_id AS session_id,
  json_extract_path_text({_pg_json("e.request")}, 'params', 'name') AS tool,
  json_extract_path({_pg_json("e.request")}, 'params', 'arguments')::text AS arguments,
  CASE
    WHEN e.response IS NULL THEN NULL
    WHEN e.is_error = 1 THEN 1
    WHEN json_typeof(json_extract_path(rj.doc, 'result', 'isError')) = 'boolean'
      AND json_extract_path_text(rj.doc, 'result', 'isError') = 'true' THEN 1
    ELSE 0
  END AS is_error,
  e.latency_ms AS latency_ms,
  e.requested_at AS requested_at,
  (CASE WHEN e.is_error = 1 THEN json_extract_path(rj.doc, 'error') ELSE json_extract_path(rj.doc, 'result') END)::text
    AS result,
  e.request_seq AS request_seq
FROM exchanges AS e
CROSS JOIN LATERAL (SELECT {_pg_json("e.response")} AS doc) AS rj
WHERE e.method = 'tools/call'
  AND NOT coalesce(CASE
    WHEN strpos(e.response, 'input_required') > 0
      AND json_extract_path_text(rj.doc, 'result', 'resultType') = 'input_required'
    THEN EXISTS (
    SELECT 1 FROM frames AS f
    CROSS JOIN LATERAL (SELECT {_pg_jsonb("f.text")} AS doc) AS fj
    CROSS JOIN LATERAL (SELECT {_pg_jsonb("e.response")} AS doc) AS rb
    WHERE f.session_id = e.session_id
      AND f.direction = 'c2s'
      AND f.kind = 'request'
      AND f.method = e.method
      AND f.seq > e.response_seq
      AND CASE
        WHEN rb.doc -> 'result' -> 'requestState' IS NOT NULL
          THEN fj.doc -> 'params' -> 'requestState' = rb.doc -> 'result' -> 'requestState'
        ELSE EXISTS (
          SELECT 1 FROM jsonb_object_keys(
            CASE WHEN jsonb_typeof(rb.doc -> 'result' -> 'inputRequests') = 'object'
              THEN rb.doc -> 'result' -> 'inputRequests' END
          ) AS k
          WHERE fj.doc -> 'params' -> 'inputResponses' -> k IS NOT NULL
        )
      END
  ) END, FALSE)
"""

_LOG_MESSAGES_POSTGRESQL_V4 = f"""
SELECT
  m.session_id AS session_id,
  m.seq AS seq,
  m.ts AS ts,
  m.direction AS direction,
  j.doc -> 'params' ->> 'level' AS level,
  j.doc -> 'params' ->> 'logger' AS logger,
  (j.doc -> 'params' -> 'data')::text AS data
FROM messages AS m
CROSS JOIN LATERAL (SELECT {_pg_jsonb("m.text")} AS doc) AS j
WHERE m.method = 'notifications/message' AND m.kind = 'notification'
"""

# ---------------------------------------------------------------------------------------------
# server_requests: the 2026-07-28 questions come from what the server sent
# ---------------------------------------------------------------------------------------------

# The input_required part is the last SELECT of 0002's union and ends with its WHERE.
_SERVER_REQUESTS_SQLITE_V4 = _SERVER_REQUESTS_SQLITE_V2.rstrip() + "\n  AND r.origin = 'server'\n"
_SERVER_REQUESTS_POSTGRESQL_V4 = _SERVER_REQUESTS_POSTGRESQL_V2.rstrip() + "\n  AND r.origin = 'server'\n"

# ---------------------------------------------------------------------------------------------
# http_frames
# ---------------------------------------------------------------------------------------------


def _lite_meta(path: str) -> str:
    return f"(CASE WHEN json_valid(f.meta) THEN json_extract(f.meta, '{path}') END)"


def _lite_header(name: str) -> str:
    """A recorded header's value by its lower-case name (the recorder keeps the name's case)."""
    headers = (
        "CASE WHEN json_valid(f.meta) AND json_type(f.meta, '$.headers') = 'object' THEN f.meta ELSE '{}' END"
    )
    return (
        f"(SELECT h.value FROM json_each({headers}, '$.headers') AS h WHERE lower(h.key) = '{name}' LIMIT 1)"
    )


# A frame is an HTTP frame when its meta says how it travelled (http_method or stream);
# instr() spares the JSON parse of every other frame's meta (stdio frames have none).
_HTTP_FRAMES_SQLITE = f"""
SELECT
  f.id AS frame_id,
  f.session_id AS session_id,
  f.seq AS seq,
  f.ts AS ts,
  f.direction AS direction,
  f.origin AS origin,
  f.kind AS kind,
  f.method AS method,
  f.rpc_id AS rpc_id,
  {_lite_meta("$.http_method")} AS http_method,
  {_lite_meta("$.path")} AS path,
  {_lite_meta("$.stream")} AS stream,
  {_lite_meta("$.status")} AS status,
  CASE WHEN json_valid(f.meta) AND json_type(f.meta, '$.event_id') IS NOT NULL THEN 1 ELSE 0 END AS sse,
  {_lite_meta("$.event_id")} AS event_id,
  {_lite_header("mcp-session-id")} AS http_session_id,
  {_lite_header("mcp-protocol-version")} AS protocol_version,
  {_lite_header("content-type")} AS content_type,
  CASE WHEN json_valid(f.meta) AND json_type(f.meta, '$.headers') = 'object'
    THEN json_extract(f.meta, '$.headers') END AS headers
FROM frames AS f
WHERE f.meta IS NOT NULL
  AND (instr(f.meta, '"http_method"') > 0 OR instr(f.meta, '"stream"') > 0)
  AND (CASE WHEN json_valid(f.meta)
    THEN coalesce(json_type(f.meta, '$.http_method'), json_type(f.meta, '$.stream')) END) IS NOT NULL
"""


def _pg_header(name: str, *spellings: str) -> str:
    """A recorded header's value whatever the case of its name.

    The usual spellings are looked up directly; only a name spelled otherwise costs a
    walk over the headers (a subquery per frame would cost more than the whole scan).
    """
    headers = "(m.doc -> 'headers')"
    direct = ", ".join(f"{headers} ->> '{spelling}'" for spelling in (name, *spellings))
    walk = f"(SELECT h.value FROM jsonb_each_text({headers}) AS h WHERE lower(h.key) = '{name}' LIMIT 1)"
    return (
        f"coalesce({direct}, CASE WHEN jsonb_typeof({headers}) = 'object'"
        f" AND strpos(lower({headers}::text), '\"{name}\"') > 0 THEN {walk} END)"
    )


# meta is parsed once per frame: OFFSET 0 keeps the planner from copying the cast into
# each of the columns that read it, and the frame's id in the subquery from caching it
# by meta (Memoize: every meta differs, by its SSE event id at least). mcptape writes
# meta as compact JSON, so a key appears as "name": in its text.
_HTTP_FRAMES_POSTGRESQL = f"""
SELECT
  f.id AS frame_id,
  f.session_id AS session_id,
  f.seq AS seq,
  f.ts AS ts,
  f.direction AS direction,
  f.origin AS origin,
  f.kind AS kind,
  f.method AS method,
  f.rpc_id AS rpc_id,
  m.doc ->> 'http_method' AS http_method,
  m.doc ->> 'path' AS path,
  m.doc ->> 'stream' AS stream,
  CASE WHEN jsonb_typeof(m.doc -> 'status') = 'number' THEN (m.doc ->> 'status')::numeric END AS status,
  CASE WHEN m.doc -> 'event_id' IS NOT NULL THEN 1 ELSE 0 END AS sse,
  m.doc ->> 'event_id' AS event_id,
  {_pg_header("mcp-session-id", "Mcp-Session-Id")} AS http_session_id,
  {_pg_header("mcp-protocol-version", "MCP-Protocol-Version", "Mcp-Protocol-Version")} AS protocol_version,
  {_pg_header("content-type", "Content-Type")} AS content_type,
  CASE WHEN jsonb_typeof(m.doc -> 'headers') = 'object' THEN (m.doc -> 'headers')::text END AS headers
FROM frames AS f
CROSS JOIN LATERAL (SELECT f.id AS frame_id, {_pg_meta("f.meta")} AS doc OFFSET 0) AS m
WHERE f.meta IS NOT NULL
  AND (strpos(f.meta, '"http_method":') > 0 OR strpos(f.meta, '"stream":') > 0)
"""

# Views in dependency order: later ones read earlier ones.
VIEWS_V4: Final[tuple[View, ...]] = (
    View("messages", _MESSAGES_SQLITE_V2, _MESSAGES_POSTGRESQL_V3),
    View("exchanges", _EXCHANGES_SQLITE_V4, _EXCHANGES_POSTGRESQL_V4),
    View("tool_calls", _TOOL_CALLS_SQLITE_V2, _TOOL_CALLS_POSTGRESQL_V4),
    View("log_messages", _LOG_MESSAGES_SQLITE_V2, _LOG_MESSAGES_POSTGRESQL_V4),
    View("server_requests", _SERVER_REQUESTS_SQLITE_V4, _SERVER_REQUESTS_POSTGRESQL_V4),
    View("http_frames", _HTTP_FRAMES_SQLITE, _HTTP_FRAMES_POSTGRESQL),
)


def create_statements(dialect: str) -> list[str]:
    """The statements creating VIEWS_V4 (and mcptape_jsonb and round on PostgreSQL)."""
    return create(VIEWS_V4, dialect, (PG_JSONB_FUNCTION_V2, PG_ROUND_FUNCTION))


def drop_statements(dialect: str) -> list[str]:
    """The statements dropping every view of 0001 to 0004, mcptape_jsonb and round(double precision, integer)."""
    names = ("http_frames", "server_requests", "log_messages", "tool_calls", "exchanges", "messages")
    return drop(names, dialect, ("mcptape_jsonb(text)", "round(double precision, integer)"))
