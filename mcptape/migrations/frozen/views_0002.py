"""The views of revision 0002: `messages` (batches unpacked) and the views built on it, frozen.

Released with revision 0002: this SQL must not change (tests/test_migrations_frozen.py
pins this file's hash).

`exchanges` pairs requests and responses inside batches (2025-03-26) by the 0001 rule
extended to batches; `server_requests` adds the 2026-07-28 questions carried by
``input_required`` results (a server answers ``tools/call``, ``prompts/get`` or
``resources/read`` with ``{"resultType": "input_required", "inputRequests": {KEY:
{"method": ..., "params": ...}}, "requestState": ...}`` and the client retries the
request with ``params.inputResponses: {KEY: answer}``); `tool_calls` leaves out the
rounds that only asked for input.
"""

from __future__ import annotations

from typing import Final

from mcptape.migrations.frozen.common import View, create, drop
from mcptape.migrations.frozen.views_0001 import (
    _TOOL_CALLS_POSTGRESQL,
    _TOOL_CALLS_SQLITE,
    PG_JSONB_FUNCTION,
)

# ---------------------------------------------------------------------------------------------
# VIEWS_V2 (revision 0002): batches unpacked into `messages`, 2026-07-28 input requests.
#
# Released with revision 0002: the SQL below must not change any more (a later change
# goes into VIEWS_V3), and neither may the helpers that spell it.
#
# `messages` is `frames` with each batch (kind 'batch', allowed by 2025-03-26) replaced
# by its elements. Only frames of kind 'batch' are parsed as JSON there; every other
# frame passes with the kind, method and id the recorder wrote. `exchanges` and
# `log_messages` read it; the 2026-07-28 parts read `frames`, as that revision has no
# batches.
# ---------------------------------------------------------------------------------------------


def _lite_element(alias: str) -> str:
    # The element's JSON text when it is an object, else NULL: JSON functions given NULL
    # return NULL, where given a bare string element they would fail with "malformed JSON".
    return f"(CASE WHEN {alias}.type = 'object' THEN {alias}.value END)"


def _lite_element_kind(alias: str) -> str:
    """A batch element's kind, by the rules of mcptape.frames.classify_message."""
    v = _lite_element(alias)
    return f"""CASE
    WHEN {alias}.type <> 'object' THEN 'malformed'
    WHEN json_type({v}, '$.method') = 'text'
      THEN CASE WHEN json_type({v}, '$.id') IS NULL THEN 'notification' ELSE 'request' END
    WHEN json_type({v}, '$.method') <> 'null' THEN 'malformed'
    WHEN json_type({v}, '$.id') IS NULL THEN 'malformed'
    WHEN json_type({v}, '$.error') IS NOT NULL THEN 'error'
    WHEN json_type({v}, '$.result') IS NOT NULL THEN 'response'
    ELSE 'malformed'
  END"""


def _lite_element_method(alias: str) -> str:
    v = _lite_element(alias)
    return f"CASE WHEN json_type({v}, '$.method') = 'text' THEN json_extract({v}, '$.method') END"


def _lite_element_id(alias: str) -> str:
    # The id as compact JSON, as mcptape.frames.encode_id writes it: json_extract gives
    # true/false as 1/0 and null as NULL, so those three are spelled by their json_type.
    v = _lite_element(alias)
    return f"""CASE
    WHEN json_type({v}, '$.id') IS NULL THEN NULL
    WHEN json_type({v}, '$.id') IN ('true', 'false', 'null') THEN json_type({v}, '$.id')
    ELSE json_quote(json_extract({v}, '$.id'))
  END"""


def _lite_json_type(text: str) -> str:
    """The JSON type of ``text``, NULL when it is not JSON (json_type would fail the query)."""
    return f"(CASE WHEN json_valid({text}) THEN json_type({text}) END)"


def _lite_array(text: str) -> str:
    """``text`` when it is a JSON array, else an empty array (json_each on bad JSON fails)."""
    return f"CASE WHEN {_lite_json_type(text)} = 'array' THEN {text} ELSE '[]' END"


