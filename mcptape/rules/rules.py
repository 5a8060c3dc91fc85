"""Injection rules: answers mcptape gives to server-initiated requests instead of the client.

Pure: the only I/O is reading a rules file. One implementation serves the proxy's
injector addon (:mod:`mcptape.proxy.addons.injector`) and the ``call`` client's handlers.

Rules come from flags and from a rules file (``--inject FILE``)::

    {"rules": [
      {"method": "sampling/createMessage", "tool": "summarise", "contains": "weather",
       "result": {"role": "assistant", "content": {"type": "text", "text": "Sunny"},
                  "model": "canned"}},
      {"method": "elicitation/create", "regex": "(?i)confirm", "result": "auto"},
      {"method": "sampling/createMessage", "error": {"code": -1, "message": "no"}},
      {"method": "roots/list", "pass": true}
    ]}

(a bare list of rules is accepted as well). A rule matches on ``method`` (one name or
a list; ``"*"`` for any), and optionally on ``tool`` (the name of the client's tool
call in flight; shell-style wildcards), ``contains`` (a substring of the request's
JSON text) and ``regex`` (a Python regular expression searched in that text). It gives
exactly one of ``result`` (an object, or ``"auto"``), ``error`` (a JSON-RPC error
object) or ``"pass": true`` (the client answers). File rules are tried in order
before the flags; the first match decides.

Templates are checked when read: a sampling result needs ``role``, ``content`` and
``model``; an elicitation result needs ``action`` (and ``content`` when it accepts);
a roots result needs ``roots`` with a ``uri`` each (:mod:`mcptape.rules.templates` holds
those checks and the ``auto`` answers).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from mcptape.rules.templates import (
    ELICITATION,
    ROOTS,
    SAMPLING,
    SAMPLING_REJECTED,
    auto_form,
    auto_result,
    error_problem,
    result_problem,
)
from mcptape.wire.protocol import PING, SERVER_REQUESTS, TASK_METHODS

__all__ = [
    "Answer",
    "Rule",
    "RuleContext",
    "RuleError",
    "Rules",
    "auto_form",
    "auto_result",
    "check_error",
    "check_result",
    "parse_root",
    "parse_rule",
]


class RuleError(ValueError):
    """A rule or template is unusable; the message is one line naming the flag or file."""


@dataclass
class RuleContext:
    """What a rule may match besides the method: the related tool call, the request's text."""

    tool_name: str | None = None
    request_text: str = ""


@dataclass
class Answer:
    """What a rule decided: a result, a JSON-RPC error ``{code, message, data?}``, or pass."""

    kind: Literal["result", "error", "pass"]
    result: Any = None
    error: dict[str, Any] | None = None


# A rule's outcome: "auto" results are built from the request's params.
Outcome = Callable[[Any], Answer]


@dataclass
class Rule:
    """One rule: what it matches and what it answers."""

    methods: tuple[str, ...]
    outcome: Outcome
    answers: bool  # False for a "pass" rule (it serves no capability)
    tool: str | None = None
    contains: str | None = None
    regex: re.Pattern[str] | None = None

    def matches(self, method: str, text: Callable[[], str], context: RuleContext) -> bool:
        """Whether the rule applies to this request."""
        if "*" not in self.methods and method not in self.methods:
            return False
        if self.tool is not None and (
            context.tool_name is None or not fnmatch.fnmatchcase(context.tool_name, self.tool)
        ):
            return False
        if self.contains is not None and self.contains not in text():
            return False
        return not (self.regex is not None and self.regex.search(text()) is None)


