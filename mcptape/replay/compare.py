"""Comparing a replay with its recording, exchange by exchange, and reporting it (text, JSON, JUnit).

Pure: :func:`compare_tapes` takes two tapes (the recording and what the live server
did when re-driven with it) and a :class:`~mcptape.replay.normalise.Normaliser`. For
each client request it compares the response (``result`` or ``error``, not the id),
the notifications that came with it (as a multiset per method: their order is not
guaranteed) and the server-initiated requests made meanwhile.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from xml.sax.saxutils import escape, quoteattr

from mcptape.replay.matchers import ABSENT, Difference, canonical, differences
from mcptape.replay.normalise import Normaliser
from mcptape.replay.showdiff import Repeats, arguments_text, as_json, cut, long_text_lines
from mcptape.replay.tape import Exchange, Tape
from mcptape.wire.protocol import PROMPTS_GET, TOOLS_CALL

MATCH: Final = "match"
DIFFERS: Final = "differs"
MISSING: Final = "no response"
NOT_REPLAYED: Final = "not replayed"  # the replay was interrupted before it was answered


@dataclass
class ExchangeResult:
    """How one recorded exchange compared with its replay."""

    index: int
    method: str | None
    subject: str | None
    status: str
    differences: list[Difference] = field(default_factory=list)
    arguments: Any = None  # a tool call's or prompt's arguments: which file was read, say

    def label(self) -> str:
        subject = f" {self.subject}" if self.subject else ""
        return f"#{self.index} {self.method}{subject}"

    def heading(self) -> str:
        """The label with the request's arguments, for the report's ✗ line."""
        if self.arguments is None:
            return self.label()
        return f"{self.label()} {arguments_text(self.arguments)}"


@dataclass
class SessionResult:
    """A replayed recording: where it came from, the replay's session id, each exchange's result."""

    source: str
    exchanges: list[ExchangeResult]
    replay_id: str | None = None
    error: str | None = None  # the replay could not run
    interrupted: str | None = None  # the signal that stopped the replay (SIGINT) before its end

    @property
    def failed(self) -> list[ExchangeResult]:
        return [e for e in self.exchanges if e.status not in (MATCH, NOT_REPLAYED)]

    @property
    def not_replayed(self) -> int:
        return sum(1 for e in self.exchanges if e.status == NOT_REPLAYED)


def _body(message: dict[str, Any] | None) -> Any:
    if message is None:
        return None
    return {k: v for k, v in message.items() if k not in ("id", "jsonrpc")}


# One message sent beside a response: (what, method, canonical params, params), normalised.
Item = tuple[str, str, bytes, Any]


def _items(normaliser: Normaliser, exchange: Exchange) -> list[Item]:
    """The notifications and server requests sent while ``exchange`` was in flight, normalised."""
    return _normalised(normaliser, exchange.notifications, [c.request for c in exchange.server_calls])


def _loose(normaliser: Normaliser, tape: Tape) -> list[Item]:
    """What the server sent while no client request was in flight, normalised."""
    return _normalised(normaliser, tape.loose, [c.request for c in tape.server_calls if c.exchange is None])


def _normalised(normaliser: Normaliser, notifications: list[Any], requests: list[Any]) -> list[Item]:
    out: list[Item] = []
    for what, messages in (("notification", notifications), ("server request", requests)):
        for message in messages:
            method = message.get("method")
            method = method if isinstance(method, str) else "?"
            if normaliser.dropped(method):
                continue
            body = normaliser.normalise(message.get("params"), method)
            out.append((what, method, canonical(body), body))
    return out


def _minus(a: list[Item], b: list[Item]) -> list[Item]:
    """The items of ``a`` not in ``b``, as multisets."""
    if not a or not b:
        return list(a)  # most exchanges carry no notifications at all
    left = Counter((i[0], i[1], i[2]) for i in b)
    out = []
    for item in a:
        key = (item[0], item[1], item[2])
        if left[key]:
            left[key] -= 1
        else:
            out.append(item)
    return out


def _item_differences(recorded: list[Item], replayed: list[Item]) -> list[Difference]:
    """What is left over on either side, per method: paired field by field when counts agree."""
    groups: dict[tuple[str, str], tuple[list[Item], list[Item]]] = defaultdict(lambda: ([], []))
    for item in recorded:
        groups[(item[0], item[1])][0].append(item)
    for item in replayed:
        groups[(item[0], item[1])][1].append(item)
    out: list[Difference] = []
    for (what, method), (left, right) in sorted(groups.items()):
        where = f"{what} {method}"
        if len(left) != len(right):
            out.append(Difference(where, f"{len(left)} more sent", f"{len(right)} more sent"))
            continue
        for x, y in zip(sorted(left, key=lambda i: i[2]), sorted(right, key=lambda i: i[2]), strict=True):
            for d in differences(x[3], y[3], limit=10):
                out.append(Difference(f"{where} /params{d.pointer}", d.recorded, d.replayed))
    return out


def compare_response(normaliser: Normaliser, recorded: Exchange, replayed: Exchange | None) -> ExchangeResult:
    """One exchange's result from its response alone (``result`` or ``error``, not the id)."""
    result = ExchangeResult(recorded.index, recorded.method, recorded.subject, MATCH)
    if recorded.method in (TOOLS_CALL, PROMPTS_GET) and isinstance(recorded.params, dict):
        result.arguments = recorded.params.get("arguments") or None
    if replayed is None or (replayed.response is None and recorded.response is not None):
        result.status = MISSING
        return result
    if recorded.response_data is not None and recorded.response_data == replayed.response_data:
        return result  # the same bytes: nothing to normalise (most exchanges of a passing replay)
    method, tool = recorded.method, recorded.subject
    a = normaliser.normalise(_body(recorded.response), method, tool)
    b = normaliser.normalise(_body(replayed.response), method, tool)
    found = differences(a, b)
    if found:
        result.status = DIFFERS
        result.differences = found
    return result


