"""Fault rules: which frames mcptape disturbs on purpose, and how (pure: parsing, checking, matching).

The faults addon (:mod:`mcptape.proxy.addons.faults`) applies them; this module only
says which rule fires for a frame. A rule is written as a flag::

    --fault 'METHOD[:TOOL]=ACTION[,p=PROB][,seed=N][,on=request|response]'

or as an entry of a faults file (``--faults FILE``, JSON, in the spirit of the
injection rules file)::

    {"faults": [
      {"method": "tools/call", "tool": "weather", "action": "delay:500", "p": 0.5, "seed": 7},
      {"method": "notifications/progress", "action": "reorder"},
      "resources/read=error:-32603"
    ]}

(a bare list works too, and an entry may be a flag's text). ``METHOD`` is a method name
or a shell-style pattern (``notifications/*``, ``*``); ``TOOL`` (with ``tools/call``)
the tool's name, a pattern too. A name that is not a method of the protocol but close
to one (``tools/cal``) is refused with the nearest name; other names (a server's own
methods) are taken as written. ACTION is one of:

``delay:MS``   the frame goes MS milliseconds late (frames after it do not wait: they
               may overtake it, as on two HTTP streams)
``drop``       the frame is not forwarded
``duplicate``  the frame is forwarded twice
``error:CODE`` mcptape answers the request in the peer's place with a JSON-RPC error
               CODE; the peer it was meant for never sees it
``timeout``    mcptape holds the request and never answers it: the peer it was meant
               for never sees it, so the sender's own request timeout is what fires
``cut``        the client's connection is cut where the frame would go: over stdio
               mcptape closes its stdout (the client reads end of file, as when a
               server dies) and the session ends; over streamable HTTP the SSE stream
               that would carry it ends without it (the session goes on; a client may
               resume with ``Last-Event-ID``)
``malformed``  the peer gets a malformed frame (the frame's text cut in the middle)
               instead of the frame
``reorder``    the frame is held and sent right after the next frame going the same
               way (meant for notifications: a progress after the result it reports on)

Which frame: a notification matches by its method. For a request method, ``error``
and ``timeout`` act on the request; the other actions act, by default, on its
response (``on=response``: what a client sees of a slow, lost or broken answer);
``on=request`` makes them act on the request (what the server sees).

``p`` (0 to 1, default 1) is the chance that a matching frame is touched; the draw
for the n-th frame a rule matches going one way is a function of the rule's seed, its
place in the list, the direction and n, so two runs of one client script with one
seed touch the same frames. Without ``seed`` a random one is chosen and recorded
with the session (the ``faults`` event), so a run can be repeated.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcptape.wire.protocol import METHODS

ACTIONS: Final = ("delay", "drop", "duplicate", "error", "timeout", "cut", "malformed", "reorder")
REQUEST_ONLY: Final = frozenset({"error", "timeout"})  # they answer (or not) in the peer's place
FIELDS: Final = ("method", "tool", "action", "p", "seed", "on", "comment")
MAX_DELAY_MS: Final = 3_600_000
_PATTERN_CHARS: Final = frozenset("*?[")


class FaultError(ValueError):
    """A fault rule is unusable; the message is one line naming the flag or file."""


@dataclass(frozen=True)
class FaultRule:
    """One rule: what it matches, what it does, how often."""

    method: str
    action: str
    tool: str | None = None
    arg: int | None = None  # milliseconds (delay) or the error code (error)
    p: float = 1.0
    seed: int = 0
    on: str = "response"  # for a request method: the request itself, or its response
    spec: str = ""  # as the user wrote it (for messages and the recording)

    @property
    def label(self) -> str:
        """The action as written: ``delay:500``, ``error:-32603``, ``drop``."""
        return f"{self.action}:{self.arg}" if self.arg is not None else self.action

    def matches(self, kind: str, method: str | None, tool: str | None) -> bool:
        """Whether the rule applies to a frame of ``kind`` about ``method`` (a response: its request's)."""
        if method is None or not fnmatch.fnmatchcase(method, self.method):
            return False
        if kind == "notification":
            if self.action in REQUEST_ONLY:
                return False
        elif kind == "request":
            if self.on != "request":
                return False
        elif kind in ("response", "error"):
            if self.on != "response":
                return False
        else:
            return False  # batches and malformed frames pass untouched
        if self.tool is not None:
            return tool is not None and fnmatch.fnmatchcase(tool, self.tool)
        return True

    def describe(self) -> dict[str, Any]:
        """The rule as recorded with the session (everything needed to run it again)."""
        out: dict[str, Any] = {"method": self.method, "action": self.label, "on": self.on, "p": self.p}
        if self.tool is not None:
            out["tool"] = self.tool
        out["seed"] = self.seed
        return out


@dataclass(frozen=True)
class Fault:
    """A rule that fired for one frame: the rule, its place in the list and the draw's number."""

    rule: FaultRule
    index: int
    draw: int


@dataclass
class FaultSet:
    """An ordered list of rules and the draws made so far; ``bool()`` is False when empty.

    :meth:`pick` may be called from any thread (a stdio link's reader threads).
    """

    rules: list[FaultRule] = field(default_factory=list)
    _counts: dict[tuple[int, str], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def pick(self, direction: str, kind: str, method: str | None, tool: str | None) -> Fault | None:
        """The first rule that matches this frame and whose draw fires; None when none does."""
        for index, rule in enumerate(self.rules):
            if not rule.matches(kind, method, tool):
                continue
            with self._lock:
                n = self._counts.get((index, direction), 0) + 1
                self._counts[(index, direction)] = n
            if fires(rule, index, direction, n):
                return Fault(rule, index, n)
        return None


def fires(rule: FaultRule, index: int, direction: str, n: int) -> bool:
    """Whether the ``n``-th frame ``rule`` (at ``index``) matched going ``direction`` is touched."""
    if rule.p >= 1.0:
        return True
    if rule.p <= 0.0:
        return False
    # A string seed is hashed with SHA-512 by random.Random: the same on every run and
    # platform, whatever PYTHONHASHSEED says.
    return random.Random(f"{rule.seed}/{index}/{direction}/{n}").random() < rule.p


# -- parsing ---------------------------------------------------------------------------------


def from_options(flags: Sequence[str], path: str | None) -> FaultSet:
    """The rules of ``--faults FILE`` (first) and each ``--fault``; raises FaultError."""
    rules: list[FaultRule] = []
    if path is not None:
        rules.extend(read_file(path))
    rules.extend(parse_flag(flag, f"--fault {flag!r}") for flag in flags)
    return FaultSet(rules)


def parse_flag(text: str, where: str) -> FaultRule:
    """One rule written as ``METHOD[:TOOL]=ACTION[,p=PROB][,seed=N][,on=...]``."""
    target, sep, rest = text.partition("=")
    if not sep or not target.strip() or not rest.strip():
        raise FaultError(
            f"{where}: expected METHOD[:TOOL]=ACTION[,p=PROB][,seed=N], e.g. 'tools/call:search=delay:500,p=0.2'"
        )
    method, _, tool = target.strip().partition(":")
    action, *options = (part.strip() for part in rest.split(","))
    entry: dict[str, Any] = {"method": method, "action": action}
    if tool:
        entry["tool"] = tool
    for option in options:
        key, eq, value = option.partition("=")
        key = key.strip()
        if not eq or key not in ("p", "seed", "on"):
            raise FaultError(
                f"{where}: unknown option {option!r} (options: p=PROB, seed=N, on=request|response)"
            )
        entry[key] = _number(value.strip(), key, where) if key != "on" else value.strip()
    return parse_entry(entry, where, spec=text)


def _number(text: str, key: str, where: str) -> float | int:
    try:
        return int(text) if key == "seed" else float(text)
    except ValueError:
        expected = "an integer" if key == "seed" else "a number from 0 to 1"
        raise FaultError(f"{where}: {key}={text!r} is not {expected}") from None


def read_file(path: str) -> list[FaultRule]:
    """The rules of a faults file (see the module docstring); raises FaultError."""
    where = f"--faults {path}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise FaultError(f"{where}: cannot read the faults file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise FaultError(f"{where}: not UTF-8 text") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FaultError(f"{where}: not valid JSON: {exc}") from None
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"faults", "comment"})
        if unknown:
            raise FaultError(f"{where}: unknown key {unknown[0]!r}{_nearest(unknown[0], ('faults',))}")
        data = data.get("faults")
    if not isinstance(data, list):
        raise FaultError(f"{where}: expected a list of faults, or an object with a 'faults' list")
    rules = []
    for i, item in enumerate(data, 1):
        at = f"{where}: fault {i}"
        rules.append(parse_flag(item, at) if isinstance(item, str) else parse_entry(item, at))
    return rules


