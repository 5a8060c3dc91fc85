"""Protocol facts, in one place: method names, method sets, the ordered revisions, handshake fields.

Every module that needs to know what a method is called, which methods a server sends
as requests, or whether a revision is at least another one asks here (``"initialize"``
was spelt in ten modules, and revisions were compared as strings).

The revisions are those the installed ``mcp`` SDK knows (``mcp_types.version``, whose
import takes over a second, too long for a recorder's start): a test keeps the two
equal. Like the SDK, comparisons go through the ordered tuple, never string order: a
revision nobody knows is newer than nothing.
"""

from __future__ import annotations

from typing import Final

# -- revisions ---------------------------------------------------------------------------

REVISIONS: Final[tuple[str, ...]] = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
"""Every released protocol revision, oldest to newest."""
HANDSHAKE_REVISIONS: Final = REVISIONS[:4]
"""Revisions that begin with the ``initialize`` handshake (and have protocol sessions)."""
MODERN_REVISIONS: Final = REVISIONS[4:]
"""Revisions without a handshake: ``server/discover``, per-request ``_meta``, no sessions."""
LATEST: Final = REVISIONS[-1]
LATEST_HANDSHAKE: Final = HANDSHAKE_REVISIONS[-1]


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is a known revision at least as new as ``minimum`` (a known revision).

    An unknown ``version`` is False: a peer that says something nobody released is
    treated as the oldest, conservatively.
    """
    if minimum not in REVISIONS:
        raise ValueError(f"unknown minimum revision {minimum!r}")
    return version in REVISIONS and REVISIONS.index(version) >= REVISIONS.index(minimum)


def is_modern(version: str | None) -> bool:
    """Whether ``version`` is a revision without a handshake (2026-07-28 and later)."""
    return version in MODERN_REVISIONS


# -- methods -----------------------------------------------------------------------------

INITIALIZE: Final = "initialize"
INITIALIZED: Final = "notifications/initialized"
DISCOVER: Final = "server/discover"
PING: Final = "ping"
CANCELLED: Final = "notifications/cancelled"
PROGRESS: Final = "notifications/progress"
MESSAGE: Final = "notifications/message"  # a log line
TOOLS_LIST: Final = "tools/list"
TOOLS_CALL: Final = "tools/call"
RESOURCES_LIST: Final = "resources/list"
RESOURCES_READ: Final = "resources/read"
RESOURCE_TEMPLATES_LIST: Final = "resources/templates/list"
RESOURCES_SUBSCRIBE: Final = "resources/subscribe"
RESOURCES_UNSUBSCRIBE: Final = "resources/unsubscribe"
PROMPTS_LIST: Final = "prompts/list"
PROMPTS_GET: Final = "prompts/get"
COMPLETE: Final = "completion/complete"
SET_LEVEL: Final = "logging/setLevel"
SAMPLING: Final = "sampling/createMessage"
ELICITATION: Final = "elicitation/create"
ROOTS_LIST: Final = "roots/list"
SUBSCRIPTIONS_LISTEN: Final = "subscriptions/listen"
TASKS_GET: Final = "tasks/get"
TASKS_RESULT: Final = "tasks/result"
TASKS_LIST: Final = "tasks/list"
TASKS_CANCEL: Final = "tasks/cancel"

HELLO_METHODS: Final = frozenset({INITIALIZE, DISCOVER})
"""The requests that open a conversation: the server answers with who it is."""
SERVER_REQUESTS: Final = frozenset({SAMPLING, ELICITATION, ROOTS_LIST})
"""What a server asks the client (answered by the client, or by injection rules)."""
TASK_METHODS: Final = frozenset({TASKS_GET, TASKS_RESULT, TASKS_LIST, TASKS_CANCEL})
LIST_METHODS: Final = frozenset(
    {TOOLS_LIST, RESOURCES_LIST, RESOURCE_TEMPLATES_LIST, PROMPTS_LIST, TASKS_LIST}
)
"""The paginated listings (``cursor`` in, ``nextCursor`` out)."""

TOOLS_LIST_CHANGED: Final = "notifications/tools/list_changed"
RESOURCES_LIST_CHANGED: Final = "notifications/resources/list_changed"
RESOURCES_UPDATED: Final = "notifications/resources/updated"
PROMPTS_LIST_CHANGED: Final = "notifications/prompts/list_changed"
ROOTS_LIST_CHANGED: Final = "notifications/roots/list_changed"
ELICITATION_COMPLETE: Final = "notifications/elicitation/complete"
TASK_STATUS: Final = "notifications/tasks/status"

METHODS: Final = frozenset(
    {
        INITIALIZE, INITIALIZED, DISCOVER, PING, CANCELLED, PROGRESS, MESSAGE,
        TOOLS_LIST, TOOLS_CALL, RESOURCES_LIST, RESOURCES_READ, RESOURCE_TEMPLATES_LIST,
        RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE, PROMPTS_LIST, PROMPTS_GET, COMPLETE,
        SET_LEVEL, SAMPLING, ELICITATION, ROOTS_LIST, SUBSCRIPTIONS_LISTEN, *TASK_METHODS,
        TOOLS_LIST_CHANGED, RESOURCES_LIST_CHANGED, RESOURCES_UPDATED, PROMPTS_LIST_CHANGED,
        ROOTS_LIST_CHANGED, ELICITATION_COMPLETE, TASK_STATUS,
    }
)  # fmt: skip
"""Every method the revisions define (requests and notifications, both directions): what a
misspelt name in a user's rule is compared with."""

# -- fields --------------------------------------------------------------------------------

META_PREFIX: Final = "io.modelcontextprotocol/"
"""2026-07-28: the ``_meta`` keys every request carries (protocol version, client info, capabilities)."""
META_PROTOCOL_VERSION: Final = META_PREFIX + "protocolVersion"
META_CLIENT_INFO: Final = META_PREFIX + "clientInfo"
META_CLIENT_CAPABILITIES: Final = META_PREFIX + "clientCapabilities"
META_SERVER_INFO: Final = META_PREFIX + "serverInfo"
INPUT_REQUIRED: Final = "input_required"
"""2026-07-28: a result's ``resultType`` when the server needs answers first (``inputRequests``,
``requestState``); the client retries with a new id carrying ``inputResponses``."""
