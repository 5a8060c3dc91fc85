"""Rewriting mcpServers entries so they run through `mcptape record`, and back.

Wrapping rewrites an entry ``{"command": X, "args": [A, B]}`` into
``{"command": <mcptape>, "args": ["record", "--name", NAME, "--", X, A, B]}`` and keeps every
other key. The original command stays inside the wrapped args, after ``--``, so unwrapping
needs nothing but the file itself. With ``remote``, an entry ``{"url": U, "type": T,
"headers": {K: V}}`` becomes ``{"command": <mcptape>, "args": ["record", "--name", NAME,
"--url", U, "--transport", T, "--header", "K: V"]}``.

Unwrapping recognises only what wrapping writes (:func:`parse_wrapped`): an entry that
runs mcptape some other way (``ssh host mcptape record …``, a container, a hand-written
``mcptape record -- …``) is left alone. The edits themselves are splices into the file's
text (:mod:`mcptape.config.edit`); the document-level functions here say what the result
must parse to, and the text is checked against them before anything is written. No
click, standard library only, so the CLI module can import it at start-up.
"""

from __future__ import annotations

import json
import shlex
from typing import Any, NamedTuple

from mcptape.config import edit as configedit
from mcptape.config.edit import REMOTE_KEYS, EditError
from mcptape.config.registry import url_problem
from mcptape.config.wrapform import (
    Wrapped,
    is_recorded,
    mcptape_launcher,
    parse_wrapped,
    tokens_of,
    wrapped_split,
)
from mcptape.redact import redact_argv, redact_url
from mcptape.wire.jsontext import loads_jsonc

__all__ = [
    "WrapOutcome",
    "Wrapped",
    "is_recorded",
    "mcptape_launcher",
    "parse_wrapped",
    "rewrite_text",
    "unwrap_servers",
    "wrap_servers",
    "wrapped_split",
]

_TRANSPORTS = {"http": "http", "streamable-http": "http", "sse": "sse"}


class WrapOutcome(NamedTuple):
    """What a command did (or would do) to one mcpServers entry, for the summary."""

    name: str
    action: str  # wrapped, unwrapped, already wrapped, not wrapped, left alone, skipped
    detail: str


# A desktop client must keep its server when the recording database cannot be opened:
# the recorder forwards anyway and says so on stderr (the client's log).
FORWARD = ("--on-store-error", "forward")


def _remote(entry: dict[str, Any]) -> tuple[str, str | None, dict[str, str]] | None:
    """A remote entry's url, transport (None when the entry names none) and headers."""
    if "command" in entry:
        return None
    url = entry.get("url", entry.get("serverUrl"))
    kind = entry.get("type", entry.get("transport"))
    headers = entry.get("headers") or {}
    if not isinstance(url, str) or (kind is not None and kind not in _TRANSPORTS):
        return None
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        return None
    return url, None if kind is None else _TRANSPORTS[kind], headers


def remote_record_args(
    name: str, db: str | None, url: str, transport: str | None, headers: dict[str, str]
) -> list[str]:
    """The `mcptape record` arguments that record a remote server for a stdio client."""
    args = ["record", "--name", name, *(["--db", db] if db is not None else []), *FORWARD, "--url", url]
    if transport is not None:
        args += ["--transport", transport]
    for key, value in headers.items():
        args += ["--header", f"{key}: {value}"]
    return args


def _with_command(
    entry: dict[str, Any], command: str, args: list[str], drop: tuple[str, ...]
) -> dict[str, Any]:
    """The entry with command and args in place of ``drop`` (or of its command), other keys kept."""
    result: dict[str, Any] = {}
    for key, value in entry.items():
        if key in drop or key == "command":
            if "command" not in result:
                result["command"], result["args"] = command, args
        elif key != "args":
            result[key] = value
    return result


