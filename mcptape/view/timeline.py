"""A session's timeline as the viewer draws it: frames in columns, latency per method, bytes per tool,
and the exchanges that belong together (pure).

The page gets every frame of a session at once, without its text, as parallel arrays
(100,000 frames are about 3 MB of JSON): seq, time since the start in ms, direction,
kind, method (an index into ``methods``), id, size, the seq of the request a reply
answers, origin. It draws spans and lanes from those. What needs the messages'
contents is computed here from the few frames that carry it:

- **latency** per method: count, median, p95, max and a histogram on fixed log-scale
  bins (:data:`EDGES_MS`), from each reply's time minus its request's;
- **tool bytes**: what each tool's results weigh (what they cost a model's context);
- **groups**: a 2026-07-28 request answered ``input_required`` and its retries (the
  echoed ``requestState``, else the next request of the same method and subject), and a
  task (a result holding ``task.taskId``) with its ``tasks/get``/``tasks/result`` polls:
  one logical operation each, with its total duration.
"""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

KINDS: Final = ("request", "notification", "response", "error", "batch", "malformed")
ORIGINS: Final = ("client", "server", "proxy")
# Histogram bins in ms: [0, 0.3), [0.3, 1), ... [10000, inf).
EDGES_MS: Final = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
TASK_METHODS: Final = ("tasks/get", "tasks/result", "tasks/cancel")


@dataclass(frozen=True, slots=True)
class Row:
    """A frames row without its text."""

    seq: int
    ts: float
    direction: str
    origin: str
    kind: str
    method: str | None
    rpc_id: str | None
    size: int
    request_seq: int | None


def _index(table: dict[str, int], value: str) -> int:
    found = table.get(value)
    if found is None:
        found = table[value] = len(table)
    return found


def columns(rows: Iterable[Row], start: float) -> dict[str, Any]:
    """The frames as parallel arrays (see the module docstring)."""
    methods: dict[str, int] = {"": 0}
    kinds = {k: i for i, k in enumerate(KINDS)}
    origins = {o: i for i, o in enumerate(ORIGINS)}
    seq: list[int] = []
    t: list[float] = []
    direction: list[int] = []
    kind: list[int] = []
    method: list[int] = []
    rpc_id: list[str | None] = []
    size: list[int] = []
    req: list[int] = []
    origin: list[int] = []
    for row in rows:
        seq.append(row.seq)
        t.append(round((row.ts - start) * 1000, 3))
        direction.append(0 if row.direction == "c2s" else 1)
        kind.append(_index(kinds, row.kind))
        method.append(_index(methods, row.method or ""))
        rpc_id.append(row.rpc_id)
        size.append(row.size)
        req.append(row.request_seq or 0)
        origin.append(_index(origins, row.origin))
    return {
        "seq": seq, "t": t, "dir": direction, "kind": kind, "method": method, "id": rpc_id,
        "size": size, "req": req, "origin": origin,
        "methods": list(methods), "kinds": list(kinds), "origins": list(origins),
    }  # fmt: skip


def percentile(sorted_values: list[float], fraction: float) -> float:
    """The value below which ``fraction`` of the values lie (nearest rank)."""
    rank = max(0, min(len(sorted_values) - 1, round(fraction * len(sorted_values) + 0.5) - 1))
    return sorted_values[rank]


def latency(rows: list[Row]) -> list[dict[str, Any]]:
    """Per method of a request answered: count, median, p95 and max in ms, and a histogram."""
    sent = {row.seq: row.ts for row in rows if row.kind == "request"}
    by_method: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if row.request_seq is not None and row.request_seq in sent:
            by_method[row.method or "?"].append((row.ts - sent[row.request_seq]) * 1000)
    out = []
    for method, values in sorted(by_method.items(), key=lambda kv: -len(kv[1])):
        values.sort()
        hist = [0] * (len(EDGES_MS) + 1)
        for value in values:
            hist[bisect.bisect_right(EDGES_MS, value)] += 1
        out.append(
            {
                "method": method,
                "count": len(values),
                "median": round(statistics.median(values), 3),
                "p95": round(percentile(values, 0.95), 3),
                "max": round(values[-1], 3),
                "hist": hist,
            }
        )
    return out


