"""Redaction of secrets before they reach a recording: command lines, environments,
URLs and HTTP headers. Pure functions on plain values.

A redacted value becomes a placeholder ``«redacted:<8 hex>»``. The hex digits are the
start of HMAC-SHA256(key, secret) with a key drawn at random once per process: within
one recording session (one process) the same secret always gives the same placeholder,
so a recording stays replayable and two places holding one token are seen to match;
across processes the placeholders differ, so nobody can test guesses of a short
password against a placeholder found in an old database. A placeholder is never
redacted again (redacting twice changes nothing).

What counts as a secret (case-insensitive, ``_`` and ``-`` alike):

- flags: ``--token``, ``--api-key``, ``--password``, ``--secret``, ``--key``,
  ``--client-secret``, ``--access-token``, ``--auth``, ``--pat``, ``--cookie``…
  (any flag whose last word is one of :data:`SECRET_WORDS`, or that contains
  ``password``/``secret``/``token``/``apikey`` as a word), as ``--flag value`` or
  ``--flag=value``;
- environment names ``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PAT``, ``*PASSWORD*``,
  ``*PASSWD*``, ``AUTHORIZATION``, ``*_CREDENTIALS``… and ``NAME=value`` arguments
  with such a name (``docker run -e API_KEY=…``);
- in any argument or value: URL user-info (``https://user:pass@host``), query
  parameters such as ``token=``, ``key=``, ``api_key=``, ``sig=``, and the
  credentials after ``Bearer``/``Basic``/``Token``, and tokens whose format names
  them (``ghp_…``, ``github_pat_…``, ``glpat-…``, ``xoxb-…``, ``sk-…``, ``sk_live_…``,
  ``AIza…``, ``AKIA…``, JWTs);
- headers: ``Authorization``, ``Proxy-Authorization`` (the scheme is kept:
  ``Bearer «redacted:…»``), ``Cookie``, ``Set-Cookie``, ``X-Api-Key``, ``Api-Key``,
  ``*-Token``, ``*-Key``, ``*-Secret``, ``Mcp-Session-Id`` (whoever holds a session id
  can use the session) and the names the user adds; likewise a ``session_id`` or
  ``sessionId`` query parameter (a legacy SSE endpoint's);
- in JSON-RPC messages, the values at the JSON paths the user names
  (:func:`parse_json_path`, :func:`redact_json_paths`): JSON Pointers (RFC 6901)
  where a ``*`` segment stands for any key or index, e.g. ``/params/arguments/password``
  or ``/result/content/*/text``.

Redaction fails closed: a message it cannot read (not JSON, nested deeper than it can
follow) raises :class:`Unreadable`, and the recording keeps only
:func:`withheld_message` in its place: its kind, method and id, its size and a
:func:`digest` (keyed like the placeholders), never its content.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "PLACEHOLDER",
    "SECRET_WORDS",
    "Unreadable",
    "digest",
    "is_secret_env_name",
    "is_secret_flag",
    "is_secret_header",
    "parse_json_path",
    "placeholder",
    "redact_argv",
    "redact_headers",
    "redact_json_paths",
    "redact_text",
    "redact_url",
    "withheld_message",
]

_KEY: Final = secrets.token_bytes(32)
PLACEHOLDER: Final = re.compile(r"«redacted:[0-9a-f]{8}»")

# A flag, env name or query parameter whose last word is one of these holds a secret.
SECRET_WORDS: Final = frozenset(
    {
        "key", "apikey", "token", "secret", "password", "passwd", "pwd", "pass", "pat",
        "auth", "authorization", "credential", "credentials", "cookie", "bearer", "sig",
        "signature", "passphrase",
    }
)  # fmt: skip
# Words that make a name secret wherever they stand (``SECRET_KEY_BASE``, ``--token-file``
# is the exception people expect least, and redacting a path loses little).
_ANYWHERE: Final = frozenset({"password", "passwd", "secret", "secrets", "token", "apikey", "passphrase"})
# Names that end in a secret word but hold none.
_NOT_SECRET: Final = frozenset({"pwd", "oldpwd"})

_SECRET_HEADERS: Final = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "mcp-session-id"}
)
# Query parameters that carry a session id (legacy SSE endpoints): a credential like a token.
_SESSION_PARAMS: Final = frozenset({"session_id", "sessionid"})
_AUTH_HEADERS: Final = frozenset({"authorization", "proxy-authorization"})

_USERINFO: Final = re.compile(
    r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^/?#@\s:]*)(?::(?P<pw>[^/?#@\s]*))?@"
)
_QUERY_PARAM: Final = re.compile(r"(?P<lead>[?&;])(?P<name>[^=&#;\s]+)=(?P<value>[^&#;\s]*)")
# Basic and Token credentials are long; the length keeps "token limit" from counting.
_SCHEME_CREDENTIALS: Final = re.compile(
    r"(?i)\b(?:(?P<bearer>bearer)(?P<gap>\s+)(?P<cred>[A-Za-z0-9\-._~+/]+=*)"
    r"|(?P<scheme>basic|token)(?P<gap2>\s+)(?P<cred2>[A-Za-z0-9\-._~+/]{8,}=*))"
)
# Tokens whose format names them, wherever they stand (a bare argument, a value in a
# path): a server started as `server-github ghp_…` must not put its token in the database.
_KNOWN_TOKENS: Final = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub
    r"|github_pat_[A-Za-z0-9_]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abeprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|sk-[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic (sk-ant-…), DeepSeek…
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|AIza[A-Za-z0-9_-]{35}"  # Google API keys
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key ids
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # JWTs
    r")(?![A-Za-z0-9_-])"
)
_HEADER_ARG: Final = re.compile(r"(?P<name>[A-Za-z0-9-]+)(?P<sep>\s*:\s*)(?P<value>.+)", re.S)
_ENV_ARG: Final = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)", re.S)


def placeholder(secret: str) -> str:
    """The placeholder that stands for ``secret`` in this process (see the module doc)."""
    if PLACEHOLDER.fullmatch(secret):
        return secret
    digest = hmac.new(_KEY, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
    return f"«redacted:{digest[:8]}»"


def _hide(secret: str) -> str:
    return placeholder(secret) if secret else secret


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_.\s]+", name.strip("-").lower()) if w]


def _secret_name(name: str) -> bool:
    words = _words(name)
    # ``--no-auth`` and friends switch something off: they take no value.
    if not words or words[0] == "no" or "_".join(words) in _NOT_SECRET:
        return False
    return words[-1] in SECRET_WORDS or any(w in _ANYWHERE for w in words)


def is_secret_flag(flag: str) -> bool:
    """Whether a command-line flag (``--api-key``, ``--token``) takes a secret value."""
    return flag.startswith("--") and _secret_name(flag[2:])


def is_secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (``OPENAI_API_KEY``)."""
    upper = name.upper()
    return "PASSWORD" in upper or "PASSWD" in upper or _secret_name(name)


