"""The dialog in which a person answers the server's request: sampling, elicitation (form or URL), other.

The answer goes to :meth:`mcptape.client.interactive.Interactive.answer` through ``send``,
which says why when it refuses one (the dialog stays open to fix it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import orjson
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static, TextArea

from mcptape.client.schemaform import FormError
from mcptape.terminal import safe
from mcptape.tui.form import ArgumentsForm
from mcptape.wire.protocol import ELICITATION, SAMPLING

Send = Callable[[dict[str, Any]], "str | None"]


def _said(params: dict[str, Any]) -> Text:
    """What the server put before the person: its messages, as plain text."""
    text = Text()
    if isinstance(params.get("systemPrompt"), str):
        text.append(f"system: {safe(params['systemPrompt'])}\n", style="dim")
    for message in params.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            body = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
            text.append(f"{safe(str(message.get('role')))}: ", style="bold")
            text.append(safe(body) if isinstance(body, str) else safe(orjson.dumps(block).decode()))
            text.append("\n")
    return text


class QuestionScreen(ModalScreen[None]):
    """One server request waiting for the person."""

    DEFAULT_CSS = """
    QuestionScreen { align: center middle; }
    QuestionScreen > Vertical { width: 76; max-height: 22; height: auto; border: thick $warning; background: $surface; }
    QuestionScreen VerticalScroll { height: auto; max-height: 15; padding: 0 1; }
    QuestionScreen TextArea { height: 7; }
    QuestionScreen Horizontal { height: auto; padding: 0 1; }
    QuestionScreen Button { margin-right: 1; min-width: 10; }
    QuestionScreen #problem { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_later", "Answer later")]

    def __init__(self, question: dict[str, Any], send: Send) -> None:
        super().__init__()
        self.question = question
        self.send = send
        self.params = question["params"] if isinstance(question.get("params"), dict) else {}

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll():
                yield from self._content()
                yield Static("", id="problem")
            # The buttons stay in view below the form, however long it is.
            with Horizontal():
                for ident, label, variant in self._buttons():
                    yield Button(label, id=ident, variant=variant)  # type: ignore[arg-type]

    def _content(self) -> ComposeResult:
        q, params = self.question, self.params
        title = Text(f"The server asks: {q['method']}", style="bold")
        if q.get("tool"):
            title.append(f" (during {safe(q['tool'])})", style="dim")
        yield Label(title)
        if q["method"] == ELICITATION:
            yield Static(Text(safe(str(params.get("message") or ""))))
            if q.get("mode") == "url":
                yield Static(Text(f"Open: {safe(str(params.get('url')))}", style="underline"), id="url")
            else:
                yield ArgumentsForm(q.get("form") or [])
        elif q["method"] == SAMPLING:
            yield Static(_said(params))
            yield Label(
                Text(f"maxTokens {params.get('maxTokens')}. Your answer, as the model (JSON):", style="dim")
            )
            yield TextArea(orjson.dumps(q.get("suggested"), option=orjson.OPT_INDENT_2).decode(), id="answer")
        else:
            yield Static(Text(safe(orjson.dumps(params).decode())))
            yield TextArea("{}", id="answer")

    def _buttons(self) -> list[tuple[str, str, str]]:
        method = self.question["method"]
        if method == ELICITATION:
            return [
                ("accept", "Accept", "primary"),
                ("decline", "Decline", "default"),
                ("cancel", "Cancel", "default"),
            ]
        if method == SAMPLING:
            return [("send", "Send", "primary"), ("reject", "Reject", "error")]
        return [("send", "Send", "primary"), ("refuse", "Refuse", "error")]

    def on_button_pressed(self, event: Button.Pressed) -> None:
        try:
            body = self._answer(str(event.button.id))
        except (FormError, orjson.JSONDecodeError) as exc:
            self.query_one("#problem", Static).update(Text(safe(str(exc))))
            return
        problem = self.send(body)
        if problem is not None:
            self.query_one("#problem", Static).update(Text(safe(problem)))
            return
        self.dismiss()

    def _answer(self, button: str) -> dict[str, Any]:
        if button == "accept":
            if self.question.get("mode") == "url":
                return {"result": {"action": "accept"}}
            return {"result": {"action": "accept", "content": self.query_one(ArgumentsForm).values()}}
        if button in ("decline", "cancel"):
            return {"result": {"action": button}}
        if button == "reject":
            return {"error": {"code": -1, "message": "User rejected sampling request"}}
        if button == "refuse":
            return {"error": {"code": -32601, "message": f"Method not found: {self.question['method']}"}}
        return {"result": orjson.loads(self.query_one("#answer", TextArea).text)}

    def action_dismiss_later(self) -> None:
        """Close the dialog; the request still waits (the Answers pane reopens it)."""
        self.dismiss()
