"""The views of revision 0003: `exchanges` joins on the pairs stored when frames are written.

Frozen once released (tests/test_migrations_frozen.py pins this file's hash).

From revision 0003 the writer pairs each reply with its request as it records them
(mcptape/store/correlation.py; the migration backfills older recordings the same way):
a reply frame carries ``request_seq``, and pairs where either side is a batch element
are rows of ``batch_replies``. `exchanges` therefore finds a request's reply with one
index lookup instead of walking the session from the request: a request nobody
answered costs as little as one that was answered. Ids are matched the way peers
compare them (``1`` and ``1.0`` are one id), and two requests waiting under one id
are answered in the order they were sent.

The other views keep their 0002 definitions (they read `exchanges` and `messages`),
recreated because they depend on `exchanges`; PostgreSQL's `messages` is spelled so
that the planner sees the statistics of ``frames.kind``. On PostgreSQL, ``round(double
precision, integer)`` is added so that ``round(avg(latency_ms), 2)`` works there as on
SQLite.
"""

from __future__ import annotations

from typing import Final

from mcptape.migrations.frozen.common import View, create, drop
from mcptape.migrations.frozen.views_0002 import (
    _LOG_MESSAGES_POSTGRESQL_V2,
    _LOG_MESSAGES_SQLITE_V2,
    _MESSAGES_SQLITE_V2,
    _SERVER_REQUESTS_POSTGRESQL_V2,
    _SERVER_REQUESTS_SQLITE_V2,
    _TOOL_CALLS_POSTGRESQL_V2,
    _TOOL_CALLS_SQLITE_V2,
    PG_JSONB_FUNCTION_V2,
    _pg_element_kind,
    _pg_elements,
)

# PostgreSQL's `messages` as in 0002, with the frames that are not batches selected by
# `kind` alone: 0002 spelled their kind through a CASE, which hid the column's statistics
# from the planner, so it guessed 1,000 requests in any table and chose nested loops
# where a hash join is many times faster.
_MESSAGES_POSTGRESQL_V3 = f"""
SELECT
  f.id AS frame_id,
  f.session_id AS session_id,
  f.seq AS seq,
  f.ts AS ts,
  f.direction AS direction,
  f.origin AS origin,
  f.kind::text AS kind,
  f.method AS method,
  f.rpc_id AS rpc_id,
  f.text AS text,
  NULL::bigint AS batch_index
FROM frames AS f
WHERE f.kind <> 'batch'
UNION ALL
SELECT
  f.id,
  f.session_id,
  f.seq,
  f.ts,
  f.direction,
  f.origin,
  'malformed'::text,
  f.method,
  f.rpc_id,
  f.text,
  NULL::bigint
FROM frames AS f
WHERE f.kind = 'batch' AND jsonb_typeof(mcptape_jsonb(f.text)) IS DISTINCT FROM 'array'
UNION ALL
SELECT
  f.id,
  f.session_id,
  f.seq,
  f.ts,
  f.direction,
  f.origin,
  {_pg_element_kind("e.doc")},
  CASE WHEN jsonb_typeof(e.doc -> 'method') = 'string' THEN e.doc ->> 'method' END,
  (e.doc -> 'id')::text,
  e.doc::text,
  e.n - 1
FROM frames AS f
{_pg_elements("f.text", "e")}
WHERE f.kind = 'batch'
"""

# The reply of request q (a message of `messages`): frame d when neither side is in a
# batch, else the batch_replies row p and its reply frame b (element p.reply_index of
# b, or b itself when -1). At most one of d and p exists for a request.
_REPLY_JOINS = """
LEFT JOIN frames AS d
  ON q.batch_index IS NULL AND d.session_id = q.session_id AND d.request_seq = q.seq
LEFT JOIN batch_replies AS p
  ON p.session_id = q.session_id AND p.request_seq = q.seq AND p.request_index = coalesce(q.batch_index, -1)
LEFT JOIN frames AS b ON b.session_id = p.session_id AND b.seq = p.reply_seq"""

_EXCHANGES_SQLITE_V3 = f"""
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
) AS x
"""

_EXCHANGES_POSTGRESQL_V3 = f"""
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
FROM messages AS q{_REPLY_JOINS}
CROSS JOIN LATERAL (
  SELECT CASE WHEN p.reply_index >= 0 THEN mcptape_jsonb(b.text) -> p.reply_index END AS doc
) AS be
CROSS JOIN LATERAL (
  SELECT
    coalesce(d.seq, b.seq) AS seq,
    coalesce(d.ts, b.ts) AS ts,
    coalesce(d.origin, b.origin) AS origin,
    CASE WHEN p.reply_index >= 0 THEN p.reply_index::bigint END AS batch_index,
    CASE WHEN d.id IS NOT NULL THEN d.text WHEN be.doc IS NOT NULL THEN be.doc::text ELSE b.text END AS text,
    CASE
      WHEN d.id IS NOT NULL THEN d.kind
      WHEN b.id IS NULL THEN NULL
      WHEN p.reply_index < 0 THEN b.kind
      WHEN be.doc -> 'error' IS NOT NULL THEN 'error'
      ELSE 'response'
    END AS kind
) AS r
LEFT JOIN LATERAL (
  SELECT coalesce(be.doc, mcptape_jsonb(r.text)) AS doc WHERE r.kind = 'error'
) AS rj ON TRUE
WHERE q.kind = 'request'
"""

VIEWS_V3: Final[tuple[View, ...]] = (
    View("messages", _MESSAGES_SQLITE_V2, _MESSAGES_POSTGRESQL_V3),
    View("exchanges", _EXCHANGES_SQLITE_V3, _EXCHANGES_POSTGRESQL_V3),
    View("tool_calls", _TOOL_CALLS_SQLITE_V2, _TOOL_CALLS_POSTGRESQL_V2),
    View("log_messages", _LOG_MESSAGES_SQLITE_V2, _LOG_MESSAGES_POSTGRESQL_V2),
    View("server_requests", _SERVER_REQUESTS_SQLITE_V2, _SERVER_REQUESTS_POSTGRESQL_V2),
)

# PostgreSQL has round(numeric, integer) but no round(double precision, integer), so the
# README's round(avg(latency_ms), 2) failed there; SQLite rounds any number.
PG_ROUND_FUNCTION: Final = """
CREATE OR REPLACE FUNCTION round(value double precision, digits integer) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $mcptape$
  SELECT pg_catalog.round(value::numeric, digits)::double precision
$mcptape$
"""


def create_statements(dialect: str) -> list[str]:
    """The statements creating VIEWS_V3 (and mcptape_jsonb and round on PostgreSQL)."""
    return create(VIEWS_V3, dialect, (PG_JSONB_FUNCTION_V2, PG_ROUND_FUNCTION))


def drop_statements(dialect: str) -> list[str]:
    """The statements dropping every view of 0001 to 0003, mcptape_jsonb and round(double precision, integer)."""
    names = ("server_requests", "log_messages", "tool_calls", "exchanges", "messages")
    return drop(names, dialect, ("mcptape_jsonb(text)", "round(double precision, integer)"))
