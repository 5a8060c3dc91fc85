"""`mcptape serve --listen` as a real process, and the SDK's streamable HTTP client calling its tools."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from tests.helpers.paths import MCPTAPE
from tests.helpers.scenarios import dump


class Served:
    """`mcptape serve ... --listen 127.0.0.1:0 [-- SERVER...]`; ``url`` (streamable HTTP) once it is ready."""

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, server: list[str] | None = None
    ) -> None:
        after = ["--", *server] if server else []
        self.proc = subprocess.Popen(
            [*MCPTAPE, "serve", *args, "--listen", "127.0.0.1:0", *after],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.stderr = ""
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.stderr += line.decode(errors="replace")
                if "ready;" in self.stderr:
                    ready.set()
            ready.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        ready.wait(30)
        found = re.search(r"at (http://\S+/mcp) ", self.stderr)
        if found is None:
            self.stop()
            raise RuntimeError(f"serve did not start: {self.stderr}")
        self.url = found.group(1)
        token = re.search(r"token \(shown once.*\): (\S+)", self.stderr)
        self.token = token.group(1) if token else None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(5)
        return code


def call_tools(served: Served, *calls: tuple[str, dict[str, Any]], mode: str = "legacy") -> list[Any]:
    """The SDK's streamable HTTP client calls each tool in one session: each result, or the error's text."""

    async def main() -> list[Any]:
        http = create_mcp_http_client(headers=served.headers())
        out: list[Any] = []
        async with Client(streamable_http_client(served.url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
            for name, arguments in calls:
                try:
                    out.append(dump(await client.call_tool(name, arguments)))
                except MCPError as exc:
                    out.append(str(exc))
        return out

    return anyio.run(main)
