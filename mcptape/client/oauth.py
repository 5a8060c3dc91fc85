"""OAuth steps for remote MCP servers, without a browser: each one HTTP exchange, printed as JSON.

The MCP authorization flow, split so a CI job (or a person with a browser elsewhere)
can run it step by step:

``oauth/discover``      the protected resource's metadata (RFC 9728, from
                        ``/.well-known/oauth-protected-resource``, path-suffixed first) and
                        its first authorization server's metadata (RFC 8414, then OpenID
                        Connect discovery, in the order of mcptape.client.authpolicy)
``oauth/register``      dynamic client registration (RFC 7591)
``oauth/authorize-url`` the authorization URL with a fresh PKCE verifier and S256 challenge
                        (prints both; nothing is sent)
``oauth/token``         the authorization code exchanged for tokens
``oauth/refresh``       a refresh token exchanged for new tokens

The ``resource`` parameter (RFC 8707) is the MCP server's URL in every step.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from mcptape.client.authpolicy import Challenge, resource_metadata_urls, server_metadata_urls
from mcptape.client.errors import ApplicationError, ProtocolError, TransportError, ValidationError

METHODS = ("oauth/discover", "oauth/register", "oauth/authorize-url", "oauth/token", "oauth/refresh")


@dataclass
class OAuthCall:
    """The inputs of one OAuth step (flags or a script step)."""

    method: str
    resource: str
    auth_server: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    client_name: str = "mcptape"
    redirect_uri: str = "http://127.0.0.1:33418/callback"
    scope: str | None = None
    code: str | None = None
    code_verifier: str | None = None
    refresh_token: str | None = None
    state: str | None = None


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def authorize_url(call: OAuthCall, metadata: dict[str, Any]) -> dict[str, Any]:
    """The authorization URL, the verifier to keep for ``oauth/token`` and the state."""
    endpoint = metadata.get("authorization_endpoint")
    if not isinstance(endpoint, str):
        raise ProtocolError("the authorization server's metadata has no authorization_endpoint")
    if not call.client_id:
        raise ValidationError("oauth/authorize-url needs --client-id (from oauth/register)")
    verifier, challenge = pkce_pair()
    state = call.state or secrets.token_urlsafe(16)
    query = {
        "response_type": "code",
        "client_id": call.client_id,
        "redirect_uri": call.redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        "resource": call.resource,
    }
    if call.scope:
        query["scope"] = call.scope
    sep = "&" if "?" in endpoint else "?"
    return {"url": f"{endpoint}{sep}{urlencode(query)}", "codeVerifier": verifier, "state": state}


async def _get_json(session: Any, urls: list[str]) -> tuple[str, dict[str, Any]] | None:
    for url in urls:
        async with session.get(url) as response:
            if response.status == 200:
                try:
                    body = await response.json(content_type=None)
                except (ValueError, RecursionError):
                    continue  # not JSON (a login page), or nested past any parser: not metadata
                if isinstance(body, dict):
                    return url, body
    return None


async def post_json(session: Any, url: str, **kwargs: Any) -> dict[str, Any]:
    """POST to an OAuth endpoint and return its JSON object; its error, or a bad answer, as a ClientError."""
    async with session.post(url, **kwargs) as response:
        try:
            body = await response.json(content_type=None)
        except (ValueError, RecursionError):  # RecursionError: nested past any parser
            body = None
        if response.status >= 400:
            error = body if isinstance(body, dict) else {}
            message = error.get("error_description") or error.get("error") or f"HTTP {response.status}"
            raise ApplicationError(f"{url}: {message}", code=response.status, data=error or None)
        if not isinstance(body, dict):
            raise ProtocolError(f"{url} answered HTTP {response.status} without a JSON object")
        return body


async def discover(session: Any, call: OAuthCall) -> dict[str, Any]:
    """Protected-resource and authorization-server metadata."""
    found = await _get_json(session, resource_metadata_urls(call.resource, Challenge()))
    resource_meta = found[1] if found else None
    issuer = call.auth_server
    if issuer is None and resource_meta is not None:
        servers = resource_meta.get("authorization_servers")
        if isinstance(servers, list) and servers and isinstance(servers[0], str):
            issuer = servers[0]
    if issuer is None:
        raise ProtocolError(
            f"{call.resource} publishes no protected-resource metadata naming an authorization server; "
            "give --auth-server URL"
        )
    urls = server_metadata_urls(issuer)
    found_as = await _get_json(session, urls)
    if found_as is None:
        raise ProtocolError(f"no authorization server metadata at {', '.join(urls)}")
    return {"resource": resource_meta, "authorizationServer": found_as[1], "authorizationServerUrl": issuer}


def _endpoint(meta: dict[str, Any], name: str) -> str:
    value = meta["authorizationServer"].get(name)
    if not isinstance(value, str):
        raise ProtocolError(f"the authorization server's metadata has no {name}")
    return value


def _client_auth(call: OAuthCall, form: dict[str, str]) -> dict[str, str]:
    if not call.client_id:
        raise ValidationError(f"{call.method} needs --client-id")
    form["client_id"] = call.client_id
    if call.client_secret:
        form["client_secret"] = call.client_secret
    return form


async def perform_oauth(call: OAuthCall) -> Any:
    """Run one OAuth step; its JSON result, or a ClientError."""
    import aiohttp

    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
            meta = await discover(session, call)
            if call.method == "oauth/discover":
                return meta
            if call.method == "oauth/authorize-url":
                return authorize_url(call, meta["authorizationServer"])
            if call.method == "oauth/register":
                body = {
                    "client_name": call.client_name,
                    "redirect_uris": [call.redirect_uri],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "token_endpoint_auth_method": "none",
                }
                if call.scope:
                    body["scope"] = call.scope
                return await post_json(session, _endpoint(meta, "registration_endpoint"), json=body)
            if call.method == "oauth/token":
                if not call.code or not call.code_verifier:
                    raise ValidationError("oauth/token needs --code and --code-verifier")
                form = {
                    "grant_type": "authorization_code",
                    "code": call.code,
                    "redirect_uri": call.redirect_uri,
                    "code_verifier": call.code_verifier,
                    "resource": call.resource,
                }
                return await post_json(
                    session, _endpoint(meta, "token_endpoint"), data=_client_auth(call, form)
                )
            if call.method == "oauth/refresh":
                if not call.refresh_token:
                    raise ValidationError("oauth/refresh needs --refresh-token")
                form = {
                    "grant_type": "refresh_token",
                    "refresh_token": call.refresh_token,
                    "resource": call.resource,
                }
                return await post_json(
                    session, _endpoint(meta, "token_endpoint"), data=_client_auth(call, form)
                )
            raise ValidationError(f"unknown OAuth step {call.method!r}; known: {', '.join(METHODS)}")
    except aiohttp.ClientError as exc:
        raise TransportError(f"{call.resource}: {exc}") from exc
