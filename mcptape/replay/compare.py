"""Comparing a replay with its recording, exchange by exchange, and reporting it (text, JSON, JUnit).

Pure: :func:`compare_tapes` takes two tapes (the recording and what the live server
did when re-driven with it) and a :class:`~mcptape.replay.normalise.Normaliser`. For
each client request it compares the response (``result`` or ``error``, not the id),
the notifications that came with it (as a multiset per method: their order is not
guaranteed) and the server-initiated requests made meanwhile.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from xml.sax.saxutils import escape, quoteattr

from mcptape.replay.matchers import ABSENT, Difference, canonical, differences
from mcptape.replay.normalise import Normaliser
from mcptape.replay.tape import Exchange, Tape

MATCH: Final = "match"
DIFFERS: Final = "differs"
MISSING: Final = "no response"


@dataclass
class ExchangeResult:
    """How one recorded exchange compared with its replay."""

    index: int
    method: str | None
    subject: str | None
    status: str
    differences: list[Difference] = field(default_factory=list)

    def label(self) -> str:
        subject = f" {self.subject}" if self.subject else ""
        return f"#{self.index} {self.method}{subject}"


@dataclass
class SessionResult:
    """A replayed recording: where it came from, the replay's session id, each exchange's result."""

    source: str
    exchanges: list[ExchangeResult]
    replay_id: str | None = None
    error: str | None = None  # the replay could not run

    @property
    def failed(self) -> list[ExchangeResult]:
        return [e for e in self.exchanges if e.status != MATCH]


def _body(message: dict[str, Any] | None) -> Any:
    if message is None:
        return None
    return {k: v for k, v in message.items() if k not in ("id", "jsonrpc")}


def _multiset(
    normaliser: Normaliser, messages: Sequence[dict[str, Any]], prefix: str
) -> dict[str, list[tuple[bytes, Any]]]:
    groups: dict[str, list[tuple[bytes, Any]]] = defaultdict(list)
    for message in messages:
        method = message.get("method")
        method = method if isinstance(method, str) else "?"
        if normaliser.dropped(method):
            continue
        body = normaliser.normalise(message.get("params"), method)
        groups[method].append((canonical(body), body))
    for items in groups.values():
        items.sort(key=lambda item: item[0])
    return groups


def _compare_groups(
    normaliser: Normaliser, recorded: Sequence[dict[str, Any]], replayed: Sequence[dict[str, Any]], what: str
) -> list[Difference]:
    a, b = _multiset(normaliser, recorded, what), _multiset(normaliser, replayed, what)
    out: list[Difference] = []
    for method in sorted(set(a) | set(b)):
        left, right = a.get(method, []), b.get(method, [])
        where = f"{what} {method}"
        if len(left) != len(right):
            out.append(Difference(where, f"{len(left)} sent", f"{len(right)} sent"))
            continue
        for k, (x, y) in enumerate(zip(left, right, strict=True)):
            if x[0] != y[0]:
                for d in differences(x[1], y[1], limit=10):
                    out.append(Difference(f"{where} #{k + 1} /params{d.pointer}", d.recorded, d.replayed))
    return out


def compare_exchange(normaliser: Normaliser, recorded: Exchange, replayed: Exchange | None) -> ExchangeResult:
    """One exchange's result: the response, its notifications and server requests compared."""
    result = ExchangeResult(recorded.index, recorded.method, recorded.subject, MATCH)
    if replayed is None or (replayed.response is None and recorded.response is not None):
        result.status = MISSING
        return result
    if (
        recorded.response_data is not None
        and recorded.response_data == replayed.response_data
        and not (recorded.timeline or replayed.timeline)
    ):
        return result  # the same bytes: nothing to normalise (most exchanges of a passing replay)
    method, tool = recorded.method, recorded.subject
    a = normaliser.normalise(_body(recorded.response), method, tool)
    b = normaliser.normalise(_body(replayed.response), method, tool)
    found = differences(a, b)
    found += _compare_groups(normaliser, recorded.notifications, replayed.notifications, "notification")
    found += _compare_groups(
        normaliser,
        [c.request for c in recorded.server_calls],
        [c.request for c in replayed.server_calls],
        "server request",
    )
    if found:
        result.status = DIFFERS
        result.differences = found
    return result