# A batch frame whose text is not a JSON array (cut because of its size) is one malformed
# message: json_each walks the JSON null instead, which gives one row with a NULL key.
_MESSAGES_SQLITE_V2 = f"""
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
  f.text AS text,
  NULL AS batch_index
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
  CAST(CASE WHEN e.key IS NULL THEN 'malformed' ELSE {_lite_element_kind("e")} END AS TEXT),
  CAST({_lite_element_method("e")} AS TEXT),
  CAST({_lite_element_id("e")} AS TEXT),
  CAST(CASE
    WHEN e.key IS NULL THEN f.text
    WHEN e.type IN ('object', 'array') THEN e.value
    WHEN e.type IN ('true', 'false', 'null') THEN e.type
    ELSE json_quote(e.value)
  END AS TEXT),
  e.key
FROM frames AS f, json_each(CASE WHEN {_lite_json_type("f.text")} = 'array' THEN f.text ELSE 'null' END) AS e
WHERE f.kind = 'batch'
"""

# A reply to request `q` inside a batch frame: an element carrying q's id with no method
# and an error or a result (the response and error kinds of classify_message).
_LITE_REPLY_ELEMENT = f"""coalesce(json_type({_lite_element("e")}, '$.method'), 'null') = 'null'
      AND coalesce(json_type({_lite_element("e")}, '$.error'), json_type({_lite_element("e")}, '$.result'))
        IS NOT NULL
      AND ({_lite_element_id("e")}) = q.rpc_id"""

# The reply frame of request `q`, by the 0001 rule extended to batches: in q's session,
# the first frame after q going the other way that is a response or an error with q's id,
# or a batch holding one. One walk along ix_frames_session_seq from q, as 0001's lookup
# does; only batch frames are parsed on the way.
_LITE_REPLY_FRAME = f"""(
    SELECT f.id FROM frames AS f
    WHERE f.session_id = q.session_id
      AND f.seq > q.seq
      AND f.direction <> q.direction
      AND (
        (f.rpc_id = q.rpc_id AND f.kind IN ('response', 'error'))
        OR (
          f.kind = 'batch'
          AND EXISTS (SELECT 1 FROM json_each({_lite_array("f.text")}) AS e WHERE {_LITE_REPLY_ELEMENT})
        )
      )
    ORDER BY f.seq
    LIMIT 1
  )"""


def _lite_reply_element(column: str) -> str:
    """A column of q's reply element inside batch frame ``r`` (the first, should ids repeat)."""
    return (
        f"(SELECT {column} FROM json_each({_lite_array('r.text')}) AS e"
        f" WHERE {_LITE_REPLY_ELEMENT} ORDER BY e.key LIMIT 1)"
    )


_EXCHANGES_SQLITE_V2 = f"""
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
    r.seq AS reply_seq,
    r.ts AS reply_ts,
    r.origin AS reply_origin,
    CASE WHEN r.kind = 'batch' THEN {_lite_reply_element("e.key")} END AS reply_batch_index,
    CASE WHEN r.kind = 'batch' THEN {_lite_reply_element("e.value")} ELSE r.text END AS reply_text,
    CASE
      WHEN r.id IS NULL OR r.kind <> 'batch' THEN r.kind
      WHEN {_lite_reply_element("json_type(e.value, '$.error')")} IS NOT NULL THEN 'error'
      ELSE 'response'
    END AS reply_kind
  FROM messages AS q
  LEFT JOIN frames AS r ON r.id = {_LITE_REPLY_FRAME}
  WHERE q.kind = 'request'
) AS x
"""


def _lite_asks_for_input(text: str) -> str:
    """True when the response ``text`` is an input_required result (NULL for no response).

    instr() spares the JSON parse of every result that cannot be one.
    """
    return f"""(CASE
    WHEN instr({text}, 'input_required') > 0 AND json_valid({text})
    THEN json_extract({text}, '$.result.resultType')
  END) = 'input_required'"""


