"""The views of revision 0001 (exchanges, tool_calls, log_messages, server_requests), frozen.

Released with revision 0001: this SQL must not change (tests/test_migrations_frozen.py
pins this file's hash). Correlation rule: a request's response is, in the same session,
the first frame after it (by ``seq``) that travels the opposite way, is a ``response``
or an ``error`` and carries the same ``rpc_id``.
"""

from __future__ import annotations

from typing import Final

from mcptape.migrations.frozen.common import View, create, drop

_EXCHANGES_SQLITE = """
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
  CASE WHEN r.id IS NULL THEN NULL WHEN r.kind = 'error' THEN 1 ELSE 0 END AS is_error,
  CASE WHEN r.kind = 'error' AND json_valid(r.text) THEN json_extract(r.text, '$.error.code') END
    AS error_code,
  CASE WHEN r.kind = 'error' AND json_valid(r.text) THEN json_extract(r.text, '$.error.message') END
    AS error_message,
  q.text AS request,
  r.text AS response,
  r.origin AS answered_by
FROM frames AS q
LEFT JOIN frames AS r ON r.id = (
  SELECT f.id FROM frames AS f
  WHERE f.session_id = q.session_id
    AND f.rpc_id = q.rpc_id
    AND f.direction <> q.direction
    AND f.kind IN ('response', 'error')
    AND f.seq > q.seq
  ORDER BY f.seq
  LIMIT 1
)
WHERE q.kind = 'request'
"""

_EXCHANGES_POSTGRESQL = """
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
  CASE WHEN r.id IS NULL THEN NULL WHEN r.kind = 'error' THEN 1 ELSE 0 END AS is_error,
  CASE WHEN jsonb_typeof(rj.doc -> 'error' -> 'code') = 'number'
    THEN (rj.doc -> 'error' ->> 'code')::numeric END AS error_code,
  rj.doc -> 'error' ->> 'message' AS error_message,
  q.text AS request,
  r.text AS response,
  r.origin AS answered_by
FROM frames AS q
LEFT JOIN LATERAL (
  SELECT f.id, f.seq, f.ts, f.kind, f.text, f.origin FROM frames AS f
  WHERE f.session_id = q.session_id
    AND f.rpc_id = q.rpc_id
    AND f.direction <> q.direction
    AND f.kind IN ('response', 'error')
    AND f.seq > q.seq
  ORDER BY f.seq
  LIMIT 1
) AS r ON TRUE
LEFT JOIN LATERAL (SELECT mcptape_jsonb(r.text) AS doc WHERE r.kind = 'error') AS rj ON TRUE
WHERE q.kind = 'request'
"""

# json_quote(json_extract(...)) yields JSON text for any value (objects stay objects,
# strings get their quotes back); json_type guards a missing member, which must be NULL.
_TOOL_CALLS_SQLITE = """
SELECT
  e.session_id AS session_id,
  CASE WHEN json_valid(e.request) THEN json_extract(e.request, '$.params.name') END AS tool,
  CASE WHEN json_valid(e.request) AND json_type(e.request, '$.params.arguments') IS NOT NULL
    THEN json_quote(json_extract(e.request, '$.params.arguments')) END AS arguments,
  CASE
    WHEN e.response IS NULL THEN NULL
    WHEN e.is_error = 1 THEN 1
    WHEN json_valid(e.response) AND json_type(e.response, '$.result.isError') = 'true' THEN 1
    ELSE 0
  END AS is_error,
  e.latency_ms AS latency_ms,
  e.requested_at AS requested_at,
  CASE
    WHEN NOT json_valid(e.response) THEN NULL
    WHEN e.is_error = 1 THEN json_quote(json_extract(e.response, '$.error'))
    ELSE json_quote(json_extract(e.response, '$.result'))
  END AS result,
  e.request_seq AS request_seq
FROM exchanges AS e
WHERE e.method = 'tools/call'
"""

