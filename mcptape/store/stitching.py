"""The `conversations` view's keys of one exchange, read in Python: what follows a conversation live (pure).

The view (mcptape/migrations/frozen/views_0005.py) stitches 2026-07-28 exchanges into
conversations in SQL, over everything recorded; `mcptape tail` cannot run it at every
poll. These functions read the same keys from one exchange's messages, so a follower
can tell, as each request lands, whether it belongs to a conversation:

- :func:`own_conversation`: the conversation an exchange starts (its session's, for a
  revision with protocol sessions; else ``trace-<trace id>`` of its ``traceparent``,
  else ``client-<session>-<name>/<version>`` of its ``_meta`` client info, else its
  session's);
- :func:`link`: what a request continues (``state:`` the ``requestState`` it echoes,
  ``task:`` the task id a ``tasks/*`` request names), and :func:`mint`: what an answer
  hands out for a later request to continue.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from mcptape.wire.protocol import META_PREFIX, TASKS_CANCEL, TASKS_GET, TASKS_RESULT, is_modern

CLIENT_INFO: Final = META_PREFIX + "clientInfo"
PROTOCOL_VERSION: Final = META_PREFIX + "protocolVersion"
_TASK_LINKS: Final = frozenset({TASKS_GET, TASKS_RESULT, TASKS_CANCEL})


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    """A JSON value as the view concatenates it: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def trace_id(request: Any, meta: Any = None) -> str | None:
    """The trace id of a request's W3C ``traceparent`` (``params._meta``, else the HTTP header
    recorded in the frame's ``meta``), lowercased; None without a well-formed one."""
    parent = _dict(_dict(_dict(request).get("params")).get("_meta")).get("traceparent")
    if parent is None:
        headers = _dict(_dict(meta).get("headers"))
        parent = headers.get("traceparent", headers.get("Traceparent"))
    if not isinstance(parent, str) or len(parent) < 55 or parent[2] != "-":
        return None
    return parent[3:35].lower()


def client_key(request: Any) -> str | None:
    """``name/version`` of the client info in a request's ``_meta`` (``?`` for a missing part)."""
    info = _dict(_dict(_dict(request).get("params")).get("_meta")).get(CLIENT_INFO)
    if not isinstance(info, dict):
        return None
    name, version = info.get("name"), info.get("version")
    return f"{name if isinstance(name, str) else '?'}/{version if isinstance(version, str) else '?'}"


def link(method: str | None, request: Any) -> str | None:
    """What a request continues: ``state:<requestState>``, or ``task:<taskId>`` for a task request."""
    params = _dict(_dict(request).get("params"))
    if "requestState" in params and params["requestState"] is not None:
        return "state:" + _text(params["requestState"])
    task = params.get("taskId")
    if method in _TASK_LINKS and isinstance(task, str):
        return "task:" + task
    return None


def mint(response: Any) -> str | None:
    """What an answer hands out: ``state:<requestState>`` of an ``input_required`` round, or
    ``task:<taskId>`` of a task it started."""
    result = _dict(_dict(response).get("result"))
    if "requestState" in result and result["requestState"] is not None:
        return "state:" + _text(result["requestState"])
    task = _dict(result.get("task")).get("taskId")
    return "task:" + task if isinstance(task, str) else None


def own_conversation(session: dict[str, Any], request: Any, meta: Any = None) -> str:
    """The conversation an exchange of ``session`` (a sessions row) starts, as the view names it.

    A row read before the recorder stored its protocol revision (it learns it from this
    very request) takes the revision the request's ``_meta`` names."""
    own = session.get("conversation_id") or session["id"]
    version = session.get("protocol_version")
    if version is None:
        version = _dict(_dict(_dict(request).get("params")).get("_meta")).get(PROTOCOL_VERSION)
    if not is_modern(version if isinstance(version, str) else None):
        return str(own)
    traced = trace_id(request, meta)
    if traced is not None:
        return f"trace-{traced}"
    client = client_key(request)
    if client is not None:
        return f"client-{session['id']}-{client}"
    return str(own)
