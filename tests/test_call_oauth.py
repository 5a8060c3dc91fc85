"""`call`'s OAuth steps against a small authorization server on loopback (tests/servers/oauth_server.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from urllib.request import HTTPRedirectHandler, Request, build_opener

import pytest

from mcptape.client.authpolicy import Challenge, resource_metadata_urls
from mcptape.client.oauth import OAuthCall, authorize_url, pkce_pair
from tests.helpers.paths import MCPTAPE
from tests.servers.oauth_server import _s256, running


def _call(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCPTAPE, "call", *args], capture_output=True, text=True, timeout=60)


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


class _NoRedirect(HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _approve(url: str) -> dict[str, list[str]]:
    """Play the user's browser: open the authorization URL, read the redirect's query."""
    try:
        build_opener(_NoRedirect).open(Request(url))
    except Exception as exc:  # urllib raises HTTPError for the 302 it was told not to follow
        location = exc.headers["Location"]  # type: ignore[attr-defined]
    return parse_qs(urlsplit(location).query)


@pytest.mark.slow
def test_discover_register_authorize_token_and_refresh_without_a_browser() -> None:
    with running() as base:
        url = f"{base}/mcp"
        meta = _json(_call("-m", "oauth/discover", "--url", url))
        assert meta["resource"]["authorization_servers"] == [base]
        assert meta["authorizationServer"]["token_endpoint"] == f"{base}/token"
        client = _json(_call("-m", "oauth/register", "--url", url, "--scope", "mcp"))
        client_id = client["client_id"]
        start = _json(_call("-m", "oauth/authorize-url", "--url", url, "--client-id", client_id))
        query = parse_qs(urlsplit(start["url"]).query)
        assert query["code_challenge"] == [_s256(start["codeVerifier"])]
        assert query["resource"] == [url] and query["code_challenge_method"] == ["S256"]
        redirect = _approve(start["url"])
        assert redirect["state"] == [start["state"]]
        code = redirect["code"][0]
        args = ["-m", "oauth/token", "--url", url, "--client-id", client_id, "--code", code]
        tokens = _json(_call(*args, "--code-verifier", start["codeVerifier"]))
        assert tokens["token_type"] == "Bearer" and tokens["access_token"]
        again = _json(
            _call(
                "-m",
                "oauth/refresh",
                "--url",
                url,
                "--client-id",
                client_id,
                "--refresh-token",
                tokens["refresh_token"],
            )
        )
        assert again["access_token"] != tokens["access_token"]


@pytest.mark.slow
def test_a_wrong_verifier_is_the_servers_error_with_exit_2() -> None:
    with running() as base:
        url = f"{base}/mcp"
        client_id = _json(_call("-m", "oauth/register", "--url", url))["client_id"]
        start = _json(_call("-m", "oauth/authorize-url", "--url", url, "--client-id", client_id))
        code = _approve(start["url"])["code"][0]
        args = ["-m", "oauth/token", "--url", url, "--client-id", client_id, "--code", code]
        proc = _call(*args, "--code-verifier", "not-the-verifier", "--structured")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert error["category"] == "application" and error["code"] == 400
    assert "PKCE verifier mismatch" in error["message"]


@pytest.mark.slow
def test_a_resource_without_metadata_says_to_name_the_authorization_server() -> None:
    with running() as base:
        proc = _call("-m", "oauth/discover", "--url", f"{base}/elsewhere", "--structured")
    assert proc.returncode == 1
    assert "give --auth-server URL" in json.loads(proc.stdout)["error"]["message"]


def test_pure_parts() -> None:
    assert resource_metadata_urls("https://h.example/a/mcp/", Challenge()) == [
        "https://h.example/.well-known/oauth-protected-resource/a/mcp",
        "https://h.example/.well-known/oauth-protected-resource",
    ]
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128 and challenge == _s256(verifier)
    call = OAuthCall("oauth/authorize-url", "https://r/mcp", client_id="c", scope="a b", state="s")
    out = authorize_url(call, {"authorization_endpoint": "https://as/authorize?x=1"})
    assert out["url"].startswith("https://as/authorize?x=1&response_type=code&client_id=c")
    assert "scope=a+b" in out["url"] and out["state"] == "s"


def _stats(base: str) -> dict[str, Any]:
    from urllib.request import urlopen

    with urlopen(f"{base}/_stats") as response:
        stats: dict[str, Any] = json.load(response)
    return stats


@pytest.mark.slow
def test_a_401_runs_the_oauth_flow_and_the_call_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "rec.db"
    with running() as base:
        proc = _call("-m", "tools/list", "--url", f"{base}/mcp", "--db", str(db))
        stats = _stats(base)
    assert proc.returncode == 0, proc.stderr
    assert [t["name"] for t in json.loads(proc.stdout)["tools"]] == ["read", "write", "admin"]
    assert "mcptape: authorized at" in proc.stderr
    # Registered once, and asked for the challenge's scope.
    assert len(stats["registrations"]) == 1 and stats["authorize_scopes"] == ["mcp"]
    # The token never reaches the recording.
    assert stats["tokens"] and stats["tokens"][0].encode() not in db.read_bytes()


@pytest.mark.slow
def test_step_up_on_403_insufficient_scope_asks_for_the_union_and_sends_again() -> None:
    with running() as base:
        proc = _call("-m", "tools/call", "--tool-name", "write", "--url", f"{base}/mcp", "--no-record")
        stats = _stats(base)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"][0]["text"] == "ok write"
    assert stats["authorize_scopes"] == ["mcp", "mcp mcp:write"]
    assert len(stats["registrations"]) == 1  # the client is registered once per session


@pytest.mark.slow
def test_a_scope_never_granted_ends_after_one_step_up_with_the_403() -> None:
    with running() as base:
        proc = _call(
            "-m", "tools/call", "--tool-name", "admin", "--url", f"{base}/mcp", "--no-record", "--structured"
        )
        stats = _stats(base)
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert error["category"] == "transport" and "403" in error["message"]
    # Asked once for the scope the 403 named; the same 403 again is not worth another try.
    assert stats["authorize_scopes"] == ["mcp", "mcp mcp:admin"]


@pytest.mark.slow
def test_no_oauth_leaves_the_401_as_the_error() -> None:
    with running() as base:
        proc = _call("-m", "tools/list", "--url", f"{base}/mcp", "--no-record", "--no-oauth", "--structured")
        stats = _stats(base)
    assert proc.returncode == 1
    error = json.loads(proc.stdout)["error"]
    assert "401" in error["message"] and "resource_metadata" in error["data"]["www_authenticate"]
    assert stats["authorize_scopes"] == [] and stats["registrations"] == []


@pytest.mark.slow
def test_an_authorization_server_that_wants_a_user_is_a_one_line_error_naming_the_way_out() -> None:
    with running() as base:
        proc = _call(
            "-m",
            "tools/list",
            "--url",
            f"{base}/mcp",
            "--no-record",
            "--redirect-uri",
            "http://127.0.0.1:9/needs-a-user",
        )
    assert proc.returncode == 1
    assert "wants a user" in proc.stderr and "--token" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "body",
    [b"<html>sign in</html>", b"[" * 100_000 + b"]" * 100_000],
    ids=["login-page", "nested-too-deep"],
)
def test_metadata_and_answers_that_are_no_json_object_are_one_line_errors(body: bytes) -> None:
    # oauth/discover printed a JSONDecodeError (or RecursionError) traceback for a 200 that
    # was a login page; the flow on 401 called the nesting a "protocol" RecursionError.
    import asyncio

    import aiohttp
    from aiohttp import web

    from mcptape.client.authflow import Authorizer
    from mcptape.client.errors import ClientError
    from mcptape.client.oauth import perform_oauth, post_json

    async def page(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async def main() -> list[str]:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", page)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        base = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        said = []
        try:
            for attempt in (
                perform_oauth(OAuthCall("oauth/discover", f"{base}/mcp")),
                perform_oauth(OAuthCall("oauth/discover", f"{base}/mcp", auth_server=base)),
            ):
                with pytest.raises(ClientError) as caught:
                    await attempt
                said.append(caught.value.message)
            async with aiohttp.ClientSession() as http:
                with pytest.raises(ClientError) as caught:
                    await post_json(http, f"{base}/token", data={"a": "b"})
                said.append(caught.value.message)
            with pytest.raises(ClientError) as caught:  # the flow `call` runs on a 401
                await Authorizer(f"{base}/mcp").token_for(401, "Bearer")
            said.append(caught.value.message)
        finally:
            await runner.cleanup()
        return [text.replace(base, "BASE") for text in said]

    assert asyncio.run(main()) == [
        "BASE/mcp publishes no protected-resource metadata naming an authorization server; give --auth-server URL",
        "no authorization server metadata at BASE/.well-known/oauth-authorization-server, BASE/.well-known/openid-configuration",
        "BASE/token answered HTTP 200 without a JSON object",
        "OAuth for BASE/mcp failed: BASE/register answered HTTP 200 without a JSON object",
    ]
