"""The viewer's data routes: what each page asks the server for (JSON, bytes, CSV, live events).

Every read runs on the viewer's thread pool (the store is blocking); each route answers
a page of :mod:`mcptape.view.static`'s script. Sessions are named as `show` names them
(an id, a unique prefix, a name, ``last``); a session's page also takes a conversation
(:func:`mcptape.store.targets.resolve_target`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

import orjson
from aiohttp import web

from mcptape.view.viewer import VIEWER, Viewer, error

if TYPE_CHECKING:
    from mcptape.store.targets import Target

T = TypeVar("T")
HEARTBEAT_S: Final = 15.0
routes = web.RouteTableDef()


def _without_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate in its strings written as its ``\\uXXXX`` escape."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {key: _without_surrogates(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_without_surrogates(item) for item in value]
    return value


def dumps(value: Any) -> bytes:
    """``value`` as JSON; recorded text holding a lone surrogate (orjson refuses it) shows its escape."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return orjson.dumps(_without_surrogates(value))


def json(value: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps(value), status=status, content_type="application/json")


async def blocking(request: web.Request, func: Callable[..., T], *args: Any) -> T:
    viewer = request.app[VIEWER]
    return await asyncio.get_running_loop().run_in_executor(viewer.executor, func, *args)


def _viewer(request: web.Request) -> Viewer:
    return request.app[VIEWER]


async def _session_id(request: web.Request, ref: str) -> str:
    from mcptape.store.queries import resolve_session

    row = await _found(request, resolve_session, ref)
    return str(row["id"])


async def _target(request: web.Request, ref: str) -> Target:
    from mcptape.store.targets import resolve_target

    return await _found(request, resolve_target, ref)


async def _found(request: web.Request, lookup: Callable[[Any, str], T], ref: str) -> T:
    from mcptape.store.queries import SessionLookupError

    try:
        return await blocking(request, lookup, _viewer(request).store, ref)
    except SessionLookupError as exc:
        raise web.HTTPNotFound(
            text=orjson.dumps({"error": str(exc)}).decode(), content_type="application/json"
        ) from None


@routes.get("/api/sessions")
async def sessions_list(request: web.Request) -> web.Response:
    from mcptape.view.data import session_list

    q = request.query
    found = await blocking(
        request,
        lambda: session_list(
            _viewer(request).store, q=q.get("q", ""), mode=q.get("mode", ""), status=q.get("status", "")
        ),
    )
    return json({"sessions": found, "db": _viewer(request).store.where})


@routes.get("/api/sessions/{ref}/timeline")
async def session_timeline(request: web.Request) -> web.Response:
    """A session's first frames (``?limit=``, the rest from ``/frames``), or a conversation whole."""
    from mcptape.view.conversation import conversation_timeline
    from mcptape.view.data import FIRST_FRAMES, MAX_CHUNK
    from mcptape.view.data import session_timeline as read

    target = await _target(request, request.match_info["ref"])
    store = _viewer(request).store
    if target.conversation is not None:
        return json(await blocking(request, conversation_timeline, store, target))
    limit = min(max(_int(request, "limit") or FIRST_FRAMES, 1), MAX_CHUNK)
    return json(await blocking(request, read, store, target.session["id"], limit))


@routes.get("/api/sessions/{ref}/frames")
async def session_frames(request: web.Request) -> web.Response:
    """The next chunk of a session's frames: ``?after=SEQ&limit=N`` (``next`` says where to go on)."""
    from mcptape.view.data import CHUNK_FRAMES, frames_after

    target = await _target(request, request.match_info["ref"])
    if target.conversation is not None:
        return error(400, "a conversation's frames come whole with its timeline")
    after, limit = _int(request, "after") or 0, _int(request, "limit") or CHUNK_FRAMES
    return json(
        await blocking(request, frames_after, _viewer(request).store, target.session["id"], after, limit)
    )


@routes.get("/api/sessions/{ref}/stats")
async def session_stats(request: web.Request) -> web.Response:
    from mcptape.view.conversation import conversation_stats
    from mcptape.view.data import session_stats as read

    target = await _target(request, request.match_info["ref"])
    store = _viewer(request).store
    if target.conversation is not None:
        return json(await blocking(request, conversation_stats, store, target))
    return json(await blocking(request, read, store, target.session["id"]))


def _seq(request: web.Request) -> int:
    try:
        return int(request.match_info["seq"])
    except ValueError:
        raise web.HTTPBadRequest(text='{"error": "a frame is named by its seq, a number"}',
                                 content_type="application/json") from None  # fmt: skip