# A 2026-07-28 round that asked for input and was retried stays in `exchanges` (and its
# questions are in `server_requests`), but it is not a tool call of its own: the retry,
# a later request of the same method in the session echoing the round's requestState
# (or, without one, answering one of its inputRequests), carries the call's result. A
# round nobody retried stays, with its input_required result.
_TOOL_CALLS_SQLITE_V2 = (
    _TOOL_CALLS_SQLITE.rstrip()
    + f"""
  AND NOT coalesce(CASE WHEN {_lite_asks_for_input("e.response")} THEN EXISTS (
    SELECT 1 FROM frames AS f
    WHERE f.session_id = e.session_id
      AND f.direction = 'c2s'
      AND f.kind = 'request'
      AND f.method = e.method
      AND f.seq > e.response_seq
      AND json_valid(f.text)
      AND CASE
        WHEN json_type(e.response, '$.result.requestState') IS NOT NULL
          THEN (CASE WHEN json_valid(f.text) THEN json_extract(f.text, '$.params.requestState') END)
            = json_extract(e.response, '$.result.requestState')
        ELSE EXISTS (
          SELECT 1 FROM json_each(e.response, '$.result.inputRequests') AS k
          JOIN json_each(CASE WHEN json_valid(f.text) THEN f.text ELSE '{{}}' END, '$.params.inputResponses') AS a
            ON a.key = k.key
        )
      END
  ) END, 0)
"""
)

_LOG_MESSAGES_SQLITE_V2 = """
SELECT
  m.session_id AS session_id,
  m.seq AS seq,
  m.ts AS ts,
  m.direction AS direction,
  CASE WHEN json_valid(m.text) THEN json_extract(m.text, '$.params.level') END AS level,
  CASE WHEN json_valid(m.text) THEN json_extract(m.text, '$.params.logger') END AS logger,
  CASE WHEN json_valid(m.text) AND json_type(m.text, '$.params.data') IS NOT NULL
    THEN json_quote(json_extract(m.text, '$.params.data')) END AS data
FROM messages AS m
WHERE m.method = 'notifications/message' AND m.kind = 'notification'
"""

# The classic rows: requests the server sent, as `exchanges` pairs them.
_SERVER_REQUESTS_CLASSIC = """
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
  e.response AS response,
  'request' AS style,
  {null_text} AS input_key
FROM exchanges AS e
WHERE e.direction = 's2c'
"""

# 2026-07-28: each entry KEY of the inputRequests of an input_required result is a
# question to the client; its answer is the first later request, of the method the result
# answered, whose params.inputResponses has KEY and which echoes the result's requestState
# when it had one (two calls in flight may ask under the same key). The protocol has no
# batches any more, so these rows come from frames, not messages; and only responses that
# mention input_required are parsed.
_SERVER_REQUESTS_SQLITE_V2 = (
    _SERVER_REQUESTS_CLASSIC.format(null_text="NULL")
    + f"""UNION ALL
SELECT
  r.session_id,
  json_extract(i.value, '$.method'),
  NULL,
  r.seq,
  r.ts,
  (a.ts - r.ts) * 1000.0,
  a.origin,
  CASE WHEN a.id IS NULL THEN NULL ELSE 0 END,
  i.value,
  CASE WHEN a.id IS NOT NULL THEN (
    SELECT CASE WHEN ir.type IN ('object', 'array') THEN ir.value ELSE json_quote(ir.value) END
    FROM json_each(a.text, '$.params.inputResponses') AS ir
    WHERE ir.key = i.key
  ) END,
  'input_required',
  i.key
FROM frames AS r
JOIN json_each(
  coalesce(
    CASE WHEN {_lite_asks_for_input("r.text")} THEN
      CASE WHEN json_type(r.text, '$.result.inputRequests') = 'object' THEN r.text END
    END,
    '{{}}'
  ),
  '$.result.inputRequests'
) AS i
LEFT JOIN frames AS a ON a.id = (
  SELECT f.id FROM frames AS f
  WHERE f.session_id = r.session_id
    AND f.direction = 'c2s'
    AND f.kind = 'request'
    AND f.seq > r.seq
    AND f.method = (
      SELECT q.method FROM frames AS q
      WHERE q.session_id = r.session_id
        AND q.rpc_id = r.rpc_id
        AND q.direction = 'c2s'
        AND q.kind = 'request'
        AND q.seq < r.seq
      ORDER BY q.seq DESC
      LIMIT 1
    )
    AND EXISTS (
      SELECT 1
      FROM json_each(CASE WHEN json_valid(f.text) THEN f.text ELSE '{{}}' END, '$.params.inputResponses') AS ir
      WHERE ir.key = i.key
    )
    AND (
      json_type(r.text, '$.result.requestState') IS NULL
      OR (CASE WHEN json_valid(f.text) THEN json_extract(f.text, '$.params.requestState') END)
        = json_extract(r.text, '$.result.requestState')
    )
  ORDER BY f.seq
  LIMIT 1
)
WHERE r.kind = 'response' AND r.direction = 's2c' AND i.type = 'object'
"""
)