@dataclass
class Rules:
    """An ordered list of rules; ``bool(rules)`` is False when there is none."""

    rules: list[Rule] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.rules)

    @classmethod
    def from_options(
        cls,
        *,
        handle_sampling: str | None = None,
        handle_elicitation: str | None = None,
        roots: Sequence[str] = (),
        inject_file: str | None = None,
    ) -> Rules:
        """Build rules from the command-line options; raises RuleError on anything unusable."""
        rules: list[Rule] = []
        if inject_file is not None:
            rules.extend(_read_file(inject_file))
        if handle_sampling is not None:
            rules.append(_flag_rule("--handle-sampling", SAMPLING, handle_sampling))
        if handle_elicitation is not None:
            rules.append(_flag_rule("--handle-elicitation", ELICITATION, handle_elicitation))
        if roots:
            listed = {"roots": [parse_root(spec) for spec in roots]}
            rules.append(Rule((ROOTS,), _fixed(listed), True))
        return cls(rules)

    def answer(self, method: str, params: Any, context: RuleContext | None = None) -> Answer | None:
        """The answer of the first rule matching this request; None when the client should answer."""
        ctx = context or RuleContext()
        cache: list[str] = []

        def text() -> str:
            if not cache:
                cache.append(ctx.request_text or _dumps({"method": method, "params": params}))
            return cache[0]

        for rule in self.rules:
            if rule.matches(method, text, ctx):
                answer = rule.outcome(params)
                return None if answer.kind == "pass" else answer
        return None

    def answer_input_requests(
        self, input_requests: dict[str, Any], context: RuleContext | None = None
    ) -> dict[str, Any] | None:
        """``inputResponses`` for a 2026-07-28 ``input_required`` result's ``inputRequests``.

        Each entry is ``{"method", "params"}``. Returns a result per key when rules
        answer every one with a result; None otherwise (an error cannot travel in
        ``inputResponses``, so the client must see the round).
        """
        if not isinstance(input_requests, dict) or not input_requests:
            return None
        responses = self.answer_some_input_requests(input_requests, context)
        return responses if len(responses) == len(input_requests) else None

    def answer_some_input_requests(
        self, input_requests: dict[str, Any], context: RuleContext | None = None
    ) -> dict[str, Any]:
        """The ``inputResponses`` the rules can give (results only), for the keys they answer."""
        if not isinstance(input_requests, dict):
            return {}
        ctx = context or RuleContext()
        responses: dict[str, Any] = {}
        for key, request in input_requests.items():
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                continue
            entry_ctx = RuleContext(ctx.tool_name, _dumps(request))
            answer = self.answer(request["method"], request.get("params"), entry_ctx)
            if answer is not None and answer.kind == "result":
                responses[key] = answer.result
        return responses

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities these rules can serve (to declare them in a handshake)."""
        methods = {m for rule in self.rules if rule.answers for m in rule.methods}
        caps: dict[str, Any] = {}
        if SAMPLING in methods or "*" in methods:
            caps["sampling"] = {}
        if ELICITATION in methods or "*" in methods:
            caps["elicitation"] = {}
        if ROOTS in methods or "*" in methods:
            caps["roots"] = {}
        return caps


# -- answers ------------------------------------------------------------------------


def _fixed(result: Any) -> Outcome:
    return lambda params: Answer("result", result=result)


def _error(error: dict[str, Any]) -> Outcome:
    return lambda params: Answer("error", error=error)


def _pass(params: Any) -> Answer:
    return Answer("pass")


def _auto(method: str) -> Outcome:
    return lambda params: Answer("result", result=auto_result(method, params))


# -- validation ------------------------------------------------------------------------


def check_result(method: str, result: Any, where: str) -> None:
    """Raise RuleError when ``result`` is not a valid result for ``method``."""
    problem = result_problem(method, result)
    if problem is not None:
        raise RuleError(f"{where}: {problem}")


def check_error(error: Any, where: str) -> dict[str, Any]:
    """Raise RuleError unless ``error`` is a JSON-RPC error object; return it."""
    problem = error_problem(error)
    if problem is not None:
        raise RuleError(f"{where}: {problem}")
    assert isinstance(error, dict)
    return error


# -- flags and files ----------------------------------------------------------------------


KEYWORDS: dict[str, dict[str, Outcome]] = {
    SAMPLING: {"auto": _auto(SAMPLING), "reject": _error(SAMPLING_REJECTED)},
    ELICITATION: {
        "auto": _auto(ELICITATION),
        "decline": _fixed({"action": "decline"}),
        "cancel": _fixed({"action": "cancel"}),
    },
}


def _flag_rule(flag: str, method: str, value: str) -> Rule:
    keywords = KEYWORDS[method]
    if value.strip() in keywords:
        return Rule((method,), keywords[value.strip()], True)
    try:
        result = json.loads(value)
    except ValueError:
        names = ", ".join(keywords)
        raise RuleError(f"{flag}: expected a JSON object or one of {names}, got {value[:60]!r}") from None
    check_result(method, result, flag)
    return Rule((method,), _fixed(result), True)


def parse_root(spec: str) -> dict[str, str]:
    uri, sep, name = spec.partition("=")
    if not uri:
        raise RuleError(f"--roots: {spec!r} has no URI (expected URI or URI=NAME)")
    if uri.startswith("/"):
        uri = Path(uri).as_uri()
    elif not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", uri):
        raise RuleError(f"--roots: {uri!r} is not a URI (expected e.g. file:///path, or an absolute path)")
    return {"uri": uri, "name": name} if sep and name else {"uri": uri}


def _read_file(path: str) -> list[Rule]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RuleError(f"--inject {path}: cannot read the rules file: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RuleError(f"--inject {path}: not valid JSON: {exc}") from None
    if isinstance(data, dict):
        data = data.get("rules")
    if not isinstance(data, list):
        raise RuleError(f"--inject {path}: expected a list of rules, or an object with a 'rules' list")
    return [parse_rule(item, f"--inject {path}: rule {i}") for i, item in enumerate(data, 1)]


FIELDS = {"method", "tool", "contains", "regex", "result", "error", "pass", "comment"}


def parse_rule(item: Any, where: str) -> Rule:
    """One rule of a rules file (see the module docstring); raises RuleError."""
    if not isinstance(item, dict):
        raise RuleError(f"{where}: a rule must be a JSON object")
    unknown = sorted(set(item) - FIELDS)
    if unknown:
        raise RuleError(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(sorted(FIELDS))})")
    method = item.get("method")
    if method is None:
        raise RuleError(f"{where}: the rule has no 'method' field")
    methods = (method,) if isinstance(method, str) else method
    if not isinstance(methods, list | tuple) or not methods or not all(isinstance(m, str) for m in methods):
        raise RuleError(f"{where}: 'method' must be a method name or a list of them")
    for name in methods:
        check_method(name, where)
    for name in ("tool", "contains", "regex"):
        if name in item and not isinstance(item[name], str):
            raise RuleError(f"{where}: {name!r} must be a string")
    regex = None
    if "regex" in item:
        try:
            regex = re.compile(item["regex"])
        except re.error as exc:
            raise RuleError(f"{where}: bad 'regex': {exc}") from None
    given = [k for k in ("result", "error", "pass") if k in item]
    if len(given) != 1:
        raise RuleError(f"{where}: the rule needs exactly one of 'result', 'error' or 'pass'")
    outcome: Outcome
    answers = True
    if given[0] == "pass":
        if item["pass"] is not True:
            raise RuleError(f"{where}: 'pass' must be true")
        outcome, answers = _pass, False
    elif given[0] == "error":
        outcome = _error(check_error(item["error"], where))
    elif item["result"] == "auto":
        if len(methods) != 1 or methods[0] == "*":
            raise RuleError(f"{where}: 'result': 'auto' needs exactly one method")
        outcome = _auto(methods[0])
    else:
        for m in methods:
            check_result(m, item["result"], where)
        outcome = _fixed(item["result"])
    return Rule(tuple(methods), outcome, answers, item.get("tool"), item.get("contains"), regex)


# What a server may ask a client, so what a rule can answer: a misspelt method would match
# nothing, silently, and the client would be asked after all.
ANSWERABLE: Final = frozenset({*SERVER_REQUESTS, PING, *TASK_METHODS})


def check_method(method: str, where: str) -> None:
    """Raise RuleError when ``method`` is no request a server sends a client (``*`` is any)."""
    if method == "*" or method in ANSWERABLE:
        return
    import difflib

    near = difflib.get_close_matches(method, sorted(ANSWERABLE), n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}? " if near else ""
    known = ", ".join(sorted(ANSWERABLE))
    raise RuleError(
        f"{where}: {method!r} is not a request a server sends a client: {hint}(rules answer {known}, or *)"
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