def is_secret_header(name: str, extra_names: Iterable[str] = ()) -> bool:
    """Whether an HTTP header carries a credential (or is one of ``extra_names``)."""
    if extra_names and name.strip().lower() in {n.strip().lower() for n in extra_names}:
        return True
    return _secret_header_name(name)


@functools.lru_cache(maxsize=1024)  # asked for every header of every request the gateway records
def _secret_header_name(name: str) -> bool:
    lower = name.strip().lower()
    return lower in _SECRET_HEADERS or lower.endswith(("-token", "-key", "-secret", "-password", "-auth"))


def redact_url(url: str) -> str:
    """``url`` with user-info and secret query parameters replaced by placeholders.

    Every other character stays as it was. Works on any text that holds URLs.
    """

    def userinfo(m: re.Match[str]) -> str:
        if m.group("pw") is not None:
            return f"{m.group('scheme')}{m.group('user')}:{_hide(m.group('pw'))}@"
        return f"{m.group('scheme')}{_hide(m.group('user'))}@"

    def param(m: re.Match[str]) -> str:
        name = m.group("name")
        if not (_secret_name(name) or name.lower() in _SESSION_PARAMS):
            return m.group(0)
        return f"{m.group('lead')}{m.group('name')}={_hide(m.group('value'))}"

    out = _USERINFO.sub(userinfo, url)
    if "?" in out or "#" in out:
        out = _QUERY_PARAM.sub(param, out)
    return out


