"""The gateway's own protection: Host/Origin against DNS rebinding, and its bearer token (pure).

After mcptape rewrites ``Host`` for an upstream, the upstream can no longer protect the
client against DNS rebinding, so the gateway checks both headers itself, before
anything else. The token is compared in constant time; it is accepted as
``Authorization: Bearer …`` or in mcptape's own ``X-Mcptape-Token`` header (then the
client's ``Authorization`` passes to the upstream untouched, for OAuth-protected
upstreams). The token itself never leaves the gateway, whichever header carries it
(:func:`without_token`).

A session is bound to the credential that opened it (:func:`credential_of`: the client's
own ``Authorization``, as forwarded): a request naming the session with another one is
answered as for an unknown session, so a session id seen by someone else opens nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

TOKEN_HEADER = "X-Mcptape-Token"
TOKEN_ENV = "MCPTAPE_PROXY_TOKEN"
_KEY = secrets.token_bytes(32)  # credentials are compared as keyed digests, never kept as they are


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether a bind address or host name stays on this machine."""
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind_host: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` values a request may carry: the bound name (and loopback aliases) with the port."""
    names = {bind_host, *extra}
    if is_loopback(bind_host):
        names |= {"127.0.0.1", "localhost", "[::1]"}
    if ":" in bind_host and not bind_host.startswith("["):
        names.add(f"[{bind_host}]")
    return frozenset({f"{n}:{port}".lower() for n in names} | {n.lower() for n in names})


def origin_allowed(origin: str | None, hosts: frozenset[str], extra_origins: Iterable[str] = ()) -> bool:
    """No ``Origin`` (not a browser) is fine; otherwise it must name this gateway or an allowed origin."""
    if origin is None:
        return True
    if origin in set(extra_origins):
        return True
    try:
        parts = urlsplit(origin)  # raises on a broken IPv6 literal ("http://[::1")
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return False
    try:
        # An origin without a port is on the scheme's default port: `http://127.0.0.1` is
        # another site than the gateway on 127.0.0.1:8808 (a Host may omit the port; an
        # origin means it).
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port}".lower() in hosts


@dataclass(frozen=True)
class AuthResult:
    ok: bool
    via: str | None = None  # "authorization" (consume the header) or "own-header"


def check_token(headers: Mapping[str, str], token: str | None) -> AuthResult:
    """Whether a request carries the gateway's token, and where (``token`` None: auth is off)."""
    if token is None:
        return AuthResult(True)
    own = headers.get(TOKEN_HEADER)
    if own is not None:
        return AuthResult(_same(own, token), "own-header")
    scheme, _, value = headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return AuthResult(_same(value.strip(), token), "authorization")
    return AuthResult(False)


def _same(given: str, token: str) -> bool:
    # Header values arrive decoded with surrogateescape: bytes that are not UTF-8 must
    # compare unequal, not raise (a 500 with a traceback per request).
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode())


# What separates the credentials in a header value: ``Bearer T``, ``a=T; b=c``, ``T, U``.
_PARTS = re.compile(r"[\s,;=]+")


def carries_token(value: str, token: str) -> bool:
    """Whether a header value holds the gateway's token, alone or as one of its credentials."""
    return value.strip() == token or token in _PARTS.split(value)


def without_token(headers: Iterable[tuple[str, str]], token: str | None) -> list[tuple[str, str]]:
    """Request headers as they may leave the gateway: never ``X-Mcptape-Token``, and no header
    holding the gateway's token (``Authorization: Bearer TOKEN`` beside ``X-Mcptape-Token``,
    a cookie): the upstream must not learn what opens the gateway."""
    own = TOKEN_HEADER.lower()
    return [
        (name, value)
        for name, value in headers
        if name.lower() != own and (token is None or not carries_token(value, token))
    ]


def credential_of(authorization: str | None) -> bytes:
    """What binds a session to its client: a keyed digest of the ``Authorization`` it forwards
    (none: the empty one). Compare with :func:`same_credential`."""
    value = (authorization or "").encode("utf-8", "surrogateescape")
    return hmac.new(_KEY, value, hashlib.sha256).digest()


def same_credential(a: bytes, b: bytes) -> bool:
    return hmac.compare_digest(a, b)
