"""The web client's sessions: one :class:`~mcptape.client.interactive.Interactive` per page connection.

:class:`ClientHub` is what `mcptape ui` serves the client page with: the registry (the
only servers a page can start), the URL patterns ``--allow-url`` lets a page reach,
the rules and roots of the command line, and the connections. A page connects with a
registry name or an allowed URL (:func:`target_for` says no to anything else, before
anything is started), gets a connection id, follows its events on one server-sent
event stream, and drives it with small JSON posts (:mod:`mcptape.view.client_api`).

A connection keeps its last :data:`EVENTS_KEPT` events, numbered, so a stream that
reconnects (``Last-Event-ID``) misses nothing. A connection whose page went away (no
event stream for :data:`ORPHAN_S`) is closed: its server stops and its recording ends.
At most ``max_connections`` are open at once (each may be a server process).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import itertools
import secrets
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from mcptape.client.interactive import Interactive
from mcptape.client.session import Target

if TYPE_CHECKING:
    from mcptape.config.registry import UpstreamSpec
    from mcptape.proxy.link import Link
    from mcptape.rules.rules import Rules

EVENTS_KEPT: Final = 5000
ORPHAN_S: Final = 30.0
MAX_CONNECTIONS: Final = 8
# What a page may say when it connects: a name or a URL, never a command, env or cwd.
CONNECT_KEYS: Final = frozenset(
    {"server", "url", "transport", "protocolVersion", "sampling", "elicitation", "rules", "roots", "ask"}
)


class Refused(ValueError):
    """A page asked for something the client does not do (HTTP ``status``, one-line message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def target_for(
    body: dict[str, Any], registry: dict[str, UpstreamSpec], allow_urls: tuple[str, ...]
) -> Target:
    """The server a page's connect request names: a registry entry, or a URL ``--allow-url`` allows.

    Raises :class:`Refused` for anything else (a command, an unknown name, a URL not allowed)."""
    unknown = sorted(set(body) - CONNECT_KEYS)
    if unknown:
        raise Refused(
            400,
            f"a page names a registry entry (server) or an allowed URL (url), never {', '.join(unknown)}: "
            "commands are started only from the registry (--config)",
        )
    name, url = body.get("server"), body.get("url")
    if (name is None) == (url is None):
        raise Refused(400, "name one server: a registry entry (server) or a URL (url)")
    if name is not None:
        spec = registry.get(name) if isinstance(name, str) else None
        if spec is None:
            raise Refused(404, f"no registry entry {name!r}; known: {', '.join(registry) or 'none'}")
        return _spec_target(spec)
    if not isinstance(url, str):
        raise Refused(400, "url must be a string")
    if not allow_urls:
        raise Refused(403, "this viewer connects to registry entries only; start it with --allow-url PATTERN")
    if not any(fnmatch.fnmatchcase(url, pattern) for pattern in allow_urls):
        raise Refused(403, f"{url!r} is not allowed by --allow-url ({', '.join(allow_urls)})")
    from mcptape.config.registry import url_problem
    from mcptape.redact import redact_url

    problem = url_problem(url)
    if problem is not None:
        raise Refused(400, problem)
    transport = body.get("transport") or "http"
    if transport not in ("http", "sse"):
        raise Refused(400, "transport is http or sse")
    return Target(redact_url(url), url=url, transport=transport)


def _spec_target(spec: UpstreamSpec) -> Target:
    if spec.url is not None:
        from mcptape.proxy.http.headers import HeaderError, expand_headers

        try:
            headers = expand_headers(dict(spec.headers or {}))
        except HeaderError as exc:
            raise Refused(400, f"registry entry {spec.name!r}: {exc}") from None
        return Target(
            spec.describe(), url=spec.url, transport=spec.transport, headers=headers, name=spec.name
        )
    assert spec.command is not None
    return Target(spec.describe(), argv=list(spec.command), env=spec.env, cwd=spec.cwd, name=spec.name)


@dataclass(eq=False)
class PageClient:
    """One page connection: its session, its numbered events, who follows them."""

    id: str
    interactive: Interactive
    events: deque[tuple[int, str, Any]] = field(default_factory=lambda: deque(maxlen=EVENTS_KEPT))
    listeners: int = 0
    alone_since: float = field(default_factory=time.monotonic)
    closed: bool = False

    def __post_init__(self) -> None:
        self._numbers = itertools.count(1)
        self._changed = asyncio.Event()

    def push(self, name: str, data: Any) -> None:
        self.events.append((next(self._numbers), name, data))
        self._changed.set()

    async def follow(self, after: int, heartbeat: float) -> AsyncGenerator[tuple[int, str, Any] | None, None]:
        """Every event numbered past ``after``, then each as it comes, until the connection closes;
        None after ``heartbeat`` seconds of quiet (the stream says it is still there)."""
        self.listeners += 1
        try:
            while True:
                closed = self.closed  # read first: what was pushed before closing is still sent
                fresh = [event for event in list(self.events) if event[0] > after]
                for event in fresh:
                    yield event
                    after = event[0]
                if closed:
                    return
                self._changed.clear()
                try:
                    # The wait is cancelled on a timeout, never the generator: it goes on.
                    await asyncio.wait_for(self._changed.wait(), heartbeat)
                except TimeoutError:
                    yield None
        finally:
            self.listeners -= 1
            if self.listeners == 0:
                self.alone_since = time.monotonic()


@dataclass(eq=False)
class ClientHub:
    """The web client's connections; see the module docstring."""

    registry: dict[str, UpstreamSpec]
    db: str | None = None
    record: bool = True
    allow_urls: tuple[str, ...] = ()
    rules: Rules | None = None
    roots: list[dict[str, str]] = field(default_factory=list)
    max_connections: int = MAX_CONNECTIONS
    opener: Callable[[Target], Awaitable[Link]] | None = None  # tests: an in-process server
    connections: dict[str, PageClient] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._reaper: asyncio.Task[None] | None = None

    def servers(self) -> list[dict[str, Any]]:
        """The registry as a page lists it (described with secrets replaced)."""
        return [
            {"name": name, "transport": spec.transport, "description": spec.describe()}
            for name, spec in self.registry.items()
        ]

    async def connect(self, body: dict[str, Any]) -> tuple[PageClient, dict[str, Any] | None, str | None]:
        """Open a connection as ``body`` asks; (the connection, the server's info or None, the error or None).

        Refused (nothing started) when the body names anything but a registry entry or an allowed URL."""
        target = target_for(body, self.registry, self.allow_urls)
        live = [c for c in self.connections.values() if not c.closed]
        if len(live) >= self.max_connections:
            raise Refused(
                503, f"{len(live)} client sessions are open (at most {self.max_connections}): close one"
            )
        from mcptape.client.errors import ClientError
        from mcptape.client.negotiate import check_version

        try:
            version = check_version(body.get("protocolVersion") or None)
        except ClientError as exc:
            raise Refused(400, exc.message) from None
        pages: list[PageClient] = []  # the page exists once its session does; nothing is emitted before
        interactive = Interactive(
            target,
            lambda name, data: pages[0].push(name, data),
            db=self.db,
            record=self.record,
            rules=self.rules,
            roots=self.roots,
            protocol_version=version,
            upstream_opener=self.opener,
        )
        page = PageClient(secrets.token_urlsafe(12), interactive)
        pages.append(page)
        from mcptape.client.interactive import InteractiveError

        try:
            page.interactive.person.set_rules(
                body.get("sampling"), body.get("elicitation"), body.get("rules")
            )
            if body.get("roots") is not None:
                await page.interactive.set_roots(body["roots"])
        except InteractiveError as exc:
            raise Refused(400, str(exc)) from None
        page.interactive.person.ask = body.get("ask") is not False
        self.connections[page.id] = page
        self._start_reaper()
        try:
            info = await page.interactive.connect()
        except ClientError as exc:
            await self.close(page.id)
            return page, None, exc.message
        return page, info, None

    def get(self, conn: Any) -> PageClient:
        page = self.connections.get(conn) if isinstance(conn, str) else None
        if page is None or page.closed:
            raise Refused(404, "no such client connection (closed, or the viewer restarted): connect again")
        return page

    async def close(self, conn: str) -> None:
        page = self.connections.pop(conn, None)
        if page is None:
            return
        await page.interactive.close()
        page.closed = True
        page.push("closed", {"sessionId": page.interactive.session_id})

    async def close_all(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
        await asyncio.gather(*(self.close(conn) for conn in list(self.connections)), return_exceptions=True)

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.ensure_future(self._reap())

    async def _reap(self) -> None:
        """Close what no page follows any more (a tab closed without saying so)."""
        while self.connections:
            await asyncio.sleep(ORPHAN_S / 3)
            now = time.monotonic()
            for page in list(self.connections.values()):
                if page.listeners == 0 and now - page.alone_since > ORPHAN_S:
                    with contextlib.suppress(Exception):
                        await self.close(page.id)
