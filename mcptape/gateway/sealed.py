"""Sealed session ids: what a client-facing ``Mcp-Session-Id`` carries so any replica can serve it.

Several ``mcptape proxy`` replicas behind one balancer share a key. The session id a
client gets is the session's facts sealed with that key (authenticated encryption,
AES-256-GCM from the ``cryptography`` package, a fresh 96-bit nonce per id): which
upstream entry it belongs to, and either

- the **upstream's own session id** (an upstream that speaks streamable HTTP, passed
  through): any replica opens the seal and forwards the request, with no local state;
- or the **replica** that runs the session and its id there (a stdio upstream, or any
  session the gateway runs itself): the process lives on one replica, so another one
  answers 404, as the specification says for an unknown session, naming where it lives.

and the conversation it records into (every replica's rows of one session share it).
A client can neither read nor forge a sealed id: one that does not open with any key
is an unknown session (404). The ids are visible ASCII (``mt1.`` then base64url), as
the specification requires.

Keys: ``--session-key-file PATH`` (one key a line, ``#`` comments) or
``$MCPTAPE_SESSION_KEY`` (keys separated by commas or spaces). A key is 32 random bytes
written as base64 or as 64 hex digits (``openssl rand -base64 32``). The first key
seals; every key opens, so a rotation adds the new key first and keeps the old one
after it until the sessions sealed with it have ended.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import orjson

KEY_ENV: Final = "MCPTAPE_SESSION_KEY"
PREFIX: Final = "mt1."
_AAD: Final = b"mcptape sealed session id v1"
_NONCE: Final = 12
_HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")
# Sealed ids are short: anything much longer than the longest one we mint is not ours.
MAX_SEALED: Final = 2048


class SessionKeyError(ValueError):
    """A session key the user must fix (one line saying which and why)."""


@dataclass(frozen=True, slots=True)
class Sealed:
    """What a sealed session id says.

    ``upstream_sid`` is set for a session passed through to an HTTP upstream (any replica
    serves it); ``replica`` and ``local_sid`` for a session that lives on one replica.
    """

    name: str
    conversation: str
    upstream_sid: str | None = None
    replica: str | None = None
    local_sid: str | None = None

    @property
    def passed_through(self) -> bool:
        return self.upstream_sid is not None


def parse_key(text: str, where: str) -> bytes:
    """A 32-byte key from its base64 (standard or URL-safe, padding optional) or hex text."""
    text = text.strip()
    if _HEX_KEY.fullmatch(text):
        return bytes.fromhex(text)
    padded = text + "=" * (-len(text) % 4)
    try:
        key = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != 32:
        raise SessionKeyError(
            f"{where}: a session key is 32 random bytes as base64 or 64 hex digits "
            "(make one with: openssl rand -base64 32)"
        )
    return key


def read_keys(path: str | None = None, env: str | None = None) -> list[bytes]:
    """The keys of ``--session-key-file`` (else of ``$MCPTAPE_SESSION_KEY``), first the one that seals.

    An empty list when neither is given. Raises :class:`SessionKeyError` for an unreadable file or a bad key.
    """
    if path is not None:
        try:
            text = Path(path).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise SessionKeyError(f"--session-key-file {path}: cannot read it ({exc})") from None
        lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        keys = [
            parse_key(line, f"--session-key-file {path} line {n}") for n, line in enumerate(lines, 1) if line
        ]
        if not keys:
            raise SessionKeyError(f"--session-key-file {path} holds no key")
        return keys
    value = os.environ.get(KEY_ENV) if env is None else env
    if not value or not value.strip():
        return []
    parts = [p for p in re.split(r"[,\s]+", value) if p]
    return [parse_key(p, f"${KEY_ENV} key {n}") for n, p in enumerate(parts, 1)]


class Sealer:
    """Seals and opens session ids with a key ring (the first key seals, all open)."""

    def __init__(self, keys: list[bytes]) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if not keys:
            raise ValueError("a Sealer needs at least one key")
        self._ciphers = [AESGCM(key) for key in keys]

    @classmethod
    def ephemeral(cls) -> Sealer:
        """A sealer with a key of its own (one process: its ids mean nothing elsewhere)."""
        return cls([secrets.token_bytes(32)])

    def seal(self, facts: Sealed) -> str:
        payload = orjson.dumps(
            [facts.name, facts.conversation, facts.upstream_sid, facts.replica, facts.local_sid]
        )
        nonce = secrets.token_bytes(_NONCE)
        sealed = self._ciphers[0].encrypt(nonce, payload, _AAD)
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).rstrip(b"=").decode()

    def open(self, sid: str) -> Sealed | None:
        """What ``sid`` says, or None when it is not an id sealed with one of the keys."""
        from cryptography.exceptions import InvalidTag

        if not sid.startswith(PREFIX) or len(sid) > MAX_SEALED:
            return None
        body = sid[len(PREFIX) :]
        try:
            blob = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            return None
        if len(blob) <= _NONCE + 16:
            return None
        nonce, sealed = blob[:_NONCE], blob[_NONCE:]
        for cipher in self._ciphers:
            try:
                payload = cipher.decrypt(nonce, sealed, _AAD)
            except InvalidTag:
                continue
            return _facts(payload)
        return None


def _facts(payload: bytes) -> Sealed | None:
    try:
        name, conversation, upstream_sid, replica, local_sid = orjson.loads(payload)
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return None
    strings = (name, conversation)
    optional = (upstream_sid, replica, local_sid)
    if not all(isinstance(v, str) for v in strings) or not all(
        v is None or isinstance(v, str) for v in optional
    ):
        return None
    return Sealed(name, conversation, upstream_sid, replica, local_sid)


def unknown_session(sealer: Sealer | None, sid: str, name: str, replica: str | None) -> str:
    """Why a session id this replica does not hold is unknown: the one line of its 404.

    A sealed id naming another replica says so (the balancer did not keep the session
    where it lives, or that replica is gone); anything else ended, expired or never was.
    """
    facts = sealer.open(sid) if sealer is not None else None
    shown = sid if len(sid) <= 40 else sid[:37] + "..."
    if facts is not None and facts.name == name and facts.replica and facts.replica != replica:
        return (
            f"session {shown!r} lives on replica {facts.replica!r}, not here ({replica!r}): it runs a "
            "process there, so the balancer must send its requests there (deploy/haproxy.cfg sticks "
            "on Mcp-Session-Id); if that replica is gone, start a new session"
        )
    return f"session {shown!r} does not exist (it ended or expired); start a new one"


def open_passed_through(sealer: Sealer, sid: str, name: str) -> Sealed | str:
    """The facts of a pass-through session id for upstream ``name``, or why it is unknown (404)."""
    facts = sealer.open(sid)
    if facts is None or facts.name != name or not facts.passed_through:
        return unknown_session(sealer, sid, name, None)
    return facts
