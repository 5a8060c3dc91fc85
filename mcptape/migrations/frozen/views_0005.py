"""The view of revision 0005: `conversations`, every exchange with the conversation it belongs to.

Frozen once released (tests/test_migrations_frozen.py pins this file's hash).

A conversation is what one client did, wherever it was recorded:

- a session with protocol sessions (a handshake revision, or one not known) is one
  conversation, and so are all the session rows of one client session recorded by
  several gateway replicas: they share ``sessions.conversation_id`` (the id is the
  session's own when that is NULL);
- 2026-07-28 traffic has no session: an exchange belongs to the conversation of the
  exchange it continues, following ``requestState`` (a retry of an ``input_required``
  round echoes the state the previous answer minted) and server-minted handles (a
  ``tasks/get``, ``tasks/result`` or ``tasks/cancel`` names the ``taskId`` a call's
  answer minted), back to the first exchange of the chain, across sessions and
  replicas. That first exchange gives the conversation: the trace id of its
  ``traceparent`` (``params._meta.traceparent``, or the HTTP header recorded in
  ``meta``), else its client (``_meta`` client info, within its recorded session),
  else its session.

Conversation ids: a session id (or the shared ``conversation_id``), ``trace-<trace id>``,
or ``client-<session id>-<name>/<version>``. Chains are followed at most 32 steps back.
Existing recordings need no backfill: everything is read from the frames.
"""

from __future__ import annotations

from typing import Final

from mcptape.migrations.frozen.common import View, create, drop

# Revisions without protocol sessions when 0005 was written (wire.protocol.MODERN_REVISIONS).
_SESSIONLESS: Final = "('2026-07-28')"
_MAX_STEPS: Final = 32
_CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"


def _lite(doc: str, path: str, guard: str) -> str:
    return f"(CASE WHEN instr({doc}, '{guard}') > 0 AND json_valid({doc}) THEN json_extract({doc}, '{path}') END)"


def _lite_type(doc: str, path: str, guard: str) -> str:
    return (
        f"(CASE WHEN instr({doc}, '{guard}') > 0 AND json_valid({doc}) THEN json_type({doc}, '{path}') END)"
    )


_LITE_TP = f"""coalesce(
      {_lite("e.request", "$.params._meta.traceparent", "traceparent")},
      {_lite("f.meta", "$.headers.traceparent", "traceparent")},
      {_lite("f.meta", "$.headers.Traceparent", "Traceparent")})"""

_LITE_EX = f"""
  SELECT
    e.session_id AS session_id,
    e.request_seq AS request_seq,
    e.response_seq AS response_seq,
    e.direction AS direction,
    e.method AS method,
    e.rpc_id AS rpc_id,
    e.requested_at AS requested_at,
    e.responded_at AS responded_at,
    e.latency_ms AS latency_ms,
    e.is_error AS is_error,
    e.request AS request,
    e.response AS response,
    s.replica AS replica,
    coalesce(s.conversation_id, s.id) AS session_conversation,
    CASE WHEN s.protocol_version IN {_SESSIONLESS} THEN 0 ELSE 1 END AS stateful,
    (SELECT CASE WHEN length(t.tp) >= 55 AND substr(t.tp, 3, 1) = '-' THEN lower(substr(t.tp, 4, 32)) END
     FROM (SELECT {_LITE_TP} AS tp) AS t) AS trace_id,
    CASE WHEN {_lite_type("e.request", f'$.params._meta."{_CLIENT_INFO_KEY}"', "clientInfo")} = 'object'
      THEN coalesce({_lite("e.request", f'$.params._meta."{_CLIENT_INFO_KEY}".name', "clientInfo")}, '?')
        || '/' || coalesce({_lite("e.request", f'$.params._meta."{_CLIENT_INFO_KEY}".version', "clientInfo")}, '?')
    END AS client,
    CASE
      WHEN {_lite_type("e.request", "$.params.requestState", "requestState")} IS NOT NULL
        THEN 'state:' || {_lite("e.request", "$.params.requestState", "requestState")}
      WHEN e.method IN ('tasks/get', 'tasks/result', 'tasks/cancel')
        AND {_lite_type("e.request", "$.params.taskId", "taskId")} = 'text'
        THEN 'task:' || {_lite("e.request", "$.params.taskId", "taskId")}
    END AS link,
    CASE
      WHEN e.response IS NULL THEN NULL
      WHEN {_lite_type("e.response", "$.result.requestState", "requestState")} IS NOT NULL
        THEN 'state:' || {_lite("e.response", "$.result.requestState", "requestState")}
      WHEN {_lite_type("e.response", "$.result.task.taskId", "taskId")} = 'text'
        THEN 'task:' || {_lite("e.response", "$.result.task.taskId", "taskId")}
    END AS mints
  FROM exchanges AS e
  JOIN sessions AS s ON s.id = e.session_id
  JOIN frames AS f ON f.session_id = e.session_id AND f.seq = e.request_seq"""


def _pg_doc(text: str, guard: str) -> str:
    return f"(CASE WHEN strpos({text}, '{guard}') > 0 THEN mcptape_jsonb({text}) END)"