def redact_text(text: str) -> str:
    """Secrets recognisable inside free text: URLs (see :func:`redact_url`), the
    credentials after ``Bearer``/``Basic``/``Token``, a ``Header: value`` line naming
    a secret header, a ``NAME=value`` pair naming a secret variable, tokens in a
    well-known format (GitHub, GitLab, Slack, OpenAI/Anthropic, Stripe, Google, AWS, JWT)."""
    m = _HEADER_ARG.fullmatch(text)
    if m and is_secret_header(m.group("name")):
        return m.group("name") + m.group("sep") + _header_value(m.group("name"), m.group("value"))
    m = _ENV_ARG.fullmatch(text)
    if m and is_secret_env_name(m.group("name")):
        return f"{m.group('name')}={_hide(m.group('value'))}"
    text = _SCHEME_CREDENTIALS.sub(_scheme_credentials, redact_url(text))
    return _KNOWN_TOKENS.sub(lambda m: _hide(m.group()), text)


def _scheme_credentials(m: re.Match[str]) -> str:
    if m.group("bearer") is not None:
        return m.group("bearer") + m.group("gap") + _hide(m.group("cred"))
    return m.group("scheme") + m.group("gap2") + _hide(m.group("cred2"))


def redact_command(argv: list[str], description: str) -> tuple[list[str], str]:
    """A server's command line as it may be stored, and its description: ``description`` when
    nothing in ``argv`` is secret, else the redacted command line, shell-quoted."""
    import shlex

    safe = redact_argv(argv)
    return safe, description if safe == argv else shlex.join(safe)


def redact_argv(argv: list[str]) -> list[str]:
    """A command line with the values of secret-looking flags and embedded credentials
    replaced by placeholders; every other argument is kept as it was."""
    out: list[str] = []
    take_next = False
    for arg in argv:
        if take_next:
            take_next = False
            if not arg.startswith("--"):  # a flag after a flag: the first had no value
                out.append(_hide(arg))
                continue
        if arg.startswith("--") and "=" in arg:
            flag, value = arg.split("=", 1)
            out.append(f"{flag}={_hide(value) if is_secret_flag(flag) else redact_text(value)}")
            continue
        elif is_secret_flag(arg):
            take_next = True
            out.append(arg)
            continue
        out.append(redact_text(arg))
    return out


def _header_value(name: str, value: str) -> str:
    if name.strip().lower() in _AUTH_HEADERS:
        scheme, sep, credentials = value.partition(" ")
        if sep and credentials.strip() and scheme.isalpha():
            return f"{scheme} {_hide(credentials.strip())}"
    return _hide(value)


def redact_headers(headers: Mapping[str, str], extra_names: Iterable[str] = ()) -> dict[str, str]:
    """HTTP headers with credentials replaced by placeholders, names and order kept.

    ``Authorization: Bearer abc`` keeps its scheme (``Bearer «redacted:…»``);
    ``extra_names`` are further header names the user wants hidden.
    """
    extra = list(extra_names)
    return {
        name: _header_value(name, value) if is_secret_header(name, extra) else value
        for name, value in headers.items()
    }


JsonPath = tuple[str, ...]


def parse_json_path(text: str) -> JsonPath:
    """A JSON Pointer (``/params/arguments/password``; ``*`` matches any key or index) as segments.

    Raises ValueError saying what is wrong when ``text`` is not one.
    """
    if not text.startswith("/"):
        raise ValueError(
            f"{text!r} is not a JSON path: it must start with / (for example /params/arguments/password)"
        )
    segments = tuple(part.replace("~1", "/").replace("~0", "~") for part in text[1:].split("/"))
    if re.search(r"~[^01]|~$", text):
        raise ValueError(f"{text!r} is not a JSON path: ~ is only allowed as ~0 (~) or ~1 (/)")
    return segments


