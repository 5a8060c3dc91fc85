"""What the terminal client shows of an operation's outcome, a log message or a frame: rich Text, pure.

Everything the server sent goes through :func:`mcptape.terminal.safe` (control characters
escaped: a server cannot drive the terminal) and into :class:`rich.text.Text` (never parsed
as markup). Content is shown by type: text as it is, images and audio as what they are
and their size (a terminal cannot show them; the web client can), embedded resources with
their URI and text, resource links as links, ``structuredContent`` as JSON with the
``outputSchema`` check, ``isError`` in red.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Final

import orjson
from rich.text import Text

from mcptape.terminal import safe

TEXT_MAX: Final = 20_000
LEVEL_STYLE: Final = {
    "debug": "dim",
    "info": "",
    "notice": "cyan",
    "warning": "yellow",
    "error": "red",
    "critical": "bold red",
    "alert": "bold red",
    "emergency": "bold red",
}


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return repr(value)


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_MAX else text[:TEXT_MAX] + f"… ({len(text) - TEXT_MAX} more characters)"


def _size(data: Any) -> str:
    if not isinstance(data, str):
        return "?"
    try:
        return f"{len(base64.b64decode(data, validate=False)):,} bytes"
    except (binascii.Error, ValueError):
        return f"{len(data):,} base64 characters"


def content_block(block: Any) -> Text:
    """One content block of a tool result or a prompt message."""
    if not isinstance(block, dict):
        return Text(safe(_json(block)))
    kind = block.get("type")
    if kind == "text":
        return Text(safe(_cut(str(block.get("text", "")))))
    if kind in ("image", "audio"):
        return Text(
            f"[{kind} {safe(str(block.get('mimeType')))}, {_size(block.get('data'))}]", style="magenta"
        )
    if kind == "resource":
        return resource_contents(block.get("resource") or {}, "embedded resource ")
    if kind == "resource_link":
        text = Text("link: ", style="dim")
        text.append(safe(str(block.get("uri"))), style="underline")
        if block.get("name"):
            text.append(f" ({safe(str(block['name']))})")
        return text
    return Text(safe(f"content of type {kind}: {_json(block)}"))


def resource_contents(contents: Any, prefix: str = "") -> Text:
    """One entry of ``resources/read``'s contents (or an embedded resource)."""
    if not isinstance(contents, dict):
        return Text(safe(_json(contents)))
    head = Text(f"{prefix}{safe(str(contents.get('uri', '')))}", style="bold")
    if contents.get("mimeType"):
        head.append(f" {safe(str(contents['mimeType']))}", style="dim")
    if isinstance(contents.get("text"), str):
        return Text.assemble(head, "\n", safe(_cut(contents["text"])))
    if isinstance(contents.get("blob"), str):
        return Text.assemble(head, Text(f" [blob, {_size(contents['blob'])}]", style="magenta"))
    return head


def outcome(result: dict[str, Any]) -> Text:
    """An operation's outcome (:meth:`mcptape.client.interactive.Interactive.run`) for the results pane."""
    status = result.get("status")
    styles = {"ok": "green", "tool-error": "bold red", "error": "bold red", "cancelled": "yellow"}
    shown = "tool error (isError)" if status == "tool-error" else str(status)
    text = Text()
    text.append(f"{shown} ", style=styles.get(str(status), ""))
    text.append(f"{safe(str(result.get('method')))} · {float(result.get('ms') or 0):.1f} ms\n", style="dim")
    if status == "cancelled":
        return text
    error = result.get("error")
    if isinstance(error, dict):
        code = f" {error.get('code')}" if error.get("code") is not None else ""
        text.append(safe(f"{error.get('category')}{code}: {error.get('message')}"), style="red")
        if error.get("data") is not None:
            text.append("\n" + safe(_json(error["data"])), style="dim")
        return text
    body = result.get("result")
    check = result.get("outputCheck")
    if isinstance(check, dict):
        text.append(
            safe(f"outputSchema: {check.get('message')}\n"), style="green" if check.get("ok") else "red"
        )
    if not isinstance(body, dict):
        return text.append(safe(_json(body)))
    parts: list[Text] = []
    parts += [content_block(b) for b in body.get("content") or [] if isinstance(body.get("content"), list)]
    parts += [
        resource_contents(c) for c in body.get("contents") or [] if isinstance(body.get("contents"), list)
    ]
    for message in body.get("messages") or [] if isinstance(body.get("messages"), list) else []:
        if isinstance(message, dict):
            parts.append(
                Text.assemble(
                    (f"{safe(str(message.get('role')))}: ", "bold"), content_block(message.get("content"))
                )
            )
    if "structuredContent" in body:
        parts.append(Text.assemble(("structuredContent ", "bold"), safe(_json(body["structuredContent"]))))
    if not parts:
        parts.append(Text(safe(_cut(_json(body)))))
    return text.append(Text("\n").join(parts))


def log_line(params: dict[str, Any]) -> Text:
    """A ``notifications/message`` as one line, coloured by level."""
    level = str(params.get("level"))
    data = params.get("data")
    said = data if isinstance(data, str) else orjson.dumps(data).decode()
    logger = f"{params['logger']}: " if isinstance(params.get("logger"), str) else ""
    return Text(safe(f"{level:<9} {logger}{said}"), style=LEVEL_STYLE.get(level, ""))


def traffic_line(data: dict[str, Any]) -> Text:
    """A frame as the client sent (→) or received (←) it."""
    arrow, style = ("→", "blue") if data.get("dir") == "c2s" else ("←", "green")
    text = Text(f"{arrow} {data.get('size')} B ", style=style)
    text.append(safe(str(data.get("text"))) + (" …" if data.get("cut") else ""))
    return text