def wrap_servers(
    document: dict[str, Any],
    launcher: list[str],
    db: str | None,
    only: frozenset[str] | None = None,
    remote: bool = False,
) -> tuple[dict[str, Any], list[WrapOutcome]]:
    """The document with each selected stdio entry (and with ``remote`` each url entry)
    running through `mcptape record`, and what happened to each entry."""
    servers: dict[str, Any] = {}
    outcomes: list[WrapOutcome] = []
    key = _key(document)
    for name, entry in document[key].items():
        servers[name] = entry
        if only is not None and name not in only:
            continue
        if not isinstance(entry, dict):
            outcomes.append(WrapOutcome(name, "skipped", f"not an object: {entry!r}"))
            continue
        if is_recorded(entry):
            outcomes.append(WrapOutcome(name, "already wrapped", _shown(tokens_of(entry) or [])))
            continue
        target = _remote(entry)
        if target is not None:
            if not remote:
                outcomes.append(
                    WrapOutcome(
                        name, "left alone", f"{redact_url(target[0])} (remote; --remote records it too)"
                    )
                )
                continue
            problem = url_problem(target[0])
            if problem is not None:
                # `record --url` would refuse it: the client would lose the entry at its next start.
                outcomes.append(WrapOutcome(name, "skipped", redact_url(problem)))
                continue
            args = remote_record_args(name, db, *target)
            servers[name] = _with_command(entry, launcher[0], [*launcher[1:], *args], REMOTE_KEYS)
            outcomes.append(WrapOutcome(name, "wrapped", redact_url(target[0])))
            continue
        if "url" in entry or "serverUrl" in entry:
            outcomes.append(WrapOutcome(name, "skipped", "a url entry of an unknown type"))
            continue
        tokens = tokens_of(entry)
        if not tokens or not tokens[0]:
            outcomes.append(
                WrapOutcome(name, "skipped", "neither a command (with a list of string args) nor a url")
            )
            continue
        record = [
            "record",
            "--name",
            name,
            *(["--db", db] if db is not None else []),
            *FORWARD,
            "--",
            *tokens,
        ]
        servers[name] = _with_command(entry, launcher[0], [*launcher[1:], *record], ())
        outcomes.append(WrapOutcome(name, "wrapped", _shown(tokens)))
    return {**document, key: servers}, outcomes


def _shown(tokens: list[str]) -> str:
    """A command line for the summary: shell-quoted, its secrets redacted (it goes to a
    terminal or a CI log; the file keeps them)."""
    return shlex.join(redact_argv(tokens))


def _unwrap_entry(entry: dict[str, Any], wrapped: Wrapped, backup_entry: Any) -> dict[str, Any]:
    args = entry["args"]
    if wrapped.cut is not None:
        tokens = [entry["command"], *args]
        original = tokens[wrapped.cut :]
        keep_args = len(original) > 1 or _keeps_empty_args(entry, backup_entry)
        result = {}
        for key, value in entry.items():
            if key == "command":
                result[key] = original[0]
            elif key != "args" or keep_args:
                result[key] = original[1:] if key == "args" else value
        return result
    restored = _backup_remote(entry, wrapped, backup_entry)
    if restored is None:
        restored = {"url": wrapped.url}
        if wrapped.transport is not None:
            restored["type"] = wrapped.transport
        if wrapped.headers:
            restored["headers"] = dict(wrapped.headers)
    result = {}
    for key, value in entry.items():
        if key == "command":
            result.update(restored)
        elif key != "args":
            result[key] = value
    return result


def _keeps_empty_args(entry: dict[str, Any], backup_entry: Any) -> bool:
    """Whether an entry whose original args are empty keeps ``"args": []``.

    Wrap adds args right after the command when the entry had none; an args member
    elsewhere was the user's. Right after the command, the backup says which it was.
    """
    keys = list(entry)
    if keys.index("args") != keys.index("command") + 1:
        return True
    return isinstance(backup_entry, dict) and "args" in backup_entry


def _backup_remote(entry: dict[str, Any], wrapped: Wrapped, backup_entry: Any) -> dict[str, Any] | None:
    """The backup's url members for this entry, when they describe the same server."""
    if not isinstance(backup_entry, dict):
        return None
    target = _remote(backup_entry)
    if target is None or (target[0], target[1], list(target[2].items())) != (
        wrapped.url,
        wrapped.transport,
        wrapped.headers,
    ):
        return None
    return {k: v for k, v in backup_entry.items() if k in REMOTE_KEYS}


