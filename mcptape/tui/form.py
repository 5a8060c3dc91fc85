"""A form of Textual widgets from a schema's fields (:mod:`mcptape.client.schemaform`), with a raw-JSON view.

Strings, numbers and integers are inputs, booleans checkboxes (a choice of true, false or
not given when the field is optional), enums choices, multi-choice enums selection lists,
nested objects nested forms, and arrays and anything else JSON text. ``ctrl+j`` (the
app's binding) swaps the form for the arguments as one JSON object, and back.
"""

from __future__ import annotations

from typing import Any

import orjson
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, Select, SelectionList, TextArea

from mcptape.client.schemaform import FormError, missing_required, parse_text
from mcptape.terminal import safe

UNSET = "(not given)"


def _label(field: dict[str, Any]) -> Text:
    title = field["name"] + (
        f" — {field['title']}" if field.get("title") and field["title"] != field["name"] else ""
    )
    text = Text(safe(title), style="bold")
    if field.get("required"):
        text.append(" *", style="red")
    text.append(f" {field['kind']}", style="dim")
    if field.get("description"):
        text.append("  " + safe(field["description"]), style="italic dim")
    return text


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode() if value is not None else ""


class FieldEditor(Vertical):
    """One field: its label and its widget; :meth:`value` is what it holds (None: not given)."""

    DEFAULT_CSS = """
    FieldEditor { height: auto; }
    FieldEditor > Input { width: 100%; height: 1; border: none; padding: 0 1; background: $boost; }
    FieldEditor > Input:focus { border: none; background: $primary 40%; }
    FieldEditor > Select { width: 100%; }
    FieldEditor > TextArea { height: 4; }
    FieldEditor > SelectionList { height: auto; max-height: 6; }
    FieldEditor > .nested { border-left: solid $accent; padding-left: 1; height: auto; }
    """

    def __init__(self, field: dict[str, Any], initial: Any, path: str) -> None:
        super().__init__()
        self.field = field
        self.initial = initial if initial is not None else field.get("default")
        self.path = path

    def compose(self) -> ComposeResult:
        field, start, ident = self.field, self.initial, self.path.replace(".", "--")
        kind = field["kind"]
        yield Label(_label(field))
        if kind in ("string", "number", "integer"):
            kinds = {"string": "text", "number": "number", "integer": "integer"}
            shown = "" if start is None else (start if isinstance(start, str) else _dumps(start))
            yield Input(value=shown, type=kinds[kind], id=f"f-{ident}")  # type: ignore[arg-type]
        elif kind == "boolean" and (field.get("required") or "default" in field):
            yield Checkbox(value=start is True, id=f"f-{ident}")
        elif kind == "boolean":
            options = [("true", "true"), ("false", "false")]
            choice: str | Any = "true" if start is True else "false" if start is False else Select.NULL
            yield Select(options, value=choice, prompt=UNSET, id=f"f-{ident}")
        elif kind == "enum":
            options = [(safe(o["label"]), str(i)) for i, o in enumerate(field["options"])]
            at = next((str(i) for i, o in enumerate(field["options"]) if o["value"] == start), Select.NULL)
            yield Select(options, value=at, prompt=UNSET, allow_blank=True, id=f"f-{ident}")
        elif kind == "multienum":
            chosen = start if isinstance(start, list) else []
            yield SelectionList[int](
                *[(safe(o["label"]), i, o["value"] in chosen) for i, o in enumerate(field["options"])],
                id=f"f-{ident}",
            )
        elif kind == "object":
            yield ArgumentsForm(
                field.get("fields", []), start if isinstance(start, dict) else {}, self.path, nested=True
            )
        else:
            yield TextArea(_dumps(start) if start is not None else "", id=f"f-{ident}", language=None)

    def value(self) -> Any:
        kind, name = self.field["kind"], self.path
        if kind in ("string", "number", "integer"):
            text = self.query_one(Input).value
            if text == "":
                return None
            return parse_text({**self.field, "name": name}, text)
        if kind == "boolean":
            if self.query(Checkbox):
                return self.query_one(Checkbox).value
            chosen = self.query_one(Select).value
            return None if chosen is Select.NULL else chosen == "true"
        if kind == "enum":
            chosen = self.query_one(Select).value
            return None if chosen is Select.NULL else self.field["options"][int(str(chosen))]["value"]
        if kind == "multienum":
            picked = [self.field["options"][i]["value"] for i in self.query_one(SelectionList).selected]
            return picked or ([] if self.field.get("required") else None)
        if kind == "object":
            inner = self.query_one(ArgumentsForm).values()
            return inner or ({} if self.field.get("required") else None)
        text = self.query_one(TextArea).text
        return parse_text({**self.field, "kind": "json", "name": name}, text) if text.strip() else None


class ArgumentsForm(Vertical):
    """The fields of a tool, prompt, template or elicitation; :meth:`values` checks and collects them."""

    DEFAULT_CSS = """
    ArgumentsForm { height: auto; }
    ArgumentsForm > TextArea.raw { height: 8; }
    """

    def __init__(
        self,
        fields: list[dict[str, Any]],
        values: dict[str, Any] | None = None,
        path: str = "",
        *,
        nested: bool = False,
    ) -> None:
        super().__init__(classes="nested" if nested else "")
        self.fields = fields
        self.start = dict(values or {})
        self.path = path
        self.raw = False

    def compose(self) -> ComposeResult:
        if not self.fields:
            yield Label(Text("No arguments.", style="dim"))
        for field in self.fields:
            name = f"{self.path}.{field['name']}" if self.path else field["name"]
            yield FieldEditor(field, self.start.get(field["name"]), name)

    def values(self) -> dict[str, Any]:
        """The values given (FormError naming the field when one is wrong or a required one is missing)."""
        if self.raw:
            try:
                value = orjson.loads(self.query_one("TextArea.raw", TextArea).text or "{}")
            except orjson.JSONDecodeError as exc:
                raise FormError(f"arguments: not JSON ({exc})") from None
            if not isinstance(value, dict):
                raise FormError("arguments: a JSON object")
            return value
        out = {}
        for editor in self.query_children(FieldEditor):
            value = editor.value()
            if value is not None:
                out[editor.field["name"]] = value
        missing = missing_required(self.fields, out)
        if missing:
            raise FormError(f"required: {', '.join(missing)}")
        return out

    async def toggle_raw(self) -> None:
        """Show the arguments as one JSON object, or the form again (with the JSON's values)."""
        current = self.values()
        await self.remove_children()
        self.raw = not self.raw
        if self.raw:
            await self.mount(
                TextArea(orjson.dumps(current, option=orjson.OPT_INDENT_2).decode(), classes="raw")
            )
        else:
            self.start = current
            widgets: list[Widget] = [
                FieldEditor(f, current.get(f["name"]), f"{self.path}.{f['name']}" if self.path else f["name"])
                for f in self.fields
            ]
            await self.mount_all(widgets or [Label(Text("No arguments.", style="dim"))])
