"""The `mcptape ui` web server: its routes, its protection and its static files, in one place.

Protection is the gateway's (:mod:`mcptape.gateway.security`, reused, not copied):

- ``Host`` and ``Origin`` are checked before anything else (403): a page of another site,
  or a DNS name rebound to 127.0.0.1, gets nothing;
- the data (``/api/…``) needs the viewer's token. `mcptape ui` prints it once, as the
  fragment of a URL (``http://127.0.0.1:8809/#token=…``): browsers never send a fragment,
  so it reaches no log, no history of requests, no ``Referer``. The page posts it once to
  ``/api/login`` in a header and gets an HttpOnly, SameSite=Strict cookie in exchange
  (the server's own random value, not the token); programs may send the token with
  every request instead (``Authorization: Bearer`` or ``X-Mcptape-Token``). No access
  log is kept;
- read-only: every route is GET, but for the POSTs listed in :data:`READ_POSTS` (the
  login, and SQL queries, which the sandbox keeps to reading). Nothing writes to the store.

To add routes (another page, an interactive client), pass them to :func:`build_app` with
``routes=``; a route that is not GET must also be named in ``posts=``, which says in
one place what the viewer lets a page change.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Final

from aiohttp import web

from mcptape.gateway import security
from mcptape.view.live import LiveHub
from mcptape.view.viewer import VIEWER, Viewer, error

TOKEN_ENV: Final = "MCPTAPE_UI_TOKEN"
DEFAULT_PORT: Final = 8809
STATIC_DIR: Final = Path(str(resources.files("mcptape.view") / "static"))
_HEADERS: Final = {
    # data: media: the client page shows the images and audio tools answer with.
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; media-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


@web.middleware
async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
    viewer = request.app[VIEWER]
    if (request.host or "").lower() not in viewer.hosts:
        return error(403, f"Host {request.host!r} is not this viewer's")
    if not security.origin_allowed(request.headers.get("Origin"), viewer.hosts):
        return error(403, f"Origin {request.headers.get('Origin')!r} is not allowed")
    if request.method not in ("GET", "HEAD") and request.path not in viewer.posts:
        return error(405, "the viewer is read-only", {"Allow": "GET"})
    if (
        request.path not in viewer.public
        and not request.path.startswith("/static/")
        and not viewer.authorised(request)
    ):
        return error(401, "open the URL `mcptape ui` printed (it logs this page in)")
    response = await handler(request)
    if not response.prepared:
        response.headers.update(_HEADERS)
        if request.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
    return response


async def login(request: web.Request) -> web.Response:
    """Trade the token (in a header, never the URL) for the cookie."""
    viewer = request.app[VIEWER]
    if not security.check_token(request.headers, viewer.token).ok:
        return error(401, "wrong token: open the URL `mcptape ui` printed")
    response = web.json_response({"ok": True})
    response.set_cookie(viewer.cookie_name, viewer.cookie_value, httponly=True, samesite="Strict", path="/")
    return response


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


def build_app(
    viewer: Viewer,
    *,
    routes: Iterable[web.AbstractRouteDef] = (),
    posts: Iterable[str] = (),
    public: Iterable[str] = (),
) -> web.Application:
    """The application: the pages' routes (:mod:`mcptape.view.api`), ``routes`` added by others,
    the POST paths they need on top of :data:`READ_POSTS`, and their pages' HTML paths that,
    like ``/``, load without the token (the page then logs in; its data needs the token)."""
    from mcptape.view import api

    viewer.posts = viewer.posts | frozenset(posts)
    viewer.public = viewer.public | frozenset(public)
    app = web.Application(middlewares=[guard], client_max_size=1 << 20)
    app[VIEWER] = viewer
    viewer.live = LiveHub(viewer.store, viewer.executor)
    app.router.add_get("/", index)
    app.router.add_get("/health", health)
    app.router.add_post("/api/login", login)
    app.router.add_routes(api.ROUTES)
    app.router.add_routes(list(routes))
    app.router.add_static("/static", STATIC_DIR)
    app.on_shutdown.append(_shutdown)
    return app


async def _shutdown(app: web.Application) -> None:
    viewer = app[VIEWER]
    if viewer.live is not None:
        await viewer.live.close()