@routes.get("/api/sessions/{ref}/frames/{seq}")
async def frame(request: web.Request) -> web.Response:
    from mcptape.view.data import NotFound
    from mcptape.view.detail import frame_detail

    session_id = await _session_id(request, request.match_info["ref"])
    try:
        return json(await blocking(request, frame_detail, _viewer(request).store, session_id, _seq(request)))
    except NotFound as exc:
        return error(404, str(exc))


@routes.get("/api/sessions/{ref}/frames/{seq}/bytes")
async def frame_bytes(request: web.Request) -> web.Response:
    from mcptape.view.data import NotFound
    from mcptape.view.detail import frame_bytes as read

    session_id = await _session_id(request, request.match_info["ref"])
    seq = _seq(request)
    try:
        data = await blocking(request, read, _viewer(request).store, session_id, seq)
    except NotFound as exc:
        return error(404, str(exc))
    name = f"frame-{session_id[:12]}-{seq}.bin"
    return web.Response(body=data, content_type="application/octet-stream",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})  # fmt: skip


@routes.get("/api/compare")
async def compare(request: web.Request) -> web.Response:
    from mcptape.replay.tape import TapeError
    from mcptape.view.compare import compare_sessions

    right = request.query.get("right", "").strip()
    left = request.query.get("left", "").strip() or None
    if not right:
        return error(400, "name the sessions to compare: ?left=SESSION&right=SESSION (left: the original)")
    try:
        return json(await blocking(request, compare_sessions, _viewer(request).store, left, right))
    except TapeError as exc:
        return error(404, str(exc))


@routes.get("/api/sql/schema")
async def sql_schema(request: web.Request) -> web.Response:
    from mcptape.view.sqlpage import SqlError, schema

    try:
        return json({"relations": await blocking(request, schema, _viewer(request).store)})
    except SqlError as exc:
        return error(400, str(exc))


@routes.post("/api/sql")
async def sql_query(request: web.Request) -> web.Response:
    from mcptape.view.sqlpage import SqlError, query

    try:
        body = await request.json(loads=orjson.loads)
    except (ValueError, orjson.JSONDecodeError):
        return error(400, 'send {"query": "select ..."} as JSON')
    text = body.get("query") if isinstance(body, dict) else None
    if not isinstance(text, str):
        return error(400, 'send {"query": "select ..."} as JSON')
    try:
        return json(await blocking(request, query, _viewer(request).store, text))
    except SqlError as exc:
        return error(400, str(exc))


@routes.get("/api/sql.csv")
async def sql_csv(request: web.Request) -> web.StreamResponse:
    from mcptape.view.sqlpage import SqlError, csv_chunks

    chunks = csv_chunks(_viewer(request).store, request.query.get("q", ""))
    try:
        first = await blocking(request, next, chunks, b"")
    except SqlError as exc:
        return error(400, str(exc))
    response = web.StreamResponse(headers={
        "Content-Type": "text/csv; charset=utf-8", "Content-Disposition": 'attachment; filename="query.csv"',
        "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
    })  # fmt: skip
    await response.prepare(request)
    await response.write(first)
    try:
        while chunk := await blocking(request, next, chunks, b""):
            await response.write(chunk)
    except SqlError as exc:  # past the header: the file says it is cut
        await response.write(f"\r\n# stopped: {exc}\r\n".encode())
    await response.write_eof()
    return response


def _int(request: web.Request, name: str) -> int | None:
    value = request.query.get(name)
    return int(value) if value is not None and value.isdigit() else None


@routes.get("/api/live")
async def live(request: web.Request) -> web.StreamResponse:
    """Server-sent events: ``frames`` for a session's page (``?session=``, from ``after``, the
    page's last frame id), ``sessions`` for the list; ``reload`` when the page fell behind."""
    from mcptape.view.data import frames_since

    viewer = _viewer(request)
    ref = request.query.get("session")
    session_id = await _session_id(request, ref) if ref else None
    assert viewer.live is not None
    response = web.StreamResponse(headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no",
    })  # fmt: skip
    await response.prepare(request)

    async def send(event: str, data: Any) -> None:
        await response.write(b"event: " + event.encode() + b"\ndata: " + dumps(data) + b"\n\n")

    with contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
        async with viewer.live.listen(session_id) as listener:
            await send("hello", {"session": session_id})
            after = _int(request, "after")
            if session_id is not None and after is not None:
                caught = await blocking(
                    request, frames_since, viewer.store, session_id, after, _int(request, "after_event") or 0
                )
                await send("frames", caught)
            while True:
                try:
                    event, data = await asyncio.wait_for(listener.queue.get(), HEARTBEAT_S)
                except TimeoutError:
                    await response.write(b": still here\n\n")
                    continue
                await send(event, data)
                if event == "reload":
                    break
    return response


ROUTES: Final = list(routes)