def _pg_element_kind(doc: str) -> str:
    """A batch element's kind (``doc`` is its jsonb), by the rules of classify_message."""
    return f"""CASE
    WHEN jsonb_typeof({doc}) <> 'object' THEN 'malformed'
    WHEN jsonb_typeof({doc} -> 'method') = 'string'
      THEN CASE WHEN {doc} -> 'id' IS NULL THEN 'notification' ELSE 'request' END
    WHEN jsonb_typeof({doc} -> 'method') <> 'null' THEN 'malformed'
    WHEN {doc} -> 'id' IS NULL THEN 'malformed'
    WHEN {doc} -> 'error' IS NOT NULL THEN 'error'
    WHEN {doc} -> 'result' IS NOT NULL THEN 'response'
    ELSE 'malformed'
  END"""


def _pg_elements(text: str, alias: str) -> str:
    """FROM items giving the elements of the batch ``text`` as ``alias(doc, n)``, n from 1."""
    return (
        f"CROSS JOIN LATERAL (SELECT mcptape_jsonb({text}) AS doc) AS {alias}_json\n"
        f"CROSS JOIN LATERAL jsonb_array_elements(\n"
        f"  CASE WHEN jsonb_typeof({alias}_json.doc) = 'array' THEN {alias}_json.doc END\n"
        f") WITH ORDINALITY AS {alias}(doc, n)"
    )


# jsonb spells an element again (`{"id": 1, "jsonrpc": "2.0"}`, keys reordered), where
# SQLite keeps its text minified in the original key order: the same JSON either way.
_MESSAGES_POSTGRESQL_V2 = f"""
SELECT
  f.id AS frame_id,
  f.session_id AS session_id,
  f.seq AS seq,
  f.ts AS ts,
  f.direction AS direction,
  f.origin AS origin,
  (CASE WHEN f.kind = 'batch' THEN 'malformed' ELSE f.kind END)::text AS kind,
  f.method AS method,
  f.rpc_id AS rpc_id,
  f.text AS text,
  NULL::bigint AS batch_index
FROM frames AS f
WHERE f.kind <> 'batch' OR jsonb_typeof(mcptape_jsonb(f.text)) IS DISTINCT FROM 'array'
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

_EXCHANGES_POSTGRESQL_V2 = f"""
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
  CASE WHEN r.id IS NULL THEN NULL WHEN rx.kind = 'error' THEN 1 ELSE 0 END AS is_error,
  CASE WHEN jsonb_typeof(rj.doc -> 'error' -> 'code') = 'number'
    THEN (rj.doc -> 'error' ->> 'code')::numeric END AS error_code,
  rj.doc -> 'error' ->> 'message' AS error_message,
  q.text AS request,
  rx.text AS response,
  r.origin AS answered_by,
  q.batch_index AS request_batch_index,
  b.batch_index AS response_batch_index
