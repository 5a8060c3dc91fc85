"""Test helper: the viewer's aiohttp application in process, with a test client logged in by token.

async with viewer_client(store) as client:
    body = await (await client.get("/api/sessions", headers=AUTH)).json()
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Final

from aiohttp.test_utils import TestClient, TestServer

from mcptape.view.app import Viewer, build_app

TOKEN: Final = "t0ken-for-tests"
AUTH: Final = {"X-Mcptape-Token": TOKEN}


@contextlib.asynccontextmanager
async def viewer_client(store: Any) -> AsyncIterator[TestClient]:
    """A test client of a viewer over ``store`` (requests need :data:`AUTH`)."""
    viewer = Viewer(store, TOKEN)
    server = TestServer(build_app(viewer), host="127.0.0.1")
    async with TestClient(server) as client:
        viewer.bound(server.port)  # type: ignore[arg-type]
        yield client
    viewer.executor.shutdown(wait=False)
