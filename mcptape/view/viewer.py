"""What every handler of `mcptape ui` shares: the :class:`Viewer` (store, token, live hub),
its key in the aiohttp app, and the JSON error the pages show.

Its own module so that the route modules (``api.py``, ``client_api.py``) and the app
that mounts them (``app.py``) import it, not each other.
"""

from __future__ import annotations

import hmac
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

from mcptape.gateway import security
from mcptape.view.live import LiveHub

READ_POSTS: Final = frozenset({"/api/login", "/api/sql"})
PUBLIC: Final = frozenset({"/", "/index.html", "/api/login", "/health"})


@dataclass(eq=False)
class Viewer:
    """What the handlers share: the store (opened by the caller), the token, the live hub."""

    store: Any
    token: str
    host: str = "127.0.0.1"
    port: int = 0
    extra_hosts: tuple[str, ...] = ()
    posts: frozenset[str] = READ_POSTS
    public: frozenset[str] = PUBLIC
    cookie_value: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    executor: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(4, thread_name_prefix="mcptape-ui")
    )
    hosts: frozenset[str] = frozenset()
    live: LiveHub | None = None

    def bound(self, port: int) -> None:
        """The listener is bound: requests must name this host and port."""
        self.port = port
        self.hosts = security.allowed_hosts(self.host, port, self.extra_hosts)

    @property
    def cookie_name(self) -> str:
        # Cookies ignore ports: two viewers on one host must not overwrite each other's.
        return f"mcptape_ui_{self.port}"

    @property
    def url(self) -> str:
        """The URL to open, token included (in the fragment, which browsers never send)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/#token={self.token}"

    def authorised(self, request: web.Request) -> bool:
        cookie = request.cookies.get(self.cookie_name)
        if cookie is not None and hmac.compare_digest(cookie.encode(), self.cookie_value.encode()):
            return True
        if security.TOKEN_HEADER in request.headers or "Authorization" in request.headers:
            return security.check_token(request.headers, self.token).ok
        return False


VIEWER: Final = web.AppKey("viewer", Viewer)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON error the page shows as it is: ``{"error": message}``."""
    return web.json_response({"error": message}, status=status, headers=headers)
