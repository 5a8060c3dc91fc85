"""The answers two recordings got to the same requests, compared JSON pointer by pointer.

Pure. Two requests are "the same" when their method and parameters are, ``_meta``
and ``requestState`` aside (they change every run); the n-th such request in A is
paired with the n-th in B. Answers are compared after the normalisation ``replay`` applies
(timestamps, minted ids and UUIDs out by default; ``--keep`` and ``--ignore``), so two
recordings of the same server do not differ by the clock. An answer that succeeded in A and fails in B (a JSON-RPC
error, or a tool result with ``isError``) is ``breaking``; any other difference
``differs``, with the JSON pointers where the answers part.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from mcptape.replay.normalise import Normaliser

# Keys whose values change every run or belong to the transport, never compared.
VOLATILE = {"_meta", "requestState"}
MAX_POINTERS = 10
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()  # a value one side lacks


@dataclass
class AnswerDiff:
    """Two answers to the same request that differ."""

    severity: Literal["breaking", "differs"]  # breaking: it now fails
    name: str  # method, and the tool, prompt or resource it names
    what: str
    pointers: list[dict[str, Any]] = field(default_factory=list)  # {pointer, a?, b?}


def strip_volatile(value: Any) -> Any:
    """``value`` without ``_meta`` and ``requestState`` at any depth."""
    if isinstance(value, dict):
        return {k: strip_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip_volatile(v) for v in value]
    return value


def request_key(method: str, params: Any) -> str:
    """What makes two requests "the same": method and parameters, volatile keys aside."""
    return method + " " + json.dumps(strip_volatile(params), sort_keys=True, separators=(",", ":"))


def json_differences(a: Any, b: Any, pointer: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(JSON pointer, value in A, value in B) for each place the two values differ; :data:`ABSENT` where one has none."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if key not in b:
                yield sub, a[key], ABSENT
            elif key not in a:
                yield sub, ABSENT, b[key]
            else:
                yield from json_differences(a[key], b[key], sub)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            if i >= len(a):
                yield f"{pointer}/{i}", ABSENT, b[i]
            elif i >= len(b):
                yield f"{pointer}/{i}", a[i], ABSENT
            else:
                yield from json_differences(a[i], b[i], f"{pointer}/{i}")
    elif a != b or type(a) is not type(b):
        yield pointer, a, b


def failed(answer: Any) -> bool:
    """Whether an answer (``{"result": ...}`` or ``{"error": ...}``) reports a failure."""
    if "error" in answer:
        return True
    result = answer.get("result")
    return isinstance(result, dict) and result.get("isError") is True


def compare_answers(
    a: list[tuple[str, str, Any]], b: list[tuple[str, str, Any]], normaliser: Normaliser | None = None
) -> tuple[int, int, int, list[AnswerDiff]]:
    """Pair the n-th occurrence of each request in A with the n-th in B and compare answers.

    Each list holds ``(method, request key, answer)``; returns how many pairs were
    compared, how many requests only A and only B made, and the pairs that differ.
    ``normaliser`` takes out of both answers what changes on every run.
    """
    by_key: dict[str, list[Any]] = {}
    for _, key, answer in b:
        by_key.setdefault(key, []).append(answer)
    compared = only_a = 0
    out: list[AnswerDiff] = []
    for method, key, answer in a:
        queue = by_key.get(key)
        if not queue:
            only_a += 1
            continue
        other = queue.pop(0)
        compared += 1
        left, right = strip_volatile(answer), strip_volatile(other)
        if left == right:
            continue
        if normaliser is not None:
            tool = _tool(method, key)
            left, right = normaliser.normalise(left, method, tool), normaliser.normalise(right, method, tool)
            if left == right:
                continue
        name = _request_name(key)
        diffs = [_pointer(p, x, y) for p, x, y in json_differences(left, right)]
        severity: Literal["breaking", "differs"] = (
            "breaking" if failed(right) and not failed(left) else "differs"
        )
        what = "now fails" if severity == "breaking" else f"answer differs at {len(diffs)} place(s)"
        out.append(AnswerDiff(severity, name, what, diffs[:MAX_POINTERS]))
    only_b = sum(len(q) for q in by_key.values())
    return compared, only_a, only_b, out


def _pointer(pointer: str, a: Any, b: Any) -> dict[str, Any]:
    """A response difference as data: the side that lacks the value has no key."""
    out: dict[str, Any] = {"pointer": pointer}
    if a is not ABSENT:
        out["a"] = a
    if b is not ABSENT:
        out["b"] = b
    return out


def _request_name(key: str) -> str:
    """``tools/call read_text_file {"path": "/srv/big.txt"}``: the method, what it names, and a
    tool call's or prompt's arguments (which file was read)."""
    from mcptape.replay.showdiff import arguments_text
    from mcptape.wire.protocol import PROMPTS_GET, TOOLS_CALL

    method, _, params_text = key.partition(" ")
    params = json.loads(params_text)
    name = params.get("name") or params.get("uri") if isinstance(params, dict) else None
    text = f"{method} {name}" if isinstance(name, str) else method
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if arguments and method in (TOOLS_CALL, PROMPTS_GET):
        text += " " + arguments_text(arguments)
    return text


def _tool(method: str, key: str) -> str | None:
    """The tool a ``tools/call`` request key names (for ``--ignore METHOD:TOOL=...`` rules)."""
    if method != "tools/call":
        return None
    params = json.loads(key.partition(" ")[2])
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None