def parse_entry(item: Any, where: str, spec: str | None = None) -> FaultRule:
    """One rule from its fields (a file's entry, or a parsed flag); raises FaultError."""
    if not isinstance(item, dict):
        raise FaultError(f"{where}: a fault must be a JSON object or a string like 'tools/call=drop'")
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        raise FaultError(
            f"{where}: unknown field {unknown[0]!r}{_nearest(unknown[0], FIELDS)} (fields: {', '.join(FIELDS)})"
        )
    method = item.get("method")
    if not isinstance(method, str) or not method.strip():
        raise FaultError(f"{where}: 'method' must be a method name or pattern, e.g. 'tools/call'")
    method = method.strip()
    _check_method(method, where)
    tool = item.get("tool")
    if tool is not None and (not isinstance(tool, str) or not tool):
        raise FaultError(f"{where}: 'tool' must be a tool name or pattern")
    if tool is not None and not fnmatch.fnmatchcase("tools/call", method):
        raise FaultError(f"{where}: a tool name ({tool!r}) applies to tools/call only, not to {method!r}")
    action, arg = _action(item.get("action"), where)
    if action in REQUEST_ONLY and method.startswith("notifications/"):
        raise FaultError(
            f"{where}: {action} answers a request; {method!r} names notifications, which nobody answers"
        )
    p = item.get("p", 1.0)
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        raise FaultError(f"{where}: 'p' must be a number from 0 to 1, got {p!r}")
    seed = item.get("seed")
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 31)  # recorded with the session: repeatable
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise FaultError(f"{where}: 'seed' must be an integer, got {seed!r}")
    on = item.get("on")
    if on is None:
        on = "request" if action in REQUEST_ONLY else "response"
    elif on not in ("request", "response"):
        raise FaultError(f"{where}: 'on' must be request or response, got {on!r}")
    elif on == "response" and action in REQUEST_ONLY:
        raise FaultError(
            f"{where}: {action} answers a request in the peer's place; it cannot act on=response"
        )
    if spec is None:
        spec = f"{method}{':' + tool if tool else ''}={action}{'' if arg is None else f':{arg}'}"
    return FaultRule(method, action, tool, arg, float(p), seed, on, spec)


