"""What a scenario works with: one session of the client core, what the server sent, and its verdicts.

A scenario is an async function of a :class:`Probe`; it returns the detail of a pass,
or raises :class:`NotOffered` (the server has no capability or no tool for it) or
:class:`Failed`. Any other :class:`~mcptape.client.errors.ClientError` is a failure
with the error's words.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcptape.client.errors import ClientError, ToolError
from mcptape.client.handlers import request_with_input
from mcptape.client.methods import list_all, missing_capability, tool_text
from mcptape.probe.answers import ProbeAnswers
from mcptape.wire.frame import Frame
from mcptape.wire.protocol import LATEST_HANDSHAKE, TOOLS_CALL, TOOLS_LIST, at_least

if TYPE_CHECKING:
    from mcptape.client.negotiate import ServerHello
    from mcptape.client.session import CallSession

PASS = "pass"
FAIL = "fail"
NOT_OFFERED = "not offered"
STATUSES = (PASS, FAIL, NOT_OFFERED)


class NotOffered(Exception):
    """The server does not offer what the scenario needs: not a failure."""


class Failed(Exception):
    """The scenario ran and the feature did not work."""


@dataclass
class Seen:
    """One message the server sent the client, when it came, and the frame that carried it."""

    at: float
    kind: str  # "notification" or "serverRequest"
    body: dict[str, Any]


@dataclass(frozen=True)
class Arrival:
    """How one frame from the server came: its kind, method, id and transport metadata."""

    kind: str
    method: str | None
    rpc_id: str | None
    meta: dict[str, Any]


@dataclass
class Probe:
    """One scenario's session and helpers; ``session`` is set once the runner opened it."""

    version: str | None
    limit: float
    answers: ProbeAnswers = field(default_factory=ProbeAnswers)
    session: CallSession | None = None
    seen: list[Seen] = field(default_factory=list)
    arrivals: list[Arrival] = field(default_factory=list)
    _news: asyncio.Event = field(default_factory=asyncio.Event)
    _tools: list[dict[str, Any]] | None = None
    opener: Callable[[str | None], Any] | None = None  # (revision) -> an opened CallSession

    # -- what the session reports -------------------------------------------------------

    def on_message(self, kind: str, body: Any) -> None:
        self.seen.append(Seen(time.monotonic(), kind, body))
        self._news.set()

    def on_frame(self, frame: Frame) -> None:
        # Only how it came is kept: bodies of 16 MiB stay with the core.
        self.arrivals.append(Arrival(frame.kind, frame.method, frame.rpc_id, dict(frame.meta or {})))

    # -- the session ------------------------------------------------------------------------

    async def open(self, version: str | None = None) -> ServerHello:
        """Open the session at ``version`` (default: the probe's); raises a ClientError."""
        assert self.opener is not None
        self.session = await self.opener(version or self.version)
        hello = self.session.hello
        assert hello is not None
        return hello

    @property
    def hello(self) -> ServerHello:
        assert self.session is not None and self.session.hello is not None
        return self.session.hello

    @property
    def revision(self) -> str:
        return self.hello.protocol_version

    def need_capability(self, method: str) -> None:
        missing = missing_capability(method, self.hello.capabilities)
        if missing is not None:
            raise NotOffered(f"no {missing} capability")

    def need_revision(self, minimum: str) -> None:
        if not at_least(self.revision, minimum):
            raise NotOffered(f"needs {minimum}; the server speaks {self.revision}")

    async def request(self, method: str, params: Any = None, **kw: Any) -> Any:
        assert self.session is not None
        return await self.session.core.request(method, params, **kw)

    async def tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists (every page), once per session."""
        if self._tools is None:
            self.need_capability(TOOLS_LIST)
            assert self.session is not None
            listed = await list_all(self.session, TOOLS_LIST, None)
            self._tools = [t for t in listed["tools"] if isinstance(t, dict)]
        return self._tools

    async def tool(self, name: str, why: str = "", takes: tuple[str, ...] = ()) -> dict[str, Any]:
        """The tool called ``name``, or NotOffered (``why``: when a server lists it).

        ``takes``: the arguments the scenario passes (server-everything's); a tool of that
        name whose input schema has other properties is another tool, so not offered either.
        """
        for tool in await self.tools():
            if tool.get("name") == name:
                schema = tool.get("inputSchema")
                properties = schema.get("properties") if isinstance(schema, dict) else None
                missing = [a for a in takes if not isinstance(properties, dict) or a not in properties]
                if missing:
                    raise NotOffered(f"its {name} takes no {missing[0]!r}")
                return tool
        raise NotOffered(f"no {name} tool" + (f" ({why})" if why else ""))

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        progress: bool = False,
        sent: Callable[[int], None] | None = None,
    ) -> Any:
        """``tools/call`` as ``call`` runs it (answering 2026-07-28 input requests); a tool error fails.

        ``sent`` learns each request id used (a progress token is its request's id).
        """
        assert self.session is not None
        core = self.session.core
        core.tool_in_flight = name
        try:
            result = await request_with_input(
                core, TOOLS_CALL, {"name": name, "arguments": arguments}, progress=progress, sent=sent
            )
        finally:
            core.tool_in_flight = None
        if isinstance(result, dict) and result.get("isError") is True:
            raise Failed(f"{name} answered isError: {short(tool_text(result))}")
        return result

    # -- waiting for what the server sends ---------------------------------------------------

    async def wait_for(self, match: Callable[[Seen], bool], within: float, since: int = 0) -> Seen | None:
        """The first message from number ``since`` on that ``match``es, waiting at most ``within`` s."""
        deadline = time.monotonic() + within
        checked = since
        while True:
            for item in self.seen[checked:]:
                if match(item):
                    return item
            checked = len(self.seen)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._news.clear()
            try:
                await asyncio.wait_for(self._news.wait(), left)
            except TimeoutError:
                return None

    def notes(self, method: str, since: int = 0) -> list[dict[str, Any]]:
        """The params of each ``method`` notification from number ``since`` on."""
        return [
            s.body.get("params") or {}
            for s in self.seen[since:]
            if s.kind == "notification" and s.body.get("method") == method
        ]


def text_of(result: Any) -> str:
    """A tool result's text blocks, joined."""
    return tool_text(result) if isinstance(result, dict) else ""


def short(text: str, limit: int = 100) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def failure_of(exc: BaseException) -> str:
    """A ClientError as a verdict's detail."""
    if isinstance(exc, ToolError):
        return f"isError: {short(exc.message)}"
    if isinstance(exc, ClientError):
        category = exc.category + (f" {exc.code}" if exc.code is not None else "")
        return f"{category}: {short(exc.message)}"
    return f"{type(exc).__name__}: {short(str(exc))}"


DEFAULT_REVISION = LATEST_HANDSHAKE
