"""Scenarios that call tools: progress, cancellation, logging, large, unicode and binary content, tasks."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from mcptape.client.errors import ClientError, TransportError
from mcptape.probe.context import Failed, NotOffered, Probe, short, text_of
from mcptape.wire import protocol as p

LONG_RUNNING = "trigger-long-running-operation"
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
UNICODE_SAMPLE = (
    "ascii, é, ß, ﬁ, Ω, 𝄞 (astral), 👩‍👩‍👧 (joined), e\u0301 (combining), עברית, العربية, 中文, "
    '\u2028\u2029 (line separators), \u200b\ufeff (invisible), \\ " / \t'
)


PROGRESS_CALLS = 6
PROGRESS_STEPS = 4


async def progress(probe: Probe) -> str:
    """trigger-long-running-operation, several calls at once, each with its own progress token:
    every step's notification reaches its own call, in order, before its result.

    Concurrent calls check that a proxy routes each notification to its request; they also
    show a proxy that loses the last notification in a race with the result, which one
    call shows only now and then.
    """
    await probe.tool(LONG_RUNNING, takes=("duration", "steps"))
    mark = len(probe.seen)
    tokens: list[list[int]] = [[] for _ in range(PROGRESS_CALLS)]
    counts: list[int] = []

    async def one(ids: list[int]) -> None:
        await probe.call_tool(
            LONG_RUNNING, {"duration": 1, "steps": PROGRESS_STEPS}, progress=True, sent=ids.append
        )
        counts.append(len([n for n in probe.notes(p.PROGRESS, mark) if n.get("progressToken") in ids]))

    await asyncio.gather(*(one(ids) for ids in tokens))
    await asyncio.sleep(0.2)  # anything after a result is out of order
    total = PROGRESS_CALLS * PROGRESS_STEPS
    late = sum(
        len([n for n in probe.notes(p.PROGRESS, mark) if n.get("progressToken") in ids]) for ids in tokens
    )
    if late > sum(counts):
        raise Failed(f"{late - sum(counts)} of {total} progress notifications came after their result")
    if sum(counts) != total:
        short_calls = sum(1 for c in counts if c != PROGRESS_STEPS)
        raise Failed(f"{sum(counts)} of {total} progress notifications came ({short_calls} calls short)")
    for ids in tokens:
        values = [n.get("progress") for n in probe.notes(p.PROGRESS, mark) if n.get("progressToken") in ids]
        numbers = [v for v in values if isinstance(v, int | float)]
        if numbers != values or numbers != sorted(set(numbers)):
            raise Failed(f"progress values of one call out of order: {values}")
    return f"{total} of {total} progress, {PROGRESS_CALLS} calls at once"


async def cancellation(probe: Probe) -> str:
    """Cancel trigger-long-running-operation while it runs: no result comes, the session goes on.

    It is cancelled after its first progress notification, or after a second without one
    (whether progress comes through is the progress scenario's question).
    """
    await probe.tool(LONG_RUNNING, takes=("duration", "steps"))
    duration = 3
    ids: list[int] = []
    mark = len(probe.seen)
    task = asyncio.ensure_future(
        probe.call_tool(LONG_RUNNING, {"duration": duration, "steps": 4}, progress=True, sent=ids.append)
    )
    try:
        await probe.wait_for(
            lambda s: (
                s.body.get("method") == p.PROGRESS
                and (s.body.get("params") or {}).get("progressToken") in ids
            ),
            1.0,
            mark,
        )
        if task.done() or not ids:
            if task.done():
                task.result()  # its error, if it failed
            raise Failed("the tool answered within a second: nothing left to cancel")
        assert probe.session is not None
        await probe.session.core.notify(p.CANCELLED, {"requestId": ids[-1], "reason": "mcptape probe"})
        done, _ = await asyncio.wait({task}, timeout=duration + 1)
        if done:
            error = task.exception()
            if error is None:
                raise Failed(
                    "the tool answered after notifications/cancelled: the cancellation did not reach it"
                )
            if not isinstance(error, TransportError):
                # The server answered with an error: it heard the cancellation (the spec asks
                # for no answer at all, but an error is no result).
                return f"answered with an error after cancelling: {short(str(error), 30)}"
            # A stream ended without the answer (an HTTP front end gives up on the request): fine.
    finally:
        # asyncio.wait, not awaiting the task: the scenario's own time limit must still cancel us.
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: its outcome no longer matters
    await probe.request(p.PING)
    return "no answer after cancelling; session goes on"


async def logging(probe: Probe) -> str:
    """logging/setLevel at each level; toggle-simulated-logging makes a log line come."""
    probe.need_capability(p.SET_LEVEL)
    for level in LOG_LEVELS:
        try:
            await probe.request(p.SET_LEVEL, {"level": level})
        except ClientError as exc:
            raise Failed(f"logging/setLevel {level}: {short(exc.message, 50)}") from None
    await probe.request(p.SET_LEVEL, {"level": "debug"})
    toggle = "toggle-simulated-logging"
    try:
        await probe.tool(toggle)
    except NotOffered:
        return f"{len(LOG_LEVELS)} levels set (no {toggle} tool to make a log line)"
    mark = len(probe.seen)
    await probe.call_tool(toggle, {})
    try:
        came = await probe.wait_for(lambda s: s.body.get("method") == p.MESSAGE, 6.0, mark)
    finally:
        await probe.call_tool(toggle, {})
    if came is None:
        raise Failed(f"{toggle} on, level debug: no notifications/message came")
    level = str((came.body.get("params") or {}).get("level"))
    if level not in LOG_LEVELS:
        raise Failed(f"a log line with level {short(repr(level), 20)}")
    return f"{len(LOG_LEVELS)} levels set; a log line ({level}) came"


def large(size: int) -> Any:
    """echo a ``size``-byte message: the request and the result each carry it whole."""

    async def check(probe: Probe) -> str:
        await probe.tool("echo", takes=("message",))
        # Not one repeated byte: a proxy that compresses or dedups must still carry it whole.
        unit = "mcptape probe 0123456789 abcdefghijklmnopqrstuvwxyz\n"
        message = (unit * (size // len(unit) + 1))[:size]
        result = await probe.call_tool("echo", {"message": message})
        got = text_of(result)
        if message not in got:
            raise Failed(f"echo of {size} bytes came back as {len(got)} characters, not whole")
        return f"{_size(size)} there and back"

    return check


def _size(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size} bytes"


async def unicode(probe: Probe) -> str:
    await probe.tool("echo", takes=("message",))
    result = await probe.call_tool("echo", {"message": UNICODE_SAMPLE})
    if UNICODE_SAMPLE not in text_of(result):
        raise Failed(f"echo changed the text: {short(text_of(result), 60)!r}")
    return "astral, combining, RTL, U+2028 kept whole"


async def binary(probe: Probe) -> str:
    """get-tiny-image's image block decodes to a PNG."""
    await probe.tool("get-tiny-image")
    result = await probe.call_tool("get-tiny-image", {})
    blocks = result.get("content") if isinstance(result, dict) else None
    images = [b for b in blocks or [] if isinstance(b, dict) and b.get("type") == "image"]
    if not images:
        raise Failed("get-tiny-image answered no image block")
    try:
        data = base64.b64decode(images[0].get("data") or "", validate=True)
    except ValueError:
        raise Failed("the image's data is not base64") from None
    if not data.startswith(PNG_SIGNATURE):
        raise Failed(f"the image's {len(data)} bytes are not a PNG")
    return f"a {len(data)}-byte PNG image"


async def tasks(probe: Probe) -> str:
    """simulate-research-query as a task: created, polled with tasks/get, listed, its result fetched."""
    probe.need_revision("2025-11-25")
    caps = probe.hello.capabilities.get("tasks")
    tools_caps = (caps.get("requests") or {}).get("tools") if isinstance(caps, dict) else None
    if not isinstance(tools_caps, dict) or not isinstance(tools_caps.get("call"), dict):
        raise NotOffered("no tasks.requests.tools.call capability")
    tool = "simulate-research-query"
    await probe.tool(tool, takes=("topic",))
    created = await probe.request(
        p.TOOLS_CALL, {"name": tool, "arguments": {"topic": "mcptape probe"}, "task": {"ttl": 60000}}
    )
    task = created.get("task") if isinstance(created, dict) else None
    if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
        raise Failed(f"tools/call with a task answered without a task: {short(repr(created), 60)}")
    task_id = task["taskId"]
    polls = 0
    while task.get("status") not in ("completed", "failed", "cancelled"):
        await asyncio.sleep(0.5)
        task = await probe.request(p.TASKS_GET, {"taskId": task_id})
        polls += 1
        if not isinstance(task, dict):
            raise Failed(f"tasks/get answered {short(repr(task), 40)}")
    if task["status"] != "completed":
        raise Failed(f"the task ended {task['status']}: {short(str(task.get('statusMessage')), 50)}")
    assert isinstance(caps, dict)
    if "list" in caps:
        listed = await probe.request(p.TASKS_LIST)
        if not any(t.get("taskId") == task_id for t in (listed or {}).get("tasks") or []):
            raise Failed("tasks/list does not list the task")
    result = await probe.request(p.TASKS_RESULT, {"taskId": task_id})
    if "mcptape probe" not in text_of(result):
        raise Failed(f"tasks/result: {short(text_of(result), 50)!r}")
    return f"completed after {polls} polls; result fetched"