def _redact_at(value: Any, path: JsonPath, found: list[str] | None = None) -> tuple[Any, bool]:
    """``value`` with whatever ``path`` names replaced by placeholders; whether anything was.
    The strings hidden are appended to ``found`` when it is given."""
    if not path:
        if isinstance(value, str):
            if PLACEHOLDER.fullmatch(value):
                return value, False
            if found is not None:
                found.append(value)
            return placeholder(value), True
        # A number, object or array becomes the placeholder of its JSON text.
        return placeholder(json.dumps(value, sort_keys=True, separators=(",", ":"))), True
    head, rest = path[0], path[1:]
    changed = False
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [head] if head in value else []
        for key in keys:
            value[key], hit = _redact_at(value[key], rest, found)
            changed |= hit
    elif isinstance(value, list):
        indexes = range(len(value)) if head == "*" else [int(head)] if head.isdigit() else []
        for i in indexes:
            if i < len(value):
                value[i], hit = _redact_at(value[i], rest, found)
                changed |= hit
    return value, changed


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each of ``secrets`` (as written, or escaped inside JSON text) replaced by
    its placeholder: for values derived from redacted frames, such as a session's client info."""
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, placeholder(secret))
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if escaped != secret:
            text = text.replace(escaped, placeholder(secret))
    return text


class Unreadable(ValueError):
    """A message redaction cannot read: what it holds must not be recorded (fail closed)."""


def redact_json_paths(data: bytes, paths: Iterable[JsonPath], found: list[str] | None = None) -> bytes | None:
    """A JSON-RPC message (or each message of a batch) with the values at ``paths`` replaced
    by placeholders; None when nothing matched: keep the bytes as they are. A redacted
    message is re-encoded compactly (keys in their order, numbers with their values, bytes
    that are not UTF-8 as they were). The strings hidden are appended to ``found`` when it
    is given. Raises :class:`Unreadable` for what is not JSON or is nested too deep to read.
    """
    paths = list(paths)
    if not paths:
        return None
    # Bytes that are not UTF-8 stand for themselves (as peers read such a message, leniently):
    # a Latin-1 byte elsewhere must not keep a password from being found.
    text = data.decode("utf-8", "surrogateescape")
    try:
        # The standard library, not orjson: integers beyond 64 bits (ids) must stay exact.
        message = json.loads(text)
    except RecursionError:
        raise Unreadable("nested deeper than redaction can follow") from None
    except ValueError as exc:
        raise Unreadable(f"not JSON ({getattr(exc, 'msg', exc)})") from None
    changed = False
    for item in message if isinstance(message, list) else [message]:
        for path in paths:
            _, hit = _redact_at(item, path, found)
            changed |= hit
    if not changed:
        return None
    out = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        return out.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate written as an escape in the message
        return out.encode("utf-8", "surrogatepass")


def digest(data: bytes) -> str:
    """A keyed digest of bytes (see :func:`placeholder`): equal within a process, unguessable across."""
    return "hmac-sha256:" + hmac.new(_KEY, data, hashlib.sha256).hexdigest()[:16]


def withheld_message(data: bytes, why: str, rpc_id: str | None, method: str | None) -> bytes:
    """What is recorded in place of a message redaction could not read: valid JSON that keeps
    its id (``rpc_id``, its JSON text) and method, and says why, its size and :func:`digest`."""
    note = json.dumps({"reason": why, "bytes": len(data), "digest": digest(data)}, ensure_ascii=False)
    out = '{"jsonrpc":"2.0"'
    if rpc_id is not None:
        out += ',"id":' + rpc_id
    if method is not None:
        out += ',"method":' + json.dumps(method, ensure_ascii=False)
    return (out + ',"mcptape_withheld":' + note + "}").encode("utf-8", "surrogatepass")
