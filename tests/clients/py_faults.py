"""The MCP Python SDK's client under injected faults: the counterpart of ts_faults.mjs.

    python tests/clients/py_faults.py RUNS_JSON

RUNS_JSON: a list of {"plan": {"calls": [{"name", "arguments", "progress": bool}, ...],
"timeoutMs": N}, "target": ["stdio", COMMAND, ARGS...] or ["http", URL, TOKEN?]}. The runs go
at once (one process: the SDK is imported once), each on its own connection; within a run the
calls are made in turn with the SDK's own read timeout. Prints one JSON list, a document per
run: per call its outcome ("result", "error" with code and message) and how long it took, the
order in which progress and the result arrived, what the SDK logged (warnings and errors), and
how the session ended when it ended early.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

RUN: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("run", default=None)


class Collect(logging.Handler):
    """The SDK's own log records at WARNING and above, each to the run it came from."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        messages = RUN.get()
        if messages is not None:
            messages.append(record.getMessage()[:200])


def transport(target: list[str]) -> Any:
    kind, address, *rest = target
    if kind == "stdio":
        return stdio_client(StdioServerParameters(command=address, args=rest), errlog=open("/dev/null", "w"))
    if kind == "http":
        headers = {"Authorization": f"Bearer {rest[0]}"} if rest else {}
        return streamable_http_client(address, http_client=create_mcp_http_client(headers=headers))
    raise SystemExit(f"unknown transport {kind}: stdio or http")


async def run(spec: dict[str, Any], results: list[dict[str, Any]], index: int) -> None:
    plan = spec["plan"]
    errors: list[str] = []
    RUN.set(errors)
    out: dict[str, Any] = {"calls": [], "errors": errors, "closed": False}
    timeout = plan["timeoutMs"] / 1000
    try:
        # The handshake waits as long as a slow start needs; each call has the plan's timeout.
        async with Client(transport(spec["target"]), mode="legacy", read_timeout_seconds=60) as client:
            for call in plan["calls"]:
                out["calls"].append(await one_call(client, call, timeout, plan.get("settleMs", 300) / 1000))
    except Exception as exc:  # what ends the session is part of the answer
        out["closed"] = True
        out["ended_by"] = describe(exc)
    results[index] = out


async def one_call(client: Client, call: dict[str, Any], timeout: float, settle: float) -> dict[str, Any]:
    events: list[str] = []
    entry: dict[str, Any] = {"name": call["name"]}

    async def progress(value: float, total: float | None, message: str | None) -> None:
        events.append(f"progress {value:g}")

    started = time.monotonic()
    try:
        result = await client.call_tool(
            call["name"],
            call.get("arguments") or {},
            read_timeout_seconds=timeout,
            progress_callback=progress if call.get("progress") else None,
        )
        events.append("result")
        entry["outcome"] = "tool error" if result.is_error else "result"
        entry["text"] = "".join(getattr(c, "text", "") for c in result.content)[:200]
    except Exception as exc:  # the exception is what the table reports
        entry["outcome"] = "error"
        error = getattr(exc, "error", None)
        entry["code"] = getattr(error, "code", None)
        entry["message"] = describe(exc)
    entry["ms"] = round((time.monotonic() - started) * 1000)
    await anyio.sleep(settle)  # late arrivals (a progress after its result) are logged meanwhile
    entry["events"] = events
    return entry


def describe(exc: BaseException) -> str:
    """An exception in one line; an exception group by its first leaf."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:200]


async def main(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = [{} for _ in runs]
    async with anyio.create_task_group() as group:
        for index, spec in enumerate(runs):
            group.start_soon(run, spec, results, index)
    return results


if __name__ == "__main__":
    logging.getLogger().addHandler(Collect())
    logging.getLogger().setLevel(logging.WARNING)
    sys.stdout.write(json.dumps(anyio.run(main, json.loads(sys.argv[1]))) + "\n")