def compare_tapes(recorded: Tape, replayed: Tape, normaliser: Normaliser) -> list[ExchangeResult]:
    """Each recorded exchange against the replayed exchange of the same rank."""
    results = []
    for i, exchange in enumerate(recorded.exchanges):
        other = replayed.exchanges[i] if i < len(replayed.exchanges) else None
        results.append(compare_exchange(normaliser, exchange, other))
    return results


# -- reporting ---------------------------------------------------------------------------

VALUE_WIDTH: Final = 120


def show_value(value: Any) -> str:
    """A value in a diff line: JSON, cut to a readable width."""
    if value is ABSENT:
        return ABSENT
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 3] + "..."


def format_exchange(result: ExchangeResult) -> list[str]:
    """The lines a differing exchange prints; empty for one that matched."""
    if result.status == MATCH:
        return []
    if result.status == MISSING:
        return [f"✗ {result.label()}: no response from the replayed server"]
    lines = [f"✗ {result.label()}: {len(result.differences)} difference(s)"]
    for d in result.differences:
        lines.append(
            f"    {d.pointer or '/'}: recorded {show_value(d.recorded)}, replayed {show_value(d.replayed)}"
        )
    return lines


def format_session(result: SessionResult) -> list[str]:
    """A session's block of the text report: a header, then each exchange that differs."""
    if result.error:
        return [f"{result.source}: could not replay: {result.error}"]
    failed = result.failed
    head = f"{result.source}: {len(result.exchanges) - len(failed)}/{len(result.exchanges)} exchanges match"
    lines = [head + (f" (replay {result.replay_id[:12]})" if result.replay_id else "")]
    for exchange in failed:
        lines += ["  " + line for line in format_exchange(exchange)]
    return lines


def summary_line(results: Sequence[SessionResult]) -> str:
    """``replayed 2 recordings, 14 exchanges: 13 match, 1 differs``."""
    total = sum(len(r.exchanges) for r in results)
    bad = sum(len(r.failed) for r in results)
    errors = sum(1 for r in results if r.error)
    text = f"replayed {len(results)} recording(s), {total} exchanges: {total - bad} match, {bad} differ"
    return text + (f", {errors} could not run" if errors else "")


def report_json(results: Sequence[SessionResult]) -> dict[str, Any]:
    """The ``--report`` document."""

    def exchange(e: ExchangeResult) -> dict[str, Any]:
        return {
            "index": e.index,
            "method": e.method,
            "subject": e.subject,
            "status": e.status,
            "differences": [
                {
                    "pointer": d.pointer,
                    "recorded": None if d.recorded is ABSENT else d.recorded,
                    "replayed": None if d.replayed is ABSENT else d.replayed,
                    "recorded_absent": d.recorded is ABSENT,
                    "replayed_absent": d.replayed is ABSENT,
                }
                for d in e.differences
            ],
        }

    return {
        "summary": summary_line(results),
        "ok": all(not r.error and not r.failed for r in results),
        "recordings": [
            {
                "source": r.source,
                "replay_session": r.replay_id,
                "error": r.error,
                "exchanges": [exchange(e) for e in r.exchanges],
            }
            for r in results
        ],
    }


def report_junit(results: Sequence[SessionResult]) -> str:
    """JUnit XML: one test suite per recording, one test case per exchange."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for r in results:
        failures = len(r.failed)
        errors = 1 if r.error else 0
        out.append(
            f"  <testsuite name={quoteattr(r.source)} tests={quoteattr(str(len(r.exchanges) or errors))} "
            f'failures="{failures}" errors="{errors}">'
        )
        if r.error:
            out.append(f'    <testcase name="replay" classname={quoteattr(r.source)}>')
            out.append(f"      <error message={quoteattr(r.error)}/>")
            out.append("    </testcase>")
        for e in r.exchanges:
            out.append(f"    <testcase name={quoteattr(e.label())} classname={quoteattr(r.source)}>")
            if e.status != MATCH:
                text = "\n".join(format_exchange(e))
                out.append(f"      <failure message={quoteattr(e.status)}>{escape(text)}</failure>")
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
