"""A small OAuth 2.1 authorization server and protected-resource metadata, for `call`'s OAuth steps.

One aiohttp app on a loopback port plays both roles:

- ``/.well-known/oauth-protected-resource/mcp``: RFC 9728 metadata for ``/mcp``;
- ``/.well-known/oauth-authorization-server``: RFC 8414 metadata;
- ``/register``: dynamic client registration (public clients);
- ``/authorize``: approves at once (no user) and redirects with a code bound to the PKCE
  challenge, the client, the redirect URI and the resource (for a redirect URI ending in
  ``/needs-a-user`` it shows a sign-in page instead);
- ``/token``: authorization_code (checks the PKCE verifier, S256) and refresh_token grants;
- ``/mcp``: a small MCP server (JSON answers) protected by those tokens: 401 with a
  Bearer challenge without one; tool ``write`` needs scope ``mcp:write`` (403
  ``insufficient_scope``: step-up), tool ``admin`` a scope never granted;
- ``/_stats``: what happened (authorization requests' scopes, registrations, tokens).

:func:`running` starts it on a thread and yields its base URL.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import secrets
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from aiohttp import web


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def make_app(base: str) -> web.Application:
    """The app; ``base`` is the URL it is reached at (issuer and resource are derived from it)."""
    clients: dict[str, dict[str, Any]] = {}
    codes: dict[str, dict[str, Any]] = {}
    refresh: dict[str, str] = {}
    granted: dict[str, set[str]] = {}  # access token -> its scopes
    stats: dict[str, list[Any]] = {"authorize_scopes": [], "registrations": [], "tokens": []}
    prm = f"{base}/.well-known/oauth-protected-resource/mcp"

    async def resource_meta(request: web.Request) -> web.Response:
        return web.json_response(
            {"resource": f"{base}/mcp", "authorization_servers": [base], "scopes_supported": ["mcp"]}
        )

    async def server_meta(request: web.Request) -> web.Response:
        return web.json_response(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "registration_endpoint": f"{base}/register",
                "code_challenge_methods_supported": ["S256"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
            }
        )

    async def register(request: web.Request) -> web.Response:
        body = await request.json()
        if not body.get("redirect_uris"):
            return web.json_response({"error": "invalid_redirect_uri"}, status=400)
        client_id = f"client-{len(clients) + 1}"
        clients[client_id] = body
        stats["registrations"].append(client_id)
        return web.json_response({"client_id": client_id, **body}, status=201)

    async def authorize(request: web.Request) -> web.Response:
        q = request.query
        client = clients.get(q.get("client_id", ""))
        if client is None or q.get("redirect_uri") not in client["redirect_uris"]:
            return web.json_response({"error": "invalid_client"}, status=400)
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return web.json_response(
                {"error": "invalid_request", "error_description": "PKCE S256 required"}, status=400
            )
        if q["redirect_uri"].endswith("/needs-a-user"):
            return web.Response(text="<form>sign in</form>", content_type="text/html")
        code = secrets.token_urlsafe(8)
        codes[code] = dict(q)
        stats["authorize_scopes"].append(q.get("scope"))
        raise web.HTTPFound(f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q.get('state', '')})}")

    def tokens(client_id: str, scope: str | None = None) -> dict[str, Any]:
        token = secrets.token_urlsafe(8)
        refresh[token] = client_id
        access = secrets.token_urlsafe(12)
        granted[access] = set((scope or "").split()) - {"mcp:admin"}  # asked for, never granted
        stats["tokens"].append(access)
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": token,
        }

    async def token(request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("grant_type") == "authorization_code":
            grant = codes.pop(str(form.get("code")), None)
            if grant is None:
                return web.json_response(
                    {"error": "invalid_grant", "error_description": "unknown code"}, status=400
                )
            if _s256(str(form.get("code_verifier", ""))) != grant["code_challenge"]:
                return web.json_response(
                    {"error": "invalid_grant", "error_description": "PKCE verifier mismatch"}, status=400
                )
            if form.get("client_id") != grant["client_id"] or form.get("resource") != grant.get("resource"):
                return web.json_response(
                    {"error": "invalid_grant", "error_description": "client or resource mismatch"}, status=400
                )
            return web.json_response(tokens(grant["client_id"], grant.get("scope")))
        if form.get("grant_type") == "refresh_token":
            client_id = refresh.pop(str(form.get("refresh_token")), None)
            if client_id is None or client_id != form.get("client_id"):
                return web.json_response({"error": "invalid_grant"}, status=400)
            return web.json_response(tokens(client_id))
        return web.json_response({"error": "unsupported_grant_type"}, status=400)

    def challenge(status: int, scope: str, error: str) -> web.Response:
        header = f'Bearer error="{error}", scope="{scope}", resource_metadata="{prm}"'
        return web.json_response({"error": error}, status=status, headers={"WWW-Authenticate": header})

    async def mcp(request: web.Request) -> web.Response:
        scopes = granted.get(request.headers.get("Authorization", "").removeprefix("Bearer "))
        if scopes is None:
            return challenge(401, "mcp", "invalid_token")
        body = await request.json()
        if "id" not in body:
            return web.Response(status=202)
        method, params = body.get("method"), body.get("params") or {}
        if method == "initialize":
            result: Any = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "protected", "version": "1"},
            }
        elif method == "tools/list":
            result = {
                "tools": [{"name": n, "inputSchema": {"type": "object"}} for n in ("read", "write", "admin")]
            }
        elif method == "tools/call":
            needs = {"read": "mcp", "write": "mcp:write", "admin": "mcp:admin"}[params["name"]]
            if needs not in scopes:
                return challenge(
                    403, "mcp:admin" if needs == "mcp:admin" else "mcp mcp:write", "insufficient_scope"
                )
            result = {"content": [{"type": "text", "text": f"ok {params['name']}"}]}
        else:
            return web.json_response(
                {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "no"}}
            )
        return web.json_response({"jsonrpc": "2.0", "id": body["id"], "result": result})

    async def no_get(request: web.Request) -> web.Response:
        return web.Response(status=405)

    async def show_stats(request: web.Request) -> web.Response:
        return web.json_response(stats)

    app = web.Application()
    app.router.add_post("/mcp", mcp)
    app.router.add_get("/mcp", no_get)
    app.router.add_get("/_stats", show_stats)
    app.router.add_get("/.well-known/oauth-protected-resource/mcp", resource_meta)
    app.router.add_get("/.well-known/oauth-authorization-server", server_meta)
    app.router.add_post("/register", register)
    app.router.add_get("/authorize", authorize)
    app.router.add_post("/token", token)
    return app


@contextlib.contextmanager
def running() -> Iterator[str]:
    """Run the server on 127.0.0.1 (a free port) on a thread; yields its base URL."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def start() -> None:
        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        runner = web.AppRunner(make_app(base))
        await runner.setup()
        await web.SockSite(runner, sock).start()
        state.update(base=base, runner=runner)
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    try:
        yield state["base"]
    finally:
        asyncio.run_coroutine_threadsafe(state["runner"].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