def _params(message: Any) -> dict[str, Any]:
    params = message.get("params") if isinstance(message, dict) else None
    return params if isinstance(params, dict) else {}


def _result(message: Any) -> dict[str, Any]:
    result = message.get("result") if isinstance(message, dict) else None
    return result if isinstance(result, dict) else {}


def _subject(method: str | None, message: Any) -> str | None:
    params = _params(message)
    value = params.get("name") if method in ("tools/call", "prompts/get") else params.get("uri")
    return value if isinstance(value, str) else None


def tool_bytes(rows: list[Row], messages: Mapping[int, Any]) -> list[dict[str, Any]]:
    """Per tool: calls answered, total, mean and largest result in bytes (largest total first)."""
    tools: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        if row.method == "tools/call" and row.request_seq is not None and row.kind in ("response", "error"):
            name = _subject("tools/call", messages.get(row.request_seq)) or "?"
            tools[name].append(row.size)
    out = [
        {
            "tool": name,
            "calls": len(sizes),
            "bytes": sum(sizes),
            "mean": round(sum(sizes) / len(sizes)),
            "max": max(sizes),
        }
        for name, sizes in tools.items()
    ]
    return sorted(out, key=lambda tool: -tool["bytes"])


@dataclass
class _Group:
    kind: str
    label: str
    seqs: list[int]


def groups(rows: list[Row], messages: Mapping[int, Any]) -> list[dict[str, Any]]:
    """Input-required rounds with their retries, and tasks with their polls (see the module docstring)."""
    by_seq = {row.seq: row for row in rows}
    reply_to = {row.request_seq: row for row in rows if row.request_seq is not None}
    found: list[_Group] = []
    by_state: dict[str, _Group] = {}
    open_rounds: dict[tuple[str | None, str | None], _Group] = {}
    in_round: dict[int, _Group] = {}  # request seq -> its group
    tasks: dict[str, _Group] = {}
    for row in rows:
        message = messages.get(row.seq)
        if row.kind == "request" and row.direction == "c2s":
            params = _params(message)
            state = params.get("requestState")
            key = (row.method, _subject(row.method, message))
            group = by_state.get(state) if isinstance(state, str) else None
            if group is None and ("inputResponses" in params or isinstance(state, str)):
                group = open_rounds.get(key)
            if group is not None:
                group.seqs.append(row.seq)
                in_round[row.seq] = group
            task_id = params.get("taskId")
            if row.method in TASK_METHODS and isinstance(task_id, str) and task_id in tasks:
                tasks[task_id].seqs.append(row.seq)
        elif row.kind == "response" and row.request_seq is not None:
            result = _result(message)
            request = by_seq.get(row.request_seq)
            if request is None:
                continue
            request_message = messages.get(request.seq)
            key = (request.method, _subject(request.method, request_message))
            if result.get("resultType") == "input_required":
                group = in_round.get(request.seq)
                if group is None:
                    label = " ".join(part for part in key if part)
                    group = _Group("input_required", label, [request.seq])
                    found.append(group)
                    in_round[request.seq] = group
                open_rounds[key] = group
                state = result.get("requestState")
                if isinstance(state, str):
                    by_state[state] = group
            elif in_round.get(request.seq) is not None and open_rounds.get(key) is in_round[request.seq]:
                del open_rounds[key]
            task = result.get("task")
            task_id = task.get("taskId") if isinstance(task, dict) else None
            if isinstance(task_id, str) and request.method not in TASK_METHODS and task_id not in tasks:
                label = " ".join(part for part in key if part) + f" (task {task_id[:16]})"
                tasks[task_id] = group = _Group("task", label, [request.seq])
                found.append(group)
    out = []
    for group in found:
        first = by_seq[group.seqs[0]]
        last_reply = reply_to.get(group.seqs[-1])
        end = last_reply.ts if last_reply is not None else by_seq[group.seqs[-1]].ts
        out.append(
            {
                "kind": group.kind,
                "label": group.label,
                "seqs": group.seqs,
                "start": first.ts,
                "end": end,
                "duration_ms": round((end - first.ts) * 1000, 3),
                "steps": len(group.seqs),
                "done": last_reply is not None,
            }
        )
    return out
