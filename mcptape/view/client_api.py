"""The web client's routes: its page (``/client``), a small JSON API and one event stream per connection.

Added to the viewer's application by :func:`client_app`, behind the viewer's guard (token,
Host and Origin). Every change is a POST to one of :data:`POSTS` with a JSON body (a
form or a ``text/plain`` post from another site is refused before it is read); the
connection is named in the body (``conn``). What a page may connect to is decided by
:func:`mcptape.view.clients.target_for`: a registry entry, or a URL ``--allow-url``
allows, never a command.

=====================  ===================================================================
``GET /client``         the page (``?server=NAME`` connects to that entry and lists its tools;
                        ``?session=ID&seq=N`` opens a recorded request to edit and resend)
``GET /api/client``     the registry, whether URLs are allowed, the command line's rules and roots
``connect``             ``{server | url, transport?, protocolVersion?, sampling?, elicitation?,
                        rules?, roots?, ask?}`` → ``{conn, hello}``
``GET …/events``        ``?conn=`` server-sent events (``Last-Event-ID`` resumes)
``list``                ``{conn, kind, cursor?}`` → one page of tools, resources, templates, prompts
``run``                 ``{conn, op, method, params}`` → the outcome (waits for it)
``cancel``              ``{conn, op}``
``answer``              ``{conn, question, result | error}``
``rules`` ``roots``     the person's canned answers, the person's roots
``close``               ends the session (the page closing does too, after a while)
``recorded``            ``GET ?session=&seq=``: a recorded request, its answer and its server
``compare``             ``{session, seq, answer}``: the new answer against the recorded one
=====================  ===================================================================
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

import orjson
from aiohttp import web

from mcptape.view.api import HEARTBEAT_S, blocking, dumps, json
from mcptape.view.app import STATIC_DIR, build_app
from mcptape.view.clients import ClientHub, PageClient, Refused
from mcptape.view.viewer import VIEWER, Viewer, error

HUB: Final = web.AppKey("client_hub", ClientHub)
PREFIX: Final = "/api/client/"
POSTS: Final = frozenset(
    PREFIX + name
    for name in ("connect", "list", "run", "cancel", "answer", "rules", "roots", "close", "compare")
)
PAGES: Final = frozenset({"/client"})
routes = web.RouteTableDef()


async def _body(request: web.Request) -> dict[str, Any]:
    # JSON only: a cross-site form post cannot send this content type without a preflight.
    if request.content_type != "application/json":
        raise Refused(415, "send JSON (Content-Type: application/json)")
    try:
        body = await request.json(loads=orjson.loads)
    except (ValueError, orjson.JSONDecodeError):
        raise Refused(400, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise Refused(400, "the body must be a JSON object")
    return body


def _hub(request: web.Request) -> ClientHub:
    return request.app[HUB]


@web.middleware
async def refusals(request: web.Request, handler: Any) -> web.StreamResponse:
    """A :class:`Refused` anywhere in a client route is its JSON error."""
    try:
        return await handler(request)
    except Refused as exc:
        return error(exc.status, str(exc))


@routes.get("/client")
async def page(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "client.html")


@routes.get("/api/client")
async def about(request: web.Request) -> web.Response:
    hub = _hub(request)
    return json(
        {
            "servers": hub.servers(),
            "allowUrl": list(hub.allow_urls),
            "roots": hub.roots,
            "rules": bool(hub.rules),
            "connections": len(hub.connections),
        }
    )


@routes.post(PREFIX + "connect")
async def connect(request: web.Request) -> web.Response:
    page_client, info, problem = await _hub(request).connect(await _body(request))
    if problem is not None:
        return json({"conn": None, "error": problem, "events": _replay(page_client)}, status=502)
    return json({"conn": page_client.id, "hello": info})


def _replay(page_client: PageClient) -> list[Any]:
    """What a failed connection said (its notices, its state), for the page to show."""
    return [{"event": name, "data": data} for _, name, data in page_client.events]


async def _page(request: web.Request) -> tuple[PageClient, dict[str, Any]]:
    body = await _body(request)
    return _hub(request).get(body.get("conn")), body


@routes.get(PREFIX + "events")
async def events(request: web.Request) -> web.StreamResponse:
    page_client = _hub(request).get(request.query.get("conn"))
    last = request.headers.get("Last-Event-ID", request.query.get("after", "0"))
    after = int(last) if last.isdigit() else 0
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    stream = page_client.follow(after, HEARTBEAT_S)
    with contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
        await response.write(b"retry: 1000\n\n")
        async for event in stream:
            if event is None:
                await response.write(b": still here\n\n")
                continue
            number, name, data = event
            await response.write(b"id: %d\nevent: %s\ndata: %s\n\n" % (number, name.encode(), dumps(data)))
    await stream.aclose()
    return response


@routes.post(PREFIX + "list")
async def list_page(request: web.Request) -> web.Response:
    from mcptape.client.errors import ClientError
    from mcptape.client.interactive import InteractiveError

    page_client, body = await _page(request)
    cursor = body.get("cursor")
    try:
        return json(
            await page_client.interactive.list_page(
                str(body.get("kind")), cursor if isinstance(cursor, str) else None
            )
        )
    except InteractiveError as exc:
        return error(400, str(exc))
    except ClientError as exc:
        return json({"error": exc.message, "detail": exc.as_dict()}, status=502)


@routes.post(PREFIX + "run")
async def run(request: web.Request) -> web.Response:
    from mcptape.client.interactive import InteractiveError

    page_client, body = await _page(request)
    op, method = body.get("op"), body.get("method")
    if not isinstance(op, str) or not op or len(op) > 64 or not isinstance(method, str):
        return error(400, 'send {"conn", "op": a name for this operation, "method", "params"}')
    try:
        return json(await page_client.interactive.run(op, method, body.get("params")))
    except InteractiveError as exc:
        return error(400, str(exc))


@routes.post(PREFIX + "cancel")
async def cancel(request: web.Request) -> web.Response:
    page_client, body = await _page(request)
    return json({"cancelled": page_client.interactive.cancel(str(body.get("op")))})


@routes.post(PREFIX + "answer")
async def answer(request: web.Request) -> web.Response:
    from mcptape.client.interactive import InteractiveError

    page_client, body = await _page(request)
    reply = {k: v for k, v in body.items() if k in ("result", "error")}
    try:
        page_client.interactive.person.answer(str(body.get("question")), reply)
    except InteractiveError as exc:
        return error(400, str(exc))
    return json({"ok": True})


@routes.post(PREFIX + "rules")
async def rules(request: web.Request) -> web.Response:
    from mcptape.client.interactive import InteractiveError

    page_client, body = await _page(request)
    interactive = page_client.interactive
    try:
        interactive.person.set_rules(body.get("sampling"), body.get("elicitation"), body.get("rules"))
    except InteractiveError as exc:
        return error(400, str(exc))
    if "ask" in body:
        interactive.person.ask = body["ask"] is not False
    return json({"ok": True, "ask": interactive.person.ask})


@routes.post(PREFIX + "roots")
async def roots(request: web.Request) -> web.Response:
    from mcptape.client.interactive import InteractiveError

    page_client, body = await _page(request)
    try:
        return json({"roots": await page_client.interactive.set_roots(body.get("roots"))})
    except InteractiveError as exc:
        return error(400, str(exc))


@routes.post(PREFIX + "close")
async def close(request: web.Request) -> web.Response:
    body = await _body(request)
    conn = body.get("conn")
    hub = _hub(request)
    page_client = hub.connections.get(conn) if isinstance(conn, str) else None
    if isinstance(conn, str):
        await hub.close(conn)
    # Read once closed: the recording's row is made on a thread, maybe after the last request.
    session_id = page_client.interactive.session_id if page_client is not None else None
    return json({"closed": page_client is not None, "sessionId": session_id})


async def _session_id(request: web.Request, ref: Any) -> str:
    from mcptape.store.queries import SessionLookupError, resolve_session

    if not isinstance(ref, str) or not ref:
        raise Refused(400, "name the session (an id, a prefix, a name or last)")
    try:
        row = await blocking(request, resolve_session, request.app[VIEWER].store, ref)
    except SessionLookupError as exc:
        raise Refused(404, str(exc)) from None
    return str(row["id"])


def _seq(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    raise Refused(400, "a frame is named by its seq, a number")


@routes.get(PREFIX + "recorded")
async def recorded(request: web.Request) -> web.Response:
    from mcptape.view.data import NotFound
    from mcptape.view.resend import recorded_request

    session_id = await _session_id(request, request.query.get("session"))
    seq = _seq(request.query.get("seq"))
    names = set(_hub(request).registry)
    try:
        return json(
            await blocking(request, recorded_request, request.app[VIEWER].store, session_id, seq, names)
        )
    except NotFound as exc:
        return error(404, str(exc))


@routes.post(PREFIX + "compare")
async def compare(request: web.Request) -> web.Response:
    from mcptape.view.data import NotFound
    from mcptape.view.resend import compare_answer, recorded_request

    body = await _body(request)
    session_id = await _session_id(request, body.get("session"))
    try:
        old = await blocking(
            request, recorded_request, request.app[VIEWER].store, session_id, _seq(body.get("seq")), set()
        )
    except NotFound as exc:
        return error(404, str(exc))
    return json(compare_answer(old["request"], old["recorded"], body.get("answer")))


def client_app(viewer: Viewer, hub: ClientHub) -> web.Application:
    """The viewer's application with the client's page and routes added (:mod:`mcptape.view.app`)."""
    app = build_app(viewer, routes=list(routes), posts=POSTS, public=PAGES)
    app.middlewares.append(refusals)
    app[HUB] = hub
    app.on_shutdown.append(_close_all)
    return app


async def _close_all(app: web.Application) -> None:
    await app[HUB].close_all()
