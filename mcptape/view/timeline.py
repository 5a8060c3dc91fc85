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
import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

KINDS: Final = ("request", "notification", "response", "error", "batch", "malformed")
ORIGINS: Final = ("client", "server", "proxy")
# Histogram bins in ms: [0, 0.3), [0.3, 1), ... [10000, inf).
EDGES_MS: Final = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
TASK_METHODS: Final = ("tasks/get", "tasks/result", "tasks/cancel")


# A frames row without its text, in this order (what :data:`ROW_COLUMNS` reads).
Row = tuple[int, float, str, str, str, str | None, str | None, int, int | None]
ROW_COLUMNS: Final = ("seq", "ts", "direction", "origin", "kind", "method", "rpc_id", "size", "request_seq")
SEQ: Final = 0
TS: Final = 1
DIRECTION: Final = 2
ORIGIN: Final = 3
KIND: Final = 4
METHOD: Final = 5
RPC_ID: Final = 6
SIZE: Final = 7
REQUEST_SEQ: Final = 8


def columns(rows: Sequence[Row], start: float) -> dict[str, Any]:
    """The frames as parallel arrays (see the module docstring); one pass per column, no object per frame."""
    methods: dict[str, int] = {"": 0}
    kinds = {k: i for i, k in enumerate(KINDS)}
    origins = {o: i for i, o in enumerate(ORIGINS)}
    if rows:
        seq, ts, direction, origin, kind, method, rpc_id, size, request_seq = (
            list(c) for c in zip(*rows, strict=True)
        )
    else:
        seq, ts, direction, origin, kind, method, rpc_id, size, request_seq = ([] for _ in range(9))
    return {
        "seq": seq,
        "t": [round((t - start) * 1000, 3) for t in ts],
        "dir": [0 if d == "c2s" else 1 for d in direction],
        "kind": [kinds.setdefault(k, len(kinds)) for k in kind],
        "method": [methods.setdefault(m or "", len(methods)) for m in method],
        "id": rpc_id,
        "size": size,
        "req": [r or 0 for r in request_seq],
        "origin": [origins.setdefault(o, len(origins)) for o in origin],
        "methods": list(methods),
        "kinds": list(kinds),
        "origins": list(origins),
    }


def percentile(sorted_values: list[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``fraction`` of the values at or below it."""
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def latency(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Per method of a request answered: count, median, p95 and max in ms, and a histogram."""
    sent = {row[SEQ]: row[TS] for row in rows if row[KIND] == "request"}
    by_method: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        asked = row[REQUEST_SEQ]
        if asked is not None and asked in sent:
            by_method[row[METHOD] or "?"].append((row[TS] - sent[asked]) * 1000)
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


def tool_bytes(rows: Sequence[Row], tools: Mapping[int, str]) -> list[dict[str, Any]]:
    """Per tool: calls answered, total, mean and largest result in bytes (largest total first).

    ``tools`` names the tool of each ``tools/call`` request, by its seq."""
    sizes_by_tool: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        asked = row[REQUEST_SEQ]
        if asked is not None and row[METHOD] == "tools/call" and row[KIND] in ("response", "error"):
            sizes_by_tool[tools.get(asked) or "?"].append(row[SIZE])
    out = [
        {
            "tool": name,
            "calls": len(sizes),
            "bytes": sum(sizes),
            "mean": round(sum(sizes) / len(sizes)),
            "max": max(sizes),
        }
        for name, sizes in sizes_by_tool.items()
    ]
    return sorted(out, key=lambda tool: -tool["bytes"])


@dataclass
class _Group:
    kind: str
    label: str
    seqs: list[int]


def groups(rows: Sequence[Row], messages: Mapping[int, Any]) -> list[dict[str, Any]]:
    """Input-required rounds with their retries, and tasks with their polls (see the module docstring).

    ``messages`` holds the parsed messages of the frames that may take part (by seq); the
    other frames are only looked up by seq."""
    index = {row[SEQ]: i for i, row in enumerate(rows)}
    reply_to = {row[REQUEST_SEQ]: row for row in rows if row[REQUEST_SEQ] is not None}
    found: list[_Group] = []
    by_state: dict[str, _Group] = {}
    open_rounds: dict[tuple[str | None, str | None], _Group] = {}
    in_round: dict[int, _Group] = {}  # request seq -> its group
    tasks: dict[str, _Group] = {}
    for seq in sorted(messages):
        if seq not in index:
            continue
        row = rows[index[seq]]
        message = messages[seq]
        if row[KIND] == "request" and row[DIRECTION] == "c2s":
            params = _params(message)
            state = params.get("requestState")
            key = (row[METHOD], _subject(row[METHOD], message))
            group = by_state.get(state) if isinstance(state, str) else None
            if group is None and ("inputResponses" in params or isinstance(state, str)):
                group = open_rounds.get(key)
            if group is not None:
                group.seqs.append(seq)
                in_round[seq] = group
            task_id = params.get("taskId")
            if row[METHOD] in TASK_METHODS and isinstance(task_id, str) and task_id in tasks:
                tasks[task_id].seqs.append(seq)
        elif row[KIND] == "response" and row[REQUEST_SEQ] is not None and row[REQUEST_SEQ] in index:
            result = _result(message)
            request = rows[index[row[REQUEST_SEQ]]]
            key = (request[METHOD], _subject(request[METHOD], messages.get(request[SEQ])))
            if result.get("resultType") == "input_required":
                group = in_round.get(request[SEQ])
                if group is None:
                    group = _Group("input_required", " ".join(part for part in key if part), [request[SEQ]])
                    found.append(group)
                    in_round[request[SEQ]] = group
                open_rounds[key] = group
                state = result.get("requestState")
                if isinstance(state, str):
                    by_state[state] = group
            elif in_round.get(request[SEQ]) is not None and open_rounds.get(key) is in_round[request[SEQ]]:
                del open_rounds[key]
            task = result.get("task")
            task_id = task.get("taskId") if isinstance(task, dict) else None
            if isinstance(task_id, str) and request[METHOD] not in TASK_METHODS and task_id not in tasks:
                label = " ".join(part for part in key if part) + f" (task {task_id[:16]})"
                tasks[task_id] = group = _Group("task", label, [request[SEQ]])
                found.append(group)
    out = []
    for group in found:
        first = rows[index[group.seqs[0]]]
        last_reply = reply_to.get(group.seqs[-1])
        end = last_reply[TS] if last_reply is not None else rows[index[group.seqs[-1]]][TS]
        out.append(
            {
                "kind": group.kind,
                "label": group.label,
                "seqs": group.seqs,
                "start": first[TS],
                "end": end,
                "duration_ms": round((end - first[TS]) * 1000, 3),
                "steps": len(group.seqs),
                "done": last_reply is not None,
            }
        )
    return out