FROM messages AS q
LEFT JOIN LATERAL (
  SELECT f.id, f.seq FROM frames AS f
  WHERE f.session_id = q.session_id
    AND f.rpc_id = q.rpc_id
    AND f.direction <> q.direction
    AND f.kind IN ('response', 'error')
    AND f.seq > q.seq
  ORDER BY f.seq
  LIMIT 1
) AS p ON TRUE
LEFT JOIN LATERAL (
  SELECT bf.id, be.n - 1 AS batch_index, be.doc FROM frames AS bf
  {_pg_elements("bf.text", "be")}
  WHERE bf.session_id = q.session_id
    AND bf.seq > q.seq
    AND bf.seq < coalesce(p.seq, 2147483647)
    AND bf.kind = 'batch'
    AND bf.direction <> q.direction
    AND ({_pg_element_kind("be.doc")}) IN ('response', 'error')
    AND (be.doc -> 'id')::text = q.rpc_id
  ORDER BY bf.seq, be.n
  LIMIT 1
) AS b ON TRUE
LEFT JOIN frames AS r ON r.id = coalesce(b.id, p.id)
CROSS JOIN LATERAL (
  SELECT
    CASE WHEN b.id IS NULL THEN r.text ELSE b.doc::text END AS text,
    CASE WHEN b.id IS NULL THEN r.kind WHEN b.doc -> 'error' IS NOT NULL THEN 'error' ELSE 'response' END
      AS kind
) AS rx
LEFT JOIN LATERAL (
  SELECT coalesce(b.doc, mcptape_jsonb(r.text)) AS doc WHERE rx.kind = 'error'
) AS rj ON TRUE
WHERE q.kind = 'request'
"""

_TOOL_CALLS_POSTGRESQL_V2 = (
    _TOOL_CALLS_POSTGRESQL.rstrip()
    + """
  AND NOT coalesce(CASE
    WHEN strpos(e.response, 'input_required') > 0 AND rj.doc -> 'result' ->> 'resultType' = 'input_required'
    THEN EXISTS (
    SELECT 1 FROM frames AS f
    CROSS JOIN LATERAL (SELECT mcptape_jsonb(f.text) AS doc) AS fj
    WHERE f.session_id = e.session_id
      AND f.direction = 'c2s'
      AND f.kind = 'request'
      AND f.method = e.method
      AND f.seq > e.response_seq
      AND CASE
        WHEN rj.doc -> 'result' -> 'requestState' IS NOT NULL
          THEN fj.doc -> 'params' -> 'requestState' = rj.doc -> 'result' -> 'requestState'
        ELSE EXISTS (
          SELECT 1 FROM jsonb_object_keys(
            CASE WHEN jsonb_typeof(rj.doc -> 'result' -> 'inputRequests') = 'object'
              THEN rj.doc -> 'result' -> 'inputRequests' END
          ) AS k
          WHERE fj.doc -> 'params' -> 'inputResponses' -> k IS NOT NULL
        )
      END
  ) END, FALSE)
"""
)

_LOG_MESSAGES_POSTGRESQL_V2 = """
SELECT
  m.session_id AS session_id,
  m.seq AS seq,
  m.ts AS ts,
  m.direction AS direction,
  j.doc -> 'params' ->> 'level' AS level,
  j.doc -> 'params' ->> 'logger' AS logger,
  (j.doc -> 'params' -> 'data')::text AS data
FROM messages AS m
CROSS JOIN LATERAL (SELECT mcptape_jsonb(m.text) AS doc) AS j
WHERE m.method = 'notifications/message' AND m.kind = 'notification'
"""

_SERVER_REQUESTS_POSTGRESQL_V2 = (
    _SERVER_REQUESTS_CLASSIC.format(null_text="NULL::text")
    + """UNION ALL