def unwrap_servers(
    document: dict[str, Any], only: frozenset[str] | None = None, backup: dict[str, Any] | None = None
) -> tuple[dict[str, Any], list[WrapOutcome]]:
    """The document with each selected entry that `mcptape wrap` wrote back as it was.

    ``backup`` is the document wrap backed up, if it is still there: it settles what
    the wrapped entry cannot say (whether an empty args list was there, how a remote
    entry spelled its type).
    """
    servers: dict[str, Any] = {}
    outcomes: list[WrapOutcome] = []
    key = _key(document)
    backed_up = backup.get(key) if isinstance(backup, dict) else None
    for name, entry in document[key].items():
        servers[name] = entry
        if only is not None and name not in only:
            continue
        wrapped = parse_wrapped(entry)
        if wrapped is None:
            detail = "runs mcptape, but not as `mcptape wrap` writes it" if is_recorded(entry) else ""
            outcomes.append(WrapOutcome(name, "not wrapped", detail))
            continue
        backup_entry = backed_up.get(name) if isinstance(backed_up, dict) else None
        servers[name] = _unwrap_entry(entry, wrapped, backup_entry)
        tokens = tokens_of(entry) or []
        restored = redact_url(wrapped.url or "") if wrapped.cut is None else _shown(tokens[wrapped.cut :])
        outcomes.append(WrapOutcome(name, "unwrapped", restored))
    return {**document, key: servers}, outcomes


def _key(document: dict[str, Any]) -> str:
    """The member holding the entries: ``mcpServers``, or ``servers`` in VS Code's mcp.json."""
    from mcptape.config.registry import servers_key

    return servers_key(document) or "mcpServers"


def rewrite_text(text: str, old: dict[str, Any], new: dict[str, Any], backup_text: str | None = None) -> str:
    """``text`` (which parses to ``old``) edited in place so that it parses to ``new``,
    where ``new`` differs from ``old`` only in entries wrapped or unwrapped above.
    ``backup_text`` is the backed-up original, whose exact remote members unwrap restores.

    Raises EditError when the text cannot be edited in place; nothing is re-rendered.
    """
    spans = configedit.server_entries(text)
    backup_entries: dict[str, str] = {}
    backup: dict[str, Any] = {}
    if backup_text is not None:
        try:
            backup = loads_jsonc(backup_text)[_key(old)]
            backup_spans = configedit.server_entries(backup_text)
            backup_entries = {name: backup_text[a:b] for name, (a, b) in backup_spans.items()}
        except (ValueError, KeyError, TypeError, RecursionError, EditError):
            backup = {}
    edits: dict[str, str] = {}
    key = _key(old)
    for name, entry in new[key].items():
        before = old[key][name]
        if entry is before:
            continue
        entry_text = text[spans[name][0] : spans[name][1]]
        edits[name] = _edit_entry(entry_text, before, entry, backup.get(name), backup_entries.get(name))
    result = configedit.splice(text, spans, edits)
    if loads_jsonc(result) != new:
        raise EditError("the edited text does not read back as intended")
    return result


def _edit_entry(
    entry_text: str, before: dict[str, Any], after: dict[str, Any], backup_entry: Any, backup_text: str | None
) -> str:
    wrapped = parse_wrapped(before)
    if wrapped is None:  # wrapping
        if "command" in before:
            args = after["args"]
            prefix = args[: len(args) - len(tokens_of(before) or [])]
            return configedit.wrap_command(entry_text, after["command"], prefix)
        new_members = [
            ("command", configedit.json_string(after["command"])),
            ("args", json.dumps(after["args"], ensure_ascii=False)),
        ]
        return configedit.replace_members(entry_text, REMOTE_KEYS, new_members)
    if wrapped.cut is not None:
        return configedit.unwrap_command(entry_text, wrapped.cut - 1, "args" not in after)
    original = None
    if backup_text is not None and _backup_remote(before, wrapped, backup_entry) is not None:
        original = configedit.member_run(backup_text, REMOTE_KEYS)
    members = [(k, json.dumps(v, ensure_ascii=False)) for k, v in after.items() if k in REMOTE_KEYS]
    return configedit.replace_members(entry_text, ("command", "args"), original or members)
