"""The built-in scenarios, as data: an id, what it checks, the tools it needs by name, its check.

A scenario that needs a tool names it (``uses``): server-everything's names, since it is
the server that offers every feature. Against a server without that tool the scenario
is "not offered". Scenarios that need a revision of their own (the handshakes, batches,
2026-07-28's multi-round-trip requests) open their session themselves (``opens``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

from mcptape.probe import checks_basic as basic
from mcptape.probe import checks_client as client
from mcptape.probe import checks_tools as tools
from mcptape.probe import checks_transport as transport
from mcptape.probe.checks_basic import Check
from mcptape.wire.protocol import HANDSHAKE_REVISIONS, MODERN_REVISIONS


@dataclass(frozen=True)
class Scenario:
    """One probe scenario; ``check`` returns the detail of a pass (see :mod:`mcptape.probe.context`)."""

    id: str
    title: str
    check: Check
    uses: str = ""
    opens: bool = False


SCENARIOS: tuple[Scenario, ...] = (
    *(
        Scenario(f"initialize-{v}", f"the initialize handshake at {v}", basic.handshake(v), opens=True)
        for v in HANDSHAKE_REVISIONS
    ),
    *(
        Scenario(f"discover-{v}", f"server/discover at {v}", basic.handshake(v), opens=True)
        for v in MODERN_REVISIONS
    ),
    Scenario("ping", "ping", basic.ping),
    Scenario("tools-list", "tools/list, every page (pagination)", basic.tools_list),
    Scenario("tool-call", "a tool call and its result", basic.tool_call, "get-sum"),
    Scenario("progress", "progress notifications of a tool call", tools.progress, tools.LONG_RUNNING),
    Scenario(
        "cancellation", "notifications/cancelled stops a tool call", tools.cancellation, tools.LONG_RUNNING
    ),
    Scenario(
        "logging", "logging/setLevel at each level, log lines", tools.logging, "toggle-simulated-logging"
    ),
    Scenario("sampling", "sampling/createMessage to the client", client.sampling, "trigger-sampling-request"),
    Scenario(
        "elicitation-form",
        "elicitation/create, form mode",
        client.elicitation_form,
        "trigger-elicitation-request",
    ),
    Scenario(
        "elicitation-url", "elicitation/create, URL mode", client.elicitation_url, "trigger-url-elicitation"
    ),
    Scenario("roots", "roots/list and roots list_changed", client.roots, "get-roots-list"),
    Scenario("resources-read", "resources/list and resources/read", basic.resources_read),
    Scenario(
        "resources-subscribe",
        "resources/subscribe, an update, unsubscribe",
        basic.resources_subscribe,
        "toggle-subscriber-updates",
    ),
    Scenario(
        "resources-list-changed",
        "notifications/resources/list_changed",
        basic.resources_list_changed,
        "gzip-file-as-resource",
    ),
    Scenario("prompts", "prompts/list and prompts/get", basic.prompts),
    Scenario("completion", "completion/complete of a prompt argument", basic.completion),
    Scenario(
        "tasks", "a tool call as a task (tasks/get, list, result)", tools.tasks, "simulate-research-query"
    ),
    Scenario(
        "input-required",
        "2026-07-28 multi-round-trip: input_required, retried",
        client.input_required,
        "trigger-elicitation-request",
        opens=True,
    ),
    Scenario("batch", "a JSON-RPC batch at 2025-03-26", transport.batch, opens=True),
    Scenario("large-1mib", "a 1 MiB request and result", tools.large(1 << 20), "echo"),
    Scenario("large-16mib", "a 16 MiB request and result", tools.large(16 << 20), "echo"),
    Scenario("unicode", "unicode text there and back", tools.unicode, "echo"),
    Scenario("binary", "binary content (base64 image)", tools.binary, "get-tiny-image"),
    Scenario(
        "resumption", "a dropped stream resumed with Last-Event-ID", transport.resumption, tools.LONG_RUNNING
    ),
    Scenario("delete", "DELETE ends the HTTP session", transport.delete),
)


def select(only: Sequence[str] = (), skip: Sequence[str] = ()) -> list[Scenario]:
    """The scenarios whose id matches a pattern of ``only`` (all when empty) and none of ``skip``.

    Patterns are shell globs (``initialize-*``); one that matches nothing is a ValueError
    naming the ids, since a typo would otherwise silently probe less.
    """
    ids = [s.id for s in SCENARIOS]
    for pattern in (*only, *skip):
        if not fnmatch.filter(ids, pattern):
            raise ValueError(f"no scenario matches {pattern!r}; the scenarios: {', '.join(ids)}")
    return [
        s
        for s in SCENARIOS
        if (not only or any(fnmatch.fnmatchcase(s.id, o) for o in only))
        and not any(fnmatch.fnmatchcase(s.id, k) for k in skip)
    ]