_TOOL_CALLS_POSTGRESQL = """
SELECT
  e.session_id AS session_id,
  qj.doc -> 'params' ->> 'name' AS tool,
  (qj.doc -> 'params' -> 'arguments')::text AS arguments,
  CASE
    WHEN e.response IS NULL THEN NULL
    WHEN e.is_error = 1 THEN 1
    WHEN rj.doc -> 'result' -> 'isError' = 'true'::jsonb THEN 1
    ELSE 0
  END AS is_error,
  e.latency_ms AS latency_ms,
  e.requested_at AS requested_at,
  (CASE WHEN e.is_error = 1 THEN rj.doc -> 'error' ELSE rj.doc -> 'result' END)::text AS result,
  e.request_seq AS request_seq
FROM exchanges AS e
CROSS JOIN LATERAL (SELECT mcptape_jsonb(e.request) AS doc) AS qj
CROSS JOIN LATERAL (SELECT mcptape_jsonb(e.response) AS doc) AS rj
WHERE e.method = 'tools/call'
"""

_LOG_MESSAGES_SQLITE = """
SELECT
  f.session_id AS session_id,
  f.seq AS seq,
  f.ts AS ts,
  f.direction AS direction,
  CASE WHEN json_valid(f.text) THEN json_extract(f.text, '$.params.level') END AS level,
  CASE WHEN json_valid(f.text) THEN json_extract(f.text, '$.params.logger') END AS logger,
  CASE WHEN json_valid(f.text) AND json_type(f.text, '$.params.data') IS NOT NULL
    THEN json_quote(json_extract(f.text, '$.params.data')) END AS data
FROM frames AS f
WHERE f.method = 'notifications/message' AND f.kind = 'notification'
"""

_LOG_MESSAGES_POSTGRESQL = """
SELECT
  f.session_id AS session_id,
  f.seq AS seq,
  f.ts AS ts,
  f.direction AS direction,
  j.doc -> 'params' ->> 'level' AS level,
  j.doc -> 'params' ->> 'logger' AS logger,
  (j.doc -> 'params' -> 'data')::text AS data
FROM frames AS f
CROSS JOIN LATERAL (SELECT mcptape_jsonb(f.text) AS doc) AS j
WHERE f.method = 'notifications/message' AND f.kind = 'notification'
"""

# The same on both databases: it only reads columns of `exchanges`.
_SERVER_REQUESTS = """
SELECT
  e.session_id AS session_id,
  e.method AS method,
  e.rpc_id AS rpc_id,
  e.request_seq AS request_seq,
  e.requested_at AS requested_at,
  e.latency_ms AS latency_ms,
  e.answered_by AS answered_by,
  e.is_error AS is_error,
  e.request AS request,
  e.response AS response
FROM exchanges AS e
WHERE e.direction = 's2c'
"""

# Views in dependency order: later ones read earlier ones.
VIEWS_V1: Final[tuple[View, ...]] = (
    View("exchanges", _EXCHANGES_SQLITE, _EXCHANGES_POSTGRESQL),
    View("tool_calls", _TOOL_CALLS_SQLITE, _TOOL_CALLS_POSTGRESQL),
    View("log_messages", _LOG_MESSAGES_SQLITE, _LOG_MESSAGES_POSTGRESQL),
    View("server_requests", _SERVER_REQUESTS, _SERVER_REQUESTS),
)


# A cast from text to jsonb that yields NULL instead of failing the whole query
# (cut frames, "\u0000" escapes that jsonb refuses).
PG_JSONB_FUNCTION: Final = """
CREATE OR REPLACE FUNCTION mcptape_jsonb(doc text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $mcptape$
BEGIN
  RETURN doc::jsonb;
EXCEPTION WHEN others THEN
  RETURN NULL;
END;
$mcptape$
"""


def create_statements(dialect: str) -> list[str]:
    """The statements creating VIEWS_V1 (and mcptape_jsonb on PostgreSQL)."""
    return create(VIEWS_V1, dialect, (PG_JSONB_FUNCTION,))


def drop_statements(dialect: str) -> list[str]:
    """The statements dropping every view of 0001 and 0002 (whichever the database holds), and mcptape_jsonb."""
    names = ("server_requests", "log_messages", "tool_calls", "exchanges", "messages")
    return drop(names, dialect, ("mcptape_jsonb(text)",))
