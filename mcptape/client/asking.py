"""The person at an interactive client: the rules they set, their roots, the questions waiting for them.

:class:`Person` answers the server's requests for :class:`~mcptape.client.interactive.Interactive`
through :func:`mcptape.client.handlers.asking_handler`: the rules first (the person's, then
the command line's: the same rules as ``call`` and the proxy), then the person, then
``call``'s decline when nobody is asked (``ask`` off). ``roots/list`` is answered from the
person's list. Each request the person must answer is a :class:`Question` told to the front
end (``question``), and each answer, whoever gave it, is told too (``answered``).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcptape.client.core import Reply, ServerRequestHandler
from mcptape.client.handlers import asking_handler, decline
from mcptape.wire.protocol import ELICITATION, ROOTS_LIST, SAMPLING

if TYPE_CHECKING:
    from mcptape.rules.rules import Rules

Emit = Callable[[str, dict[str, Any]], None]


class InteractiveError(ValueError):
    """A person's request the session cannot run as given (one line, shown as it is)."""


@dataclass
class Question:
    """A server request waiting for the person."""

    id: str
    method: str
    params: Any
    tool: str | None
    future: asyncio.Future[Reply]
    asked: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        """What a front end needs to ask: an elicitation's form, a suggested sampling answer."""
        out: dict[str, Any] = {"id": self.id, "method": self.method, "params": self.params, "tool": self.tool}
        params = self.params if isinstance(self.params, dict) else {}
        if self.method == ELICITATION:
            from mcptape.client.schemaform import form_of

            out["mode"] = "url" if params.get("mode") == "url" else "form"
            out["form"] = form_of(params.get("requestedSchema"))
        elif self.method == SAMPLING:
            from mcptape.rules.rules import auto_result

            out["suggested"] = auto_result(SAMPLING, params)
        return out


def parse_roots(roots: Any) -> list[dict[str, str]]:
    """Roots as a person gives them (``[{"uri", "name"?}]`` or ``"URI[=NAME]"`` strings), checked as
    ``--roots`` checks them; InteractiveError naming the bad one."""
    from mcptape.rules.rules import RuleError, parse_root

    if not isinstance(roots, list):
        raise InteractiveError("roots: expected a list")
    out: list[dict[str, str]] = []
    try:
        for item in roots:
            if isinstance(item, str):
                out.append(parse_root(item))
            elif isinstance(item, dict) and isinstance(item.get("uri"), str):
                name = item.get("name")
                out.append(parse_root(item["uri"] + (f"={name}" if isinstance(name, str) and name else "")))
            else:
                raise RuleError(f"roots: {item!r} is not a root")
    except RuleError as exc:
        raise InteractiveError(str(exc)) from None
    return out


class Person:
    """See the module docstring; ``emit`` tells the front end."""

    def __init__(
        self, emit: Emit, rules: Rules | None = None, roots: list[dict[str, str]] | None = None
    ) -> None:
        self.emit = emit
        self.base_rules = rules  # from the command line
        self.page_rules: Rules | None = None  # set by the person
        self.ask = True  # False: what no rule answers is declined at once
        self.roots: list[dict[str, str]] = list(roots or [])
        self.questions: dict[str, Question] = {}
        self._ids = itertools.count(1)

    def handler(self) -> ServerRequestHandler:
        """The session's handler for the server's requests (every answer told to the front end)."""
        inner = asking_handler(self.rules, self._ask, lambda text: self.emit("notice", {"text": text}))

        def handle(method: str, params: Any, tool: str | None) -> Reply | Awaitable[Reply]:
            reply = inner(method, params, tool)
            if isinstance(reply, Reply):
                self._answered(method, reply)
                return reply

            async def later() -> Reply:
                done = await reply
                self._answered(method, done)
                return done

            return later()

        return handle

    def rules(self) -> Rules | None:
        """The rules in force: the person's first, then the command line's."""
        from mcptape.rules.rules import Rules

        page = self.page_rules.rules if self.page_rules else []
        base = self.base_rules.rules if self.base_rules else []
        return Rules(page + base) if page or base else None

    def set_rules(self, sampling: str | None, elicitation: str | None, rules: Any = None) -> None:
        """Canned answers chosen by the person: as ``--handle-sampling``/``--handle-elicitation``
        take them (``auto``, ``reject``, ``decline``, ``cancel``, a JSON template; empty: ask),
        and rules in the ``--inject`` file's format. InteractiveError when one is unusable."""
        from mcptape.rules.rules import RuleError, Rules, parse_rule

        try:
            built = Rules.from_options(
                handle_sampling=sampling or None, handle_elicitation=elicitation or None
            )
            if rules:
                if not isinstance(rules, list):
                    raise RuleError("rules: expected a list of rules")
                built.rules[:0] = [parse_rule(item, f"rule {i}") for i, item in enumerate(rules, 1)]
        except RuleError as exc:
            raise InteractiveError(str(exc)) from None
        self.page_rules = built

    def _ask(self, method: str, params: Any, tool: str | None) -> Awaitable[Reply] | None:
        if method == ROOTS_LIST:
            return _ready(Reply(result={"roots": list(self.roots)}, by="person"))
        if not self.ask:
            return None
        question = Question(
            f"q{next(self._ids)}", method, params, tool, asyncio.get_running_loop().create_future()
        )
        self.questions[question.id] = question
        self.emit("question", question.as_dict())
        return self._wait(question)

    async def _wait(self, question: Question) -> Reply:
        try:
            return await question.future
        finally:
            self.questions.pop(question.id, None)

    def answer(self, question_id: str, body: Any) -> None:
        """The person's answer: ``{"result": …}`` or ``{"error": {"code", "message"}}``, checked as a
        rule's template is. InteractiveError when there is no such question or the answer is invalid."""
        from mcptape.rules.rules import RuleError, check_error, check_result

        question = self.questions.get(question_id)
        if question is None or question.future.done():
            raise InteractiveError(
                f"no question {question_id!r} waits for an answer (answered, or the server gave up)"
            )
        if not isinstance(body, dict) or ("result" in body) == ("error" in body):
            raise InteractiveError('an answer is {"result": …} or {"error": {"code": …, "message": …}}')
        try:
            if "error" in body:
                reply = Reply(error=check_error(body["error"], "the answer"), by="person")
            else:
                check_result(question.method, body["result"], "the answer")
                reply = Reply(result=body["result"], by="person")
        except RuleError as exc:
            raise InteractiveError(str(exc)) from None
        question.future.set_result(reply)

    def gone(self) -> None:
        """The session ends: every question still waiting is declined (by ``closed``)."""
        for question in list(self.questions.values()):
            if not question.future.done():
                reply = decline(question.method)
                reply.by = "closed"
                question.future.set_result(reply)

    def _answered(self, method: str, reply: Reply) -> None:
        data: dict[str, Any] = {"method": method, "by": reply.by}
        if reply.error is not None:
            data["error"] = reply.error
        else:
            data["result"] = reply.result
        self.emit("answered", data)


def _ready(reply: Reply) -> Awaitable[Reply]:
    future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
    future.set_result(reply)
    return future