SELECT
  r.session_id,
  i.value ->> 'method',
  NULL,
  r.seq,
  r.ts,
  (a.ts - r.ts) * 1000.0,
  a.origin,
  CASE WHEN a.id IS NULL THEN NULL ELSE 0 END,
  i.value::text,
  a.answer::text,
  'input_required',
  i.key
FROM frames AS r
CROSS JOIN LATERAL (SELECT mcptape_jsonb(r.text) AS doc) AS rj
CROSS JOIN LATERAL jsonb_each(
  CASE WHEN jsonb_typeof(rj.doc -> 'result' -> 'inputRequests') = 'object'
    THEN rj.doc -> 'result' -> 'inputRequests' END
) AS i
LEFT JOIN LATERAL (
  SELECT q.method FROM frames AS q
  WHERE q.session_id = r.session_id
    AND q.rpc_id = r.rpc_id
    AND q.direction = 'c2s'
    AND q.kind = 'request'
    AND q.seq < r.seq
  ORDER BY q.seq DESC
  LIMIT 1
) AS q ON TRUE
LEFT JOIN LATERAL (
  SELECT f.id, f.ts, f.origin, fj.doc -> 'params' -> 'inputResponses' -> i.key AS answer
  FROM frames AS f
  CROSS JOIN LATERAL (SELECT mcptape_jsonb(f.text) AS doc) AS fj
  WHERE f.session_id = r.session_id
    AND f.direction = 'c2s'
    AND f.kind = 'request'
    AND f.method = q.method
    AND f.seq > r.seq
    AND fj.doc -> 'params' -> 'inputResponses' -> i.key IS NOT NULL
    AND (
      rj.doc -> 'result' -> 'requestState' IS NULL
      OR fj.doc -> 'params' -> 'requestState' = rj.doc -> 'result' -> 'requestState'
    )
  ORDER BY f.seq
  LIMIT 1
) AS a ON TRUE
WHERE r.kind = 'response'
  AND r.direction = 's2c'
  AND strpos(r.text, 'input_required') > 0
  AND rj.doc -> 'result' ->> 'resultType' = 'input_required'
  AND jsonb_typeof(i.value) = 'object'
"""
)

# Views in dependency order: later ones read earlier ones.
VIEWS_V2: Final[tuple[View, ...]] = (
    View("messages", _MESSAGES_SQLITE_V2, _MESSAGES_POSTGRESQL_V2),
    View("exchanges", _EXCHANGES_SQLITE_V2, _EXCHANGES_POSTGRESQL_V2),
    View("tool_calls", _TOOL_CALLS_SQLITE_V2, _TOOL_CALLS_POSTGRESQL_V2),
    View("log_messages", _LOG_MESSAGES_SQLITE_V2, _LOG_MESSAGES_POSTGRESQL_V2),
    View("server_requests", _SERVER_REQUESTS_SQLITE_V2, _SERVER_REQUESTS_POSTGRESQL_V2),
)


# From VIEWS_V2 on the function is PARALLEL UNSAFE: its EXCEPTION block opens a
# subtransaction, which PostgreSQL refuses in a parallel plan ("cannot start
# subtransactions during a parallel operation"), and PARALLEL SAFE let the planner choose
# one for a large table.
PG_JSONB_FUNCTION_V2: Final = PG_JSONB_FUNCTION.replace("PARALLEL SAFE", "PARALLEL UNSAFE")


def create_statements(dialect: str) -> list[str]:
    """The statements creating VIEWS_V2 (and mcptape_jsonb on PostgreSQL)."""
    return create(VIEWS_V2, dialect, (PG_JSONB_FUNCTION_V2,))


def drop_statements(dialect: str) -> list[str]:
    """The statements dropping every view of 0001 and 0002, and mcptape_jsonb."""
    names = ("server_requests", "log_messages", "tool_calls", "exchanges", "messages")
    return drop(names, dialect, ("mcptape_jsonb(text)",))