def _action(value: Any, where: str) -> tuple[str, int | None]:
    if not isinstance(value, str) or not value.strip():
        raise FaultError(f"{where}: 'action' must be one of {', '.join(_written(a) for a in ACTIONS)}")
    name, sep, arg = value.strip().partition(":")
    if name not in ACTIONS:
        raise FaultError(
            f"{where}: unknown action {name!r}{_nearest(name, ACTIONS)} "
            f"(actions: {', '.join(_written(a) for a in ACTIONS)})"
        )
    if name == "delay":
        if not sep or not arg.strip().isdigit() or int(arg) > MAX_DELAY_MS:
            raise FaultError(f"{where}: delay needs milliseconds from 0 to {MAX_DELAY_MS}, e.g. delay:500")
        return name, int(arg)
    if name == "error":
        try:
            code = int(arg)
        except ValueError:
            raise FaultError(f"{where}: error needs a JSON-RPC error code, e.g. error:-32603") from None
        if not -(1 << 53) < code < 1 << 53:
            raise FaultError(f"{where}: error code {code} is out of range")
        return name, code
    if sep:
        raise FaultError(f"{where}: {name} takes no argument (got {value!r})")
    return name, None


def _written(action: str) -> str:
    return {"delay": "delay:MS", "error": "error:CODE"}.get(action, action)


def _check_method(method: str, where: str) -> None:
    """Refuse a name that is no method of the protocol but close to one (a typo)."""
    if method in METHODS or _PATTERN_CHARS & set(method):
        return
    near = _nearest(method, sorted(METHODS), cutoff=0.75)
    if near:
        raise FaultError(f"{where}: unknown method {method!r}{near}")


def _nearest(word: str, choices: Sequence[str], cutoff: float = 0.6) -> str:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return f"; did you mean {found[0]!r}?" if found else ""
