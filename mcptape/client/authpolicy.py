"""What the OAuth-on-401 flow asks for and where (pure functions; the flow is in authflow.py).

The MCP authorization specification's choices, as plain values in and out: the Bearer
challenge's parameters, where metadata may be (RFC 9728, RFC 8414 and OpenID Connect
discovery, in the specification's order), whether a resource's metadata is really its
own, the scopes to ask for, and how a client authenticates at the token endpoint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

CHALLENGE_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))')


@dataclass
class ClientConfig:
    """Who ``call`` is to the authorization server (flags)."""

    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    redirect_uri: str = "http://127.0.0.1:33418/callback"
    client_name: str = "mcptape"


@dataclass(frozen=True)
class Challenge:
    """The parameters of a ``Bearer`` challenge in ``WWW-Authenticate``."""

    error: str | None = None
    scope: str | None = None
    resource_metadata: str | None = None
    realm: str | None = None

    @property
    def gateway_token(self) -> bool:
        """An mcptape gateway asking for its own token (``realm="mcptape"``): no OAuth gets that."""
        return self.realm == "mcptape"


def parse_challenge(header: str | None) -> Challenge:
    """The Bearer challenge's parameters (RFC 6750 section 3); empty when there is none."""
    if not header:
        return Challenge()
    start = header.lower().find("bearer")
    if start < 0:
        return Challenge()
    params = {
        m[1].lower(): (m[2].replace('\\"', '"') if m[2] is not None else m[3])
        for m in CHALLENGE_PARAM.finditer(header, start + 6)
    }
    return Challenge(
        params.get("error"), params.get("scope") or None, params.get("resource_metadata"), params.get("realm")
    )


def at(url: str, path: str) -> str:
    """``url``'s scheme and host with ``path``."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def resource_metadata_urls(resource: str, challenge: Challenge) -> list[str]:
    """Where the protected-resource metadata may be, in the order to try."""
    path = urlsplit(resource).path.rstrip("/")
    urls = [challenge.resource_metadata] if challenge.resource_metadata else []
    if path:
        urls.append(at(resource, f"/.well-known/oauth-protected-resource{path}"))
    urls.append(at(resource, "/.well-known/oauth-protected-resource"))
    return urls


def server_metadata_urls(issuer: str) -> list[str]:
    """Where an authorization server's metadata may be (MCP 2025-11-25 order); never the root for a path."""
    path = urlsplit(issuer).path.rstrip("/")
    if not path:
        return [
            at(issuer, "/.well-known/oauth-authorization-server"),
            at(issuer, "/.well-known/openid-configuration"),
        ]
    return [
        at(issuer, f"/.well-known/oauth-authorization-server{path}"),
        at(issuer, f"/.well-known/openid-configuration{path}"),
        at(issuer, f"{path}/.well-known/openid-configuration"),
    ]


def fallback_endpoints(origin: str) -> dict[str, Any]:
    """2025-03-26: an authorization server without metadata has its endpoints at its root."""
    return {
        "authorization_endpoint": at(origin, "/authorize"),
        "token_endpoint": at(origin, "/token"),
        "registration_endpoint": at(origin, "/register"),
    }


def resource_matches(url: str, advertised: str) -> bool:
    """RFC 9728 section 3.3: the metadata's ``resource`` must be the server's URL (or a parent of it)."""
    a, b = urlsplit(url), urlsplit(advertised)
    if (a.scheme.lower(), a.netloc.lower()) != (b.scheme.lower(), b.netloc.lower()):
        return False
    prefix = b.path.rstrip("/")
    return a.path.rstrip("/") == prefix or a.path.startswith(prefix + "/")


def choose_scope(challenge: Challenge, resource_meta: dict[str, Any] | None) -> set[str]:
    """The scopes to ask for: the challenge's, else everything the resource supports, else none."""
    if challenge.scope:
        return set(challenge.scope.split())
    supported = (resource_meta or {}).get("scopes_supported")
    if isinstance(supported, list):
        return {s for s in supported if isinstance(s, str)}
    return set()


def choose_auth_method(server_meta: dict[str, Any], client: dict[str, Any]) -> str:
    """How to authenticate at the token endpoint: what registration said, else what the server supports."""
    registered = client.get("token_endpoint_auth_method")
    if isinstance(registered, str):
        return registered
    if not client.get("client_secret"):
        return "none"
    supported = server_meta.get("token_endpoint_auth_methods_supported")
    if isinstance(supported, list):
        for method in ("client_secret_basic", "client_secret_post", "none"):
            if method in supported:
                return method
    return "client_secret_basic"  # RFC 8414's default


def authenticate(method: str, client: dict[str, Any], form: dict[str, str]) -> dict[str, str]:
    """Add the client's credentials to a token request; returns the headers to send."""
    client_id, secret = str(client["client_id"]), client.get("client_secret")
    if method == "client_secret_basic" and secret:
        import base64  # here, so that call's start does not pay for it

        pair = f"{quote(client_id, safe='')}:{quote(str(secret), safe='')}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    form["client_id"] = client_id
    if method == "client_secret_post" and secret:
        form["client_secret"] = str(secret)
    return {}


def machine_to_machine(server_meta: dict[str, Any], client: dict[str, Any]) -> bool:
    """The client_credentials grant (SEP-1046): a server that offers it and not the code flow, and a secret."""
    grants = server_meta.get("grant_types_supported")
    return (
        isinstance(grants, list)
        and "client_credentials" in grants
        and "authorization_code" not in grants
        and bool(client.get("client_secret"))
    )


def auth_refusal(data: Any) -> tuple[int, str | None] | None:
    """(status, WWW-Authenticate) of an HTTP 401/403 a link reported (its error's data), else None."""
    if not isinstance(data, dict):
        return None
    status = data.get("status")
    if status not in (401, 403):
        return None
    header = data.get("www_authenticate")
    return int(status), header if isinstance(header, str) else None