def compare_tapes(recorded: Tape, replayed: Tape, normaliser: Normaliser) -> list[ExchangeResult]:
    """Each recorded exchange against the replayed exchange of the same rank.

    Notifications and server requests are compared as multisets per exchange. What a
    server sends on its own schedule (a log line, the roots/list it asks for after the
    handshake) can land beside another request in a replay that runs faster than the
    client did, or between requests: what one exchange lacks and another has extra, or
    the other run sent while no request was in flight, identically, matches.
    """
    results, missing, extra = [], [], []
    for i, exchange in enumerate(recorded.exchanges):
        other = replayed.exchanges[i] if i < len(replayed.exchanges) else None
        results.append(compare_response(normaliser, exchange, other))
        mine = _items(normaliser, exchange)
        theirs = _items(normaliser, other) if other is not None else []
        missing.append(_minus(mine, theirs))
        extra.append(_minus(theirs, mine))
    # The other run's loose items can stand in for an exchange's (they are never reported).
    all_missing = [item for items in missing for item in items] + _loose(normaliser, recorded)
    all_extra = [item for items in extra for item in items] + _loose(normaliser, replayed)
    unmatched_missing = _minus(all_missing, all_extra)
    unmatched_extra = _minus(all_extra, all_missing)
    for result, lacking, more in zip(results, missing, extra, strict=True):
        if result.status == MISSING:
            continue
        lacking = [i for i in lacking if _take(unmatched_missing, i)]
        more = [i for i in more if _take(unmatched_extra, i)]
        found = _item_differences(lacking, more)
        if found:
            result.status = DIFFERS
            result.differences += found
    return results


def cut_short(results: list[ExchangeResult]) -> None:
    """A replay a signal stopped: what had no response was not replayed (never sent, or
    stopped before its answer), which says nothing of the server."""
    for result in results:
        if result.status == MISSING:
            result.status = NOT_REPLAYED
            result.differences = []


def _take(pool: list[Item], item: Item) -> bool:
    """Remove ``item`` from ``pool`` if it is there (by identity): it is still unmatched."""
    for k, candidate in enumerate(pool):
        if candidate is item:
            del pool[k]
            return True
    return False


# -- reporting ---------------------------------------------------------------------------


def show_value(value: Any) -> str:
    """A value in a diff line: JSON, cut to a readable width."""
    if value is ABSENT:
        return ABSENT
    return cut(as_json(value))


def format_difference(d: Difference) -> list[str]:
    """One difference: its pointer and both values; two long texts as where they differ."""
    where = d.pointer or "/"
    long = long_text_lines(d.recorded, d.replayed)
    if long is not None:
        return [f"{where}: {long[0]}", *("  " + line for line in long[1:])]
    return [f"{where}: recorded {show_value(d.recorded)}, replayed {show_value(d.replayed)}"]


