"""OAuth on 401: the browser-less authorization code flow ``call`` runs when a server asks for a token.

When a streamable HTTP server answers a request with 401 (or 403 ``insufficient_scope``)
and a ``WWW-Authenticate: Bearer ...`` challenge, :class:`Authorizer` gets a token the
way the MCP authorization specification (2025-11-25, with the 2025-03-26 fallbacks)
describes, then the request is sent again with ``Authorization: Bearer``:

1. protected-resource metadata (RFC 9728): the challenge's ``resource_metadata`` URL,
   else ``/.well-known/oauth-protected-resource`` path-suffixed, then at the root; its
   ``resource`` must be the server's URL (or a parent); without any metadata, the MCP
   server's origin is the authorization server (2025-03-26);
2. authorization-server metadata (RFC 8414 path insertion, OpenID Connect insertion,
   then appending); without any, ``/authorize``, ``/token``, ``/register`` at its root;
3. the client: ``--client-id`` (pre-registered), else a Client ID Metadata Document URL
   (``--client-metadata-url``) where the server supports them, else dynamic registration;
4. the authorization request with PKCE (S256), ``state`` and ``resource`` (RFC 8707),
   for an authorization server that redirects at once (no user, as in CI); one that
   wants a user is an error that says to get a token with the oauth/* steps;
5. the token request, authenticated the way the server supports (basic, post, none).
   A server that offers only the ``client_credentials`` grant (SEP-1046) gets that,
   for a client with a secret, instead of steps 4 and 5.

Scopes: the challenge's ``scope``, else the resource's ``scopes_supported``, else none;
a 403 ``insufficient_scope`` asks again with the union (step-up). At most
:data:`MAX_AUTHORIZATIONS` authorizations per session, and never twice for the same
scopes after a 403, so a server that is never satisfied cannot loop.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from mcptape.client.authpolicy import (
    Challenge,
    ClientConfig,
    at,
    authenticate,
    choose_auth_method,
    choose_scope,
    fallback_endpoints,
    machine_to_machine,
    parse_challenge,
    resource_matches,
    resource_metadata_urls,
    server_metadata_urls,
)
from mcptape.client.errors import ApplicationError, ClientError, ProtocolError, TransportError
from mcptape.client.oauth import pkce_pair, post_json

MAX_AUTHORIZATIONS = 3


@dataclass
class Authorizer:
    """Gets tokens for one MCP server (``resource``) during one session; see the module docstring."""

    resource: str
    config: ClientConfig = field(default_factory=ClientConfig)
    say: Any = None
    authorizations: int = 0
    scopes: set[str] = field(default_factory=set)
    _resource_meta: dict[str, Any] | None = None
    _server_meta: dict[str, Any] | None = None
    _client: dict[str, Any] | None = None

    async def token_for(self, status: int, www_authenticate: str | None) -> str | None:
        """A new access token after a 401 or a 403 ``insufficient_scope``; None: give up (the error stands)."""
        challenge = parse_challenge(www_authenticate)
        if (status == 403 and challenge.error != "insufficient_scope") or challenge.gateway_token:
            return None
        if self.authorizations >= MAX_AUTHORIZATIONS:
            return None
        import aiohttp

        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as http:
                if self._server_meta is None:
                    await self._discover(http, challenge)
                wanted = choose_scope(challenge, self._resource_meta)
                if status == 403:
                    if wanted <= self.scopes:
                        return None  # asked for these already: another try cannot help
                    wanted |= self.scopes
                self.authorizations += 1
                self.scopes = wanted
                client = await self._the_client(http)
                if machine_to_machine(self._server_meta or {}, client):
                    return await self._client_credentials(http, client, wanted)
                return await self._authorize(http, client, wanted)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise TransportError(f"OAuth for {self.resource}: {type(exc).__name__}: {exc}") from exc
        except ClientError as exc:
            # No token, so the request was never answered: a transport failure (exit 1),
            # whatever the authorization server said.
            raise TransportError(f"OAuth for {self.resource} failed: {exc.message}", data=exc.data) from exc

    async def _get_json(self, http: Any, urls: list[str]) -> dict[str, Any] | None:
        for url in urls:
            async with http.get(url) as response:
                if response.status == 200:
                    try:
                        body = await response.json(content_type=None)
                    except (ValueError, RecursionError):
                        continue  # not JSON (or nested past any parser): not metadata; the next place may have it
                    if isinstance(body, dict):
                        return body
        return None

    async def _discover(self, http: Any, challenge: Challenge) -> None:
        self._resource_meta = await self._get_json(http, resource_metadata_urls(self.resource, challenge))
        advertised = (self._resource_meta or {}).get("resource")
        if isinstance(advertised, str) and not resource_matches(self.resource, advertised):
            # A token for another resource must never be asked for on this one's say-so.
            raise ProtocolError(
                f"the protected-resource metadata of {self.resource} is for {advertised}: not authorizing"
            )
        servers = (self._resource_meta or {}).get("authorization_servers")
        issuer = servers[0] if isinstance(servers, list) and servers and isinstance(servers[0], str) else None
        if issuer is None:
            issuer = at(self.resource, "/")  # 2025-03-26: the MCP server's origin
        meta = await self._get_json(http, server_metadata_urls(issuer))
        self._server_meta = meta if meta is not None else fallback_endpoints(issuer)

    async def _the_client(self, http: Any) -> dict[str, Any]:
        if self._client is not None:
            return self._client
        meta, config = self._server_meta or {}, self.config
        if config.client_id:
            self._client = {"client_id": config.client_id, "client_secret": config.client_secret}
        elif config.client_metadata_url and meta.get("client_id_metadata_document_supported") is True:
            self._client = {"client_id": config.client_metadata_url, "token_endpoint_auth_method": "none"}
        elif isinstance(meta.get("registration_endpoint"), str):
            self._client = await self._register(http, meta)
        else:
            raise ProtocolError(
                f"the authorization server of {self.resource} offers no dynamic client registration: "
                "give --client-id (and --client-secret) of a registered client"
            )
        return self._client

    async def _register(self, http: Any, meta: dict[str, Any]) -> dict[str, Any]:
        supported = meta.get("token_endpoint_auth_methods_supported")
        method = "none"
        if isinstance(supported, list) and supported and "none" not in supported:
            method = str(supported[0])
        body = {
            "client_name": self.config.client_name,
            "redirect_uris": [self.config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
        }
        client = await post_json(http, meta["registration_endpoint"], json=body)
        if not isinstance(client.get("client_id"), str):
            raise ProtocolError("dynamic client registration answered without a client_id")
        return client

    async def _client_credentials(self, http: Any, client: dict[str, Any], scopes: set[str]) -> str:
        meta = self._server_meta or {}
        form = {"grant_type": "client_credentials", "resource": self.resource}
        if scopes:
            form["scope"] = " ".join(sorted(scopes))
        return await self._token(http, meta, client, form)

    async def _token(
        self, http: Any, meta: dict[str, Any], client: dict[str, Any], form: dict[str, str]
    ) -> str:
        token_endpoint = meta.get("token_endpoint")
        if not isinstance(token_endpoint, str):
            raise ProtocolError("the authorization server's metadata has no token_endpoint")
        headers = authenticate(choose_auth_method(meta, client), client, form)
        tokens = await post_json(http, token_endpoint, data=form, headers=headers)
        token = tokens.get("access_token")
        if not isinstance(token, str) or not token:
            raise ProtocolError("the token endpoint answered without an access_token")
        if self.say is not None:
            scope = f" for scope {' '.join(sorted(self.scopes))}" if self.scopes else ""
            self.say(f"authorized at {urlsplit(token_endpoint).netloc} ({form['grant_type']}){scope}")
        return token

    async def _authorize(self, http: Any, client: dict[str, Any], scopes: set[str]) -> str:
        meta = self._server_meta or {}
        endpoint = meta.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            raise ProtocolError("the authorization server's metadata has no authorization_endpoint")
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(16)
        query = {
            "response_type": "code",
            "client_id": str(client["client_id"]),
            "redirect_uri": self.config.redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": self.resource,
        }
        if scopes:
            query["scope"] = " ".join(sorted(scopes))
        url = f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"
        async with http.get(url, allow_redirects=False) as response:
            location = response.headers.get("Location")
            if response.status not in (301, 302, 303, 307, 308) or not location:
                raise ApplicationError(
                    f"the authorization server wants a user (HTTP {response.status} at its authorization "
                    "endpoint): get a token with the oauth/* steps and give it with --token",
                    code=response.status,
                )
        answer = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
        if "error" in answer:
            raise ApplicationError(
                f"authorization refused: {answer.get('error_description') or answer['error']}",
                data=answer,
            )
        if answer.get("state") != state or not answer.get("code"):
            raise ProtocolError("the authorization server's redirect lacks the code or the right state")
        form = {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": self.config.redirect_uri,
            "code_verifier": verifier,
            "resource": self.resource,
        }
        return await self._token(http, meta, client, form)
