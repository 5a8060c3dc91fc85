"""Compare two recordings of a server: its surface (tools, prompts, resources, schemas) and its answers.

Pure: a recording goes in as ``(direction, message)`` pairs (parsed JSON-RPC, in
order); :func:`snapshot` pulls out what the server showed of itself, and
:func:`compare` lists the differences, each classified:

- ``breaking``: a client written against A may fail against B: a tool, prompt,
  resource or capability removed; a new required argument; an argument removed or
  its type changed; an output field removed or made optional; a request that
  succeeded in A and fails in B.
- ``compatible``: additions (a new tool, an optional argument) and changes of
  descriptions, titles and annotations.
- ``differs``: the same request (method and parameters, ``_meta`` aside) got a
  different answer; listed with the JSON pointers that differ
  (:mod:`mcptape.replay.answer_diff`).

A surface a recording never listed (no ``tools/list`` in it) is not compared.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mcptape.replay.answer_diff import compare_answers, request_key
from mcptape.wire.protocol import HELLO_METHODS

if TYPE_CHECKING:
    from mcptape.replay.normalise import Normaliser

Severity = Literal["breaking", "compatible", "differs"]

LISTS = {
    "tools/list": ("tools", "tool", "name"),
    "prompts/list": ("prompts", "prompt", "name"),
    "resources/list": ("resources", "resource", "uri"),
    "resources/templates/list": ("resourceTemplates", "resource template", "uriTemplate"),
}
NOT_COMPARED = HELLO_METHODS | set(LISTS)
# Schema keywords that document and do not constrain.
ANNOTATION_KEYWORDS = {"description", "title", "default", "examples", "$comment", "deprecated", "$schema"}


@dataclass
class Snapshot:
    """What one recording shows of the server. A surface is None when it was never listed."""

    server: dict[str, Any] = field(default_factory=dict)  # serverInfo
    capabilities: dict[str, Any] | None = None
    surfaces: dict[str, dict[str, Any] | None] = field(default_factory=lambda: dict.fromkeys(LISTS))
    exchanges: list[tuple[str, str, Any]] = field(default_factory=list)  # (method, request key, answer)

    @property
    def empty(self) -> bool:
        """Whether the recording shows nothing of the server: no request was answered at all."""
        listed = any(surface is not None for surface in self.surfaces.values())
        return not (self.server or self.capabilities is not None or listed or self.exchanges)


@dataclass
class Change:
    """One difference between A and B."""

    severity: Severity
    category: str  # tool, prompt, resource, resource template, capability, response
    name: str
    action: str  # added, removed, changed, differs
    what: str
    pointers: list[dict[str, Any]] = field(default_factory=list)  # responses: {pointer, a, b}

    def as_dict(self) -> dict[str, Any]:
        """The change as JSON-ready data."""
        data = asdict(self)
        if not self.pointers:
            del data["pointers"]
        return data


@dataclass
class Report:
    """Every change, and how many exchanges were compared."""

    changes: list[Change]
    compared: int
    only_in_a: int
    only_in_b: int

    @property
    def breaking(self) -> list[Change]:
        """The breaking changes."""
        return [c for c in self.changes if c.severity == "breaking"]


# -- reading a recording --------------------------------------------------------------


def _flatten(pairs: Iterable[tuple[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for direction, message in pairs:
        items = message if isinstance(message, list) else [message]
        for item in items:
            if isinstance(item, dict):
                yield direction, item


def snapshot(pairs: Iterable[tuple[str, Any]]) -> Snapshot:
    """The server's surface and the answers to client requests, from a recording's messages."""
    snap = Snapshot()
    pending: dict[str, tuple[str, Any]] = {}
    for direction, msg in _flatten(pairs):
        rid = json.dumps(msg.get("id"))
        if direction == "c2s" and isinstance(msg.get("method"), str) and "id" in msg:
            pending[rid] = (msg["method"], msg.get("params"))  # a later copy (a proxy edit) replaces it
            continue
        if direction != "s2c" or "method" in msg or rid not in pending:
            continue
        method, params = pending.pop(rid)
        result = msg.get("result")
        if method in HELLO_METHODS and isinstance(result, dict):
            if isinstance(result.get("capabilities"), dict):
                snap.capabilities = result["capabilities"]
            got = result.get("_meta")
            meta: dict[str, Any] = got if isinstance(got, dict) else {}
            info = result.get("serverInfo") or meta.get("io.modelcontextprotocol/serverInfo")
            if isinstance(info, dict):
                snap.server = info
        if method in LISTS and isinstance(result, dict):
            key, _, ident = LISTS[method]
            items = result.get(key)
            if isinstance(items, list):
                # A first page starts the listing again (after a list_changed); later pages add to it.
                surface = snap.surfaces[method]
                if surface is None or not (isinstance(params, dict) and params.get("cursor")):
                    surface = snap.surfaces[method] = {}
                for item in items:
                    if isinstance(item, dict) and isinstance(item.get(ident), str):
                        surface[item[ident]] = item
        if method not in NOT_COMPARED:
            answer = {"error": msg["error"]} if "error" in msg else {"result": result}
            snap.exchanges.append((method, request_key(method, params), answer))
    return snap


# -- comparing -----------------------------------------------------------------------------


def compare(a: Snapshot, b: Snapshot, normaliser: Normaliser | None = None) -> Report:
    """Every difference between recordings A and B, classified (answers after ``normaliser``)."""
    changes: list[Change] = []
    changes += _capabilities(a.capabilities, b.capabilities)
    for method, (_, category, _) in LISTS.items():
        sa, sb = a.surfaces[method], b.surfaces[method]
        if sa is not None and sb is not None:
            changes += _surface(category, sa, sb)
    compared, only_a, only_b, answers = compare_answers(a.exchanges, b.exchanges, normaliser)
    responses = [Change(d.severity, "response", d.name, "differs", d.what, d.pointers) for d in answers]
    return Report(changes + responses, compared, only_a, only_b)


def _capabilities(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[Change]:
    if a is None or b is None:
        return []
    out = [Change("breaking", "capability", n, "removed", f"capability {n} removed") for n in a if n not in b]
    out += [Change("compatible", "capability", n, "added", f"capability {n} added") for n in b if n not in a]
    return out


def _surface(category: str, a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    out: list[Change] = []
    for name in a:
        if name not in b:
            out.append(Change("breaking", category, name, "removed", f"{category} {name} removed"))
    for name in b:
        if name not in a:
            out.append(Change("compatible", category, name, "added", f"{category} {name} added"))
    for name in a:
        if name in b and a[name] != b[name]:
            for severity, what in item_changes(category, a[name], b[name]):
                out.append(Change(severity, category, name, "changed", what))
    return out


def item_changes(category: str, a: dict[str, Any], b: dict[str, Any]) -> list[tuple[Severity, str]]:
    """How one tool, prompt or resource changed: (severity, sentence) each."""
    out: list[tuple[Severity, str]] = []
    if category == "tool":
        out += schema_changes(a.get("inputSchema"), b.get("inputSchema"), "input")
        out += _output_changes(a.get("outputSchema"), b.get("outputSchema"))
        checked = {"inputSchema", "outputSchema"}
    elif category == "prompt":
        out += _prompt_arguments(a.get("arguments"), b.get("arguments"))
        checked = {"arguments"}
    else:
        checked = {"mimeType"}
        if a.get("mimeType") != b.get("mimeType"):
            out.append(("breaking", f"mimeType changed from {a.get('mimeType')} to {b.get('mimeType')}"))
    others = sorted(k for k in set(a) | set(b) if k not in checked and a.get(k) != b.get(k))
    if others:
        out.append(("compatible", f"{', '.join(others)} changed"))
    return out


def _output_changes(a: Any, b: Any) -> list[tuple[Severity, str]]:
    if a is None and b is None:
        return []
    if a is None:
        return [("compatible", "output schema added")]
    if b is None:
        return [("breaking", "output schema removed")]
    return schema_changes(a, b, "output")


def _kind(schema: dict[str, Any]) -> Any:
    return schema.get("type", "any")


def schema_changes(
    a: Any, b: Any, side: Literal["input", "output"], path: str = ""
) -> list[tuple[Severity, str]]:
    """Changes between two object schemas. Input: narrowing breaks; output: widening breaks."""
    a = a if isinstance(a, dict) else {}
    b = b if isinstance(b, dict) else {}
    noun = "argument" if side == "input" else "output field"
    pa = a.get("properties") if isinstance(a.get("properties"), dict) else {}
    pb = b.get("properties") if isinstance(b.get("properties"), dict) else {}
    ra = set(a.get("required") or [])
    rb = set(b.get("required") or [])
    out: list[tuple[Severity, str]] = []
    for name in pa:
        if name not in pb:
            out.append(("breaking", f"{noun} '{path}{name}' removed"))
    for name in pb:
        if name in pa:
            continue
        if side == "input" and name in rb:
            out.append(("breaking", f"new required {noun} '{path}{name}'"))
        else:
            out.append(("compatible", f"new {'optional ' if name not in rb else ''}{noun} '{path}{name}'"))
    for name in pa:
        if name not in pb:
            continue
        label = f"{noun} '{path}{name}'"
        if name in rb and name not in ra and side == "input":
            out.append(("breaking", f"{label} is now required"))
        elif name in ra and name not in rb:
            out.append(("breaking" if side == "output" else "compatible", f"{label} is now optional"))
        elif name in rb and name not in ra:
            out.append(("compatible", f"{label} is now always present"))
        out += _property_changes(pa[name], pb[name], side, label, f"{path}{name}.")
    return out


def _property_changes(
    a: Any, b: Any, side: Literal["input", "output"], label: str, path: str
) -> list[tuple[Severity, str]]:
    if not isinstance(a, dict) or not isinstance(b, dict) or a == b:
        return []
    if _kind(a) != _kind(b):
        return [("breaking", f"{label} type changed from {_kind(a)} to {_kind(b)}")]
    out: list[tuple[Severity, str]] = []
    ea, eb = a.get("enum"), b.get("enum")
    if isinstance(ea, list) and isinstance(eb, list):
        gone = [v for v in ea if v not in eb]
        new = [v for v in eb if v not in ea]
        if gone:
            out.append(
                ("breaking" if side == "input" else "compatible", f"{label} no longer allows {_values(gone)}")
            )
        if new:
            out.append(
                ("compatible" if side == "input" else "breaking", f"{label} now allows {_values(new)}")
            )
    if "properties" in a or "properties" in b:
        out += schema_changes(a, b, side, path)
    skip = ANNOTATION_KEYWORDS | {"type", "enum", "properties", "required"}
    constraints = sorted(k for k in set(a) | set(b) if k not in skip and a.get(k) != b.get(k))
    if constraints:
        out.append(("breaking", f"{label} constraints changed ({', '.join(constraints)})"))
    notes = sorted(k for k in ANNOTATION_KEYWORDS if a.get(k) != b.get(k))
    if notes:
        out.append(("compatible", f"{label} {', '.join(notes)} changed"))
    return out


def _values(values: list[Any]) -> str:
    return ", ".join(json.dumps(v) for v in values)


def _prompt_arguments(a: Any, b: Any) -> list[tuple[Severity, str]]:
    def args(value: Any) -> dict[str, dict[str, Any]]:
        items = value if isinstance(value, list) else []
        return {x["name"]: x for x in items if isinstance(x, dict) and isinstance(x.get("name"), str)}

    # A prompt's arguments are an input schema spelled differently.
    def as_schema(items: dict[str, dict[str, Any]]) -> dict[str, Any]:
        props = {n: {k: v for k, v in x.items() if k not in ("name", "required")} for n, x in items.items()}
        return {"properties": props, "required": [n for n, x in items.items() if x.get("required")]}

    return schema_changes(as_schema(args(a)), as_schema(args(b)), "input")