def format_exchange(result: ExchangeResult) -> list[str]:
    """The lines a differing exchange prints; empty for one that matched."""
    if result.status == MATCH:
        return []
    if result.status == MISSING:
        return [f"✗ {result.heading()}: no response from the replayed server"]
    lines = [f"✗ {result.heading()}: {len(result.differences)} difference(s)"]
    repeats = Repeats()
    for d in result.differences:
        earlier = repeats.earlier(d.pointer or "/", d.recorded, d.replayed)
        if earlier is not None:
            lines.append(f"    {d.pointer or '/'}: the same difference as {earlier}")
        else:
            lines += ["    " + line for line in format_difference(d)]
    return lines


def format_session(result: SessionResult) -> list[str]:
    """A session's block of the text report: a header, then each exchange that differs."""
    if result.error:
        return [f"{result.source}: could not replay: {result.error}"]
    failed = result.failed
    matched = len(result.exchanges) - len(failed) - result.not_replayed
    head = f"{result.source}: {matched}/{len(result.exchanges)} exchanges match"
    if result.interrupted:
        head += f", {result.not_replayed} not replayed (interrupted by {result.interrupted})"
    lines = [head + (f" (replay {result.replay_id[:12]})" if result.replay_id else "")]
    for exchange in failed:
        lines += ["  " + line for line in format_exchange(exchange)]
    return lines


def summary_line(results: Sequence[SessionResult]) -> str:
    """``replayed 2 recordings, 14 exchanges: 13 match, 1 differs``."""
    total = sum(len(r.exchanges) for r in results)
    bad = sum(len(r.failed) for r in results)
    skipped = sum(r.not_replayed for r in results)
    errors = sum(1 for r in results if r.error)
    text = f"replayed {len(results)} recording(s), {total} exchanges: {total - bad - skipped} match, {bad} differ"
    stopped = next((r.interrupted for r in results if r.interrupted), None)
    if stopped:
        text += f", {skipped} not replayed (interrupted by {stopped})"
    return text + (f", {errors} could not run" if errors else "")


def report_json(results: Sequence[SessionResult]) -> dict[str, Any]:
    """The ``--report`` document."""

    def exchange(e: ExchangeResult) -> dict[str, Any]:
        return {
            "index": e.index,
            "method": e.method,
            "subject": e.subject,
            "arguments": e.arguments,
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
        "ok": all(not r.error and not r.failed and not r.interrupted for r in results),
        "recordings": [
            {
                "source": r.source,
                "replay_session": r.replay_id,
                "error": r.error,
                "interrupted": r.interrupted,
                "exchanges": [exchange(e) for e in r.exchanges],
            }
            for r in results
        ],
    }


# Characters XML 1.0 cannot carry at all, even as references: a recording's names and values
# may hold them, and one makes the whole JUnit file unreadable to the CI that parses it.
_NOT_XML: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_chars(text: str) -> str:
    """``text`` with each character XML 1.0 forbids written as ``\\uXXXX``."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _attr(text: str) -> str:
    return quoteattr(_xml_chars(text))


def report_junit(results: Sequence[SessionResult]) -> str:
    """JUnit XML: one test suite per recording, one test case per exchange."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
    for r in results:
        failures = len(r.failed)
        errors = 1 if r.error else 0
        skipped = f' skipped="{r.not_replayed}"' if r.interrupted else ""
        out.append(
            f"  <testsuite name={_attr(r.source)} tests={quoteattr(str(len(r.exchanges) or errors))} "
            f'failures="{failures}" errors="{errors}"{skipped}>'
        )
        if r.error:
            out.append(f'    <testcase name="replay" classname={_attr(r.source)}>')
            out.append(f"      <error message={_attr(r.error)}/>")
            out.append("    </testcase>")
        for e in r.exchanges:
            out.append(f"    <testcase name={_attr(e.label())} classname={_attr(r.source)}>")
            if e.status == NOT_REPLAYED:
                out.append(
                    f"      <skipped message={_attr(f'not replayed: interrupted by {r.interrupted}')}/>"
                )
            elif e.status != MATCH:
                text = "\n".join(format_exchange(e))
                out.append(f"      <failure message={_attr(e.status)}>{escape(_xml_chars(text))}</failure>")
            out.append("    </testcase>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
