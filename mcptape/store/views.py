"""The SQL views people query, and where their definitions live.

=================  ==========================================================================
``messages``       ``frames`` with each batch (2025-03-26) replaced by its elements
``exchanges``      a request with its reply: latency, error code and message, who answered
``tool_calls``     ``tools/call`` exchanges: tool, arguments, result, ``is_error``
``log_messages``   ``notifications/message``: level, logger, data
``server_requests``  requests the server sent (sampling, elicitation, roots) and the
                   2026-07-28 questions of ``input_required`` results, with who answered
``http_frames``    frames that travelled over HTTP, with their method, path, stream, status,
                   SSE event id and the headers that matter
``conversations``  every exchange with its conversation: a session (all replicas' rows of
                   it), or for 2026-07-28 traffic a trace, a ``requestState`` or task chain,
                   a client
=================  ==========================================================================

Views are created by migrations, and the SQL a released migration runs never changes:
each set lives in its own frozen module, :mod:`mcptape.migrations.frozen.views_0001`
and so on (a later change adds a module and a revision). :data:`CURRENT` is the set the
newest revision creates. Since revision 0003 a reply's ``method`` is its request's,
and `exchanges` joins on the pairs the writer stores (``frames.request_seq`` and
``batch_replies``), so a view query costs about one scan of ``frames``. Since 0004 a
request a proxy edit replaced is left out of `exchanges` (its replacement carries the
exchange). 0005 adds `conversations`.

Every view has a SQLite and a PostgreSQL body. Both read the frame ``text`` as JSON
defensively: a frame cut because of its size is not valid JSON any more, and one bad
frame must not make a whole query fail. SQLite guards with ``json_valid``; PostgreSQL
goes through ``mcptape_jsonb(text)``, a function that returns NULL instead of raising,
wherever a plain cast could fail (views_0004 says when it cannot).
"""

from __future__ import annotations

import re
from typing import Final

from mcptape.migrations.frozen import views_0004, views_0005
from mcptape.migrations.frozen.common import View

CURRENT: Final[tuple[View, ...]] = views_0004.VIEWS_V4 + views_0005.VIEWS_V5
VIEW_NAMES: Final = tuple(view.name for view in CURRENT)

__all__ = ["CURRENT", "VIEW_NAMES", "View", "descriptions"]


def descriptions() -> dict[str, str]:
    """Each view's one-line description, as the table of this module's docstring gives it."""
    found: dict[str, str] = {}
    name = None
    for line in (__doc__ or "").split("\n\n", 2)[1].splitlines():
        match = re.match(r"^``(\w+)``\s+(.*)$", line)
        if match:
            name = match.group(1)
            found[name] = match.group(2).strip()
        elif name is not None and line.startswith(" ") and line.strip():
            found[name] += " " + line.strip()
    return {view: found.get(view, "") for view in VIEW_NAMES}
