"""Retries with backoff for opening a connection that was refused, reset, timed out or unresolved.

Only network errors are retried: a command that does not exist, a bad URL or a 4xx
answer fails at once. The delays are 1, 2 and 4 seconds by default.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

BACKOFF = (1.0, 2.0, 4.0)
RETRYABLE: tuple[type[BaseException], ...] = (
    ConnectionRefusedError,
    ConnectionResetError,
    ConnectionAbortedError,
    TimeoutError,
    socket.gaierror,
)


def is_retryable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a connection failure worth another try."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, RETRYABLE):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    delays: Sequence[float] = BACKOFF,
    *,
    on_retry: Callable[[int, float, BaseException], None] | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> T:
    """Run ``attempt``; on a retryable failure wait each of ``delays`` in turn and try again.

    The last failure is raised as it is when every try failed, or at once when it is
    not retryable.
    """
    for number, delay in enumerate([*delays, None], start=1):
        try:
            return await attempt()
        except Exception as exc:
            if delay is None or not is_retryable(exc):
                raise
            if on_retry is not None:
                on_retry(number, delay, exc)
            await sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