_PG_EX = f"""
  SELECT
    e.session_id AS session_id,
    e.request_seq AS request_seq,
    e.response_seq AS response_seq,
    e.direction AS direction,
    e.method AS method,
    e.rpc_id AS rpc_id,
    e.requested_at AS requested_at,
    e.responded_at AS responded_at,
    e.latency_ms AS latency_ms,
    e.is_error AS is_error,
    e.request AS request,
    e.response AS response,
    s.replica AS replica,
    coalesce(s.conversation_id, s.id) AS session_conversation,
    CASE WHEN s.protocol_version IN {_SESSIONLESS} THEN 0 ELSE 1 END AS stateful,
    CASE WHEN length(k.tp) >= 55 AND substr(k.tp, 3, 1) = '-' THEN lower(substr(k.tp, 4, 32)) END AS trace_id,
    CASE WHEN jsonb_typeof(k.q -> 'params' -> '_meta' -> '{_CLIENT_INFO_KEY}') = 'object'
      THEN coalesce(k.q -> 'params' -> '_meta' -> '{_CLIENT_INFO_KEY}' ->> 'name', '?')
        || '/' || coalesce(k.q -> 'params' -> '_meta' -> '{_CLIENT_INFO_KEY}' ->> 'version', '?')
    END AS client,
    CASE
      WHEN k.q -> 'params' -> 'requestState' IS NOT NULL
        THEN 'state:' || (k.q -> 'params' ->> 'requestState')
      WHEN e.method IN ('tasks/get', 'tasks/result', 'tasks/cancel')
        AND jsonb_typeof(k.q -> 'params' -> 'taskId') = 'string'
        THEN 'task:' || (k.q -> 'params' ->> 'taskId')
    END AS link,
    CASE
      WHEN k.r -> 'result' -> 'requestState' IS NOT NULL
        THEN 'state:' || (k.r -> 'result' ->> 'requestState')
      WHEN jsonb_typeof(k.r -> 'result' -> 'task' -> 'taskId') = 'string'
        THEN 'task:' || (k.r -> 'result' -> 'task' ->> 'taskId')
    END AS mints
  FROM exchanges AS e
  JOIN sessions AS s ON s.id = e.session_id
  JOIN frames AS f ON f.session_id = e.session_id AND f.seq = e.request_seq
  CROSS JOIN LATERAL (
    SELECT
      CASE WHEN strpos(e.request, 'clientInfo') > 0 OR strpos(e.request, 'requestState') > 0
        OR strpos(e.request, 'taskId') > 0 OR strpos(e.request, 'traceparent') > 0
        THEN mcptape_jsonb(e.request) END AS q,
      CASE WHEN strpos(e.response, 'requestState') > 0 OR strpos(e.response, 'taskId') > 0
        THEN mcptape_jsonb(e.response) END AS r,
      coalesce(
        {_pg_doc("e.request", "traceparent")} -> 'params' -> '_meta' ->> 'traceparent',
        {_pg_doc("f.meta", "raceparent")} -> 'headers' ->> 'traceparent',
        {_pg_doc("f.meta", "raceparent")} -> 'headers' ->> 'Traceparent') AS tp
  ) AS k"""


def _conversations(ex: str, cast_depth: str) -> str:
    """The view's SELECT around the per-exchange keys ``ex`` (one dialect's)."""
    conversation = """CASE
      WHEN {r}.stateful = 1 THEN {r}.session_conversation
      WHEN {r}.trace_id IS NOT NULL THEN 'trace-' || {r}.trace_id
      WHEN {r}.client IS NOT NULL THEN 'client-' || {r}.session_id || '-' || {r}.client
      ELSE {r}.session_conversation
    END"""
    return f"""
WITH RECURSIVE
ex AS ({ex}
),
walk(session_id, request_seq, at_session, at_seq, depth) AS (
  SELECT session_id, request_seq, session_id, request_seq, {cast_depth}
  FROM ex WHERE link IS NOT NULL
  UNION ALL
  SELECT w.session_id, w.request_seq, p.session_id, p.request_seq, w.depth + 1
  FROM walk AS w
  JOIN ex AS c ON c.session_id = w.at_session AND c.request_seq = w.at_seq
  JOIN ex AS p ON p.mints = c.link AND p.requested_at <= c.requested_at
    AND NOT (p.session_id = c.session_id AND p.request_seq = c.request_seq)
  WHERE c.link IS NOT NULL AND w.depth < {_MAX_STEPS}
),
ranked AS (
  SELECT session_id, request_seq, at_session, at_seq,
    row_number() OVER (PARTITION BY session_id, request_seq ORDER BY depth DESC, at_session, at_seq) AS n
  FROM walk
),
roots AS (
  SELECT k.session_id AS session_id, k.request_seq AS request_seq,
    {conversation.format(r="r")} AS conversation_id
  FROM ranked AS k
  JOIN ex AS r ON r.session_id = k.at_session AND r.request_seq = k.at_seq
  WHERE k.n = 1
)
SELECT
  coalesce(rt.conversation_id, {conversation.format(r="x")}) AS conversation_id,
  x.session_id AS session_id,
  x.replica AS replica,
  x.direction AS direction,
  x.method AS method,
  x.rpc_id AS rpc_id,
  x.request_seq AS request_seq,
  x.response_seq AS response_seq,
  x.requested_at AS requested_at,
  x.responded_at AS responded_at,
  x.latency_ms AS latency_ms,
  x.is_error AS is_error,
  x.trace_id AS trace_id,
  x.client AS client,
  x.request AS request,
  x.response AS response
FROM ex AS x
LEFT JOIN roots AS rt ON rt.session_id = x.session_id AND rt.request_seq = x.request_seq
"""


CONVERSATIONS: Final = View(
    "conversations",
    sqlite=_conversations(_LITE_EX, "0"),
    postgresql=_conversations(_PG_EX, "0::integer"),
)
VIEWS_V5: Final = (CONVERSATIONS,)


def create_statements(dialect: str) -> list[str]:
    """The statement creating `conversations` (0004's views stay as they are)."""
    return create(VIEWS_V5, dialect, ())


def drop_statements(dialect: str) -> list[str]:
    """The statement dropping `conversations`."""
    return drop(("conversations",), dialect, ())
