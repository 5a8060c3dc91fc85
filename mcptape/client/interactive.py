"""One person's client session, for the web and terminal clients: ``call``'s core driven by hand.

:class:`Interactive` is the one thing both interactive faces drive. It holds a
:class:`~mcptape.client.session.CallSession` (the same relay, recording, negotiation and
state machine ``call`` uses; recorded as mode ``client``) and adds what a person needs:

- **operations** named by the front end (``op``): each runs in a task of its own, so a
  person can cancel it (the core then sends ``notifications/cancelled``), and its
  progress notifications carry the operation's name as their token;
- **questions**: a server request no rule answers (sampling, elicitation; in 2026-07-28
  an ``input_required`` round's input requests) waits for the person's answer. The
  handler is :func:`mcptape.client.handlers.asking_handler`: the same rules as ``call``
  first (from the command line, or set in the page), then the person, then ``call``'s
  decline when nobody is there to ask. ``roots/list`` is answered from the person's
  editable list;
- **events** for the front end, through one callback ``emit(name, data)``: ``state``,
  ``hello``, ``recording`` (the session's id, once its row exists), ``log``, ``progress``, ``notification``, ``list_changed``,
  ``resource_updated``, ``question``, ``answered``, ``traffic``.

Every event's data is plain JSON. Nothing here knows HTTP or widgets.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from mcptape.client.core import Reply, Timeouts, error_of
from mcptape.client.errors import CapabilityError, ClientError, ToolError, ValidationError
from mcptape.client.handlers import asking_handler
from mcptape.client.methods import Call, missing_capability, output_problem, perform
from mcptape.client.session import CallSession, SessionOptions, Target
from mcptape.wire.protocol import ELICITATION, ROOTS_LIST, SAMPLING

if TYPE_CHECKING:
    from mcptape.client.negotiate import ServerHello
    from mcptape.proxy.link import Link
    from mcptape.rules.rules import Rules

Emit = Callable[[str, dict[str, Any]], None]
# A person may take minutes to answer a sampling request; they cancel what they give up on.
PERSON_TIMEOUTS: Final = Timeouts(connect=30.0, request=600.0, request_max=3600.0)
# What a person can answer, so declared: servers (server-everything) offer tools by it.
CAPABILITIES: Final = {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": True}}
LISTS: Final = {
    "tools": "tools/list",
    "resources": "resources/list",
    "templates": "resources/templates/list",
    "prompts": "prompts/list",
}
LIST_KEYS: Final = {
    "tools": "tools",
    "resources": "resources",
    "templates": "resourceTemplates",
    "prompts": "prompts",
}
CHANGED: Final = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}
# The handshake belongs to the session; a page may not run it again.
REFUSED_METHODS: Final = frozenset({"initialize", "server/discover", "notifications/initialized"})
TRAFFIC_TEXT_MAX: Final = 4000


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


@dataclass
class Operation:
    id: str
    method: str
    task: asyncio.Task[Any]
    started: float


class Interactive:
    """See the module docstring."""

    def __init__(
        self,
        target: Target,
        emit: Emit,
        *,
        db: str | None = None,
        record: bool = True,
        rules: Rules | None = None,
        roots: list[dict[str, str]] | None = None,
        protocol_version: str | None = None,
        timeouts: Timeouts = PERSON_TIMEOUTS,
        upstream_opener: Callable[[Target], Awaitable[Link]] | None = None,
        traffic: bool = True,
    ) -> None:
        self.target = target
        self.emit = emit
        self.base_rules = rules  # from the command line
        self.page_rules: Rules | None = None  # set by the person
        self.ask = True  # False: what no rule answers is declined at once
        self.roots: list[dict[str, str]] = list(roots or [])
        self.questions: dict[str, Question] = {}
        self.ops: dict[str, Operation] = {}
        self.tools: dict[str, dict[str, Any]] = {}
        self._question_ids = itertools.count(1)
        handler = asking_handler(self.rules, self._ask, self._warn)
        options = SessionOptions(
            db=db,
            record=record,
            timeouts=timeouts,
            protocol_version=protocol_version,
            handler=self._observed(handler),
            capabilities=CAPABILITIES,
            on_state=lambda state, detail: self.emit("state", {"state": state, "detail": detail}),
            on_message=self._on_message,
            say=self._warn,
            mode="client",
            on_traffic=self._traffic if traffic else None,
            upstream_opener=upstream_opener,
        )
        self.session = CallSession(target, options)

    # -- the session ---------------------------------------------------------------------

    @property
    def state(self) -> str:
        return self.session.core.state

    @property
    def hello(self) -> ServerHello | None:
        return self.session.hello

    async def connect(self) -> dict[str, Any]:
        """Start or reach the server and negotiate; the server's info (raises ClientError)."""
        hello = await self.session.open()
        self._announcing = asyncio.ensure_future(self._announce_recording())
        info = hello.as_dict()
        info["recordedIn"] = self.session.where()
        info["sessionId"] = self.session_id
        self.emit("hello", info)
        return info

    async def _announce_recording(self) -> None:
        """``recording`` once the session's row exists (the store opens on a thread meanwhile)."""
        session = self.session.session
        if session is None or session.store is None:
            return
        with contextlib.suppress(Exception):
            await session.store.opened()
        if self.session_id is not None:
            self.emit("recording", {"sessionId": self.session_id, "recordedIn": self.session.where()})

    @property
    def session_id(self) -> str | None:
        """The recording's session id, once its row exists."""
        session = self.session.session
        store = session.store if session is not None else None
        return store.session_id if store is not None else None

    async def close(self) -> None:
        """Cancel what runs, decline what waits for the person, stop the server, write the recording."""
        announcing = getattr(self, "_announcing", None)
        if announcing is not None:
            announcing.cancel()
        for op in list(self.ops.values()):
            op.task.cancel()
        for question in list(self.questions.values()):
            if not question.future.done():
                question.future.set_result(_declined_on_close(question.method))
        with contextlib.suppress(Exception):
            await asyncio.gather(*(op.task for op in list(self.ops.values())), return_exceptions=True)
        await self.session.close()

    # -- rules, roots, questions ------------------------------------------------------------

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

    async def set_roots(self, roots: Any) -> list[dict[str, str]]:
        """The person's roots (``[{"uri", "name"?}]`` or ``"URI[=NAME]"`` strings); the server is told."""
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
                    spec = item["uri"] + (f"={name}" if isinstance(name, str) and name else "")
                    out.append(parse_root(spec))
                else:
                    raise RuleError(f"roots: {item!r} is not a root")
        except RuleError as exc:
            raise InteractiveError(str(exc)) from None
        self.roots = out
        if self.state == "connected":
            await self.session.core.notify("notifications/roots/list_changed")
        return out

    def _ask(self, method: str, params: Any, tool: str | None) -> Awaitable[Reply] | None:
        if method == ROOTS_LIST:
            return _ready(Reply(result={"roots": list(self.roots)}, by="person"))
        if not self.ask:
            return None
        question = Question(
            f"q{next(self._question_ids)}", method, params, tool, asyncio.get_running_loop().create_future()
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

    def _observed(self, handler: Any) -> Any:
        """``handler`` that also tells the front end who answered what."""

        def handle(method: str, params: Any, tool: str | None) -> Reply | Awaitable[Reply]:
            reply = handler(method, params, tool)
            if isinstance(reply, Reply):
                self._answered(method, reply)
                return reply

            async def later() -> Reply:
                done = await reply
                self._answered(method, done)
                return done

            return later()

        return handle

    def _answered(self, method: str, reply: Reply) -> None:
        data: dict[str, Any] = {"method": method, "by": reply.by}
        data["error" if reply.error is not None else "result"] = (
            reply.error if reply.error is not None else reply.result
        )
        self.emit("answered", data)

    def _warn(self, text: str) -> None:
        self.emit("notice", {"text": text})

    # -- what the server says ---------------------------------------------------------------

    def _on_message(self, kind: str, body: Any) -> None:
        if kind != "notification" or not isinstance(body, dict):
            return  # server requests are told by _observed, rounds included
        method = body.get("method")
        given = body.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        if method == "notifications/message":
            self.emit("log", params)
        elif method == "notifications/progress":
            self.emit(
                "progress",
                {
                    "op": str(params.get("progressToken")),
                    "progress": params.get("progress"),
                    "total": params.get("total"),
                    "message": params.get("message"),
                },
            )
        elif method in CHANGED:
            self.emit("list_changed", {"kind": CHANGED[method]})
        elif method == "notifications/resources/updated":
            self.emit("resource_updated", {"uri": params.get("uri")})
        else:
            self.emit("notification", {"method": method, "params": params})

    def _traffic(self, direction: str, data: bytes) -> None:
        text = data[:TRAFFIC_TEXT_MAX].decode("utf-8", "replace")
        self.emit(
            "traffic",
            {"dir": direction, "size": len(data), "text": text, "cut": len(data) > TRAFFIC_TEXT_MAX},
        )

    # -- operations -------------------------------------------------------------------------

    async def run(self, op_id: str, method: str, params: Any = None) -> dict[str, Any]:
        """Run one method as operation ``op_id``; its outcome as JSON (never raises for the server's
        answers: an error or a tool error is an outcome too)."""
        if op_id in self.ops:
            raise InteractiveError(f"operation {op_id!r} is already running")
        if method in REFUSED_METHODS or not isinstance(method, str) or method.startswith("notifications/"):
            raise InteractiveError(
                f"{method!r} is not something to send by hand (the session negotiates itself)"
            )
        if params is not None and not isinstance(params, dict):
            raise InteractiveError("params must be a JSON object")
        started = time.monotonic()
        task = asyncio.ensure_future(self._perform(op_id, method, params))
        self.ops[op_id] = Operation(op_id, method, task, started)
        outcome: dict[str, Any] = {"op": op_id, "method": method}
        try:
            outcome.update(await asyncio.shield(task))
        except asyncio.CancelledError:
            if not task.done():  # the caller went away (a page closed): the operation goes too
                task.cancel()
                raise
            outcome["status"] = "cancelled"
        except ClientError as exc:
            outcome["status"] = "error"
            outcome["error"] = exc.as_dict()
        except Exception as exc:  # anything unexpected is still an outcome the person sees
            outcome["status"] = "error"
            outcome["error"] = error_of(exc).as_dict()
        finally:
            self.ops.pop(op_id, None)
        outcome["ms"] = round((time.monotonic() - started) * 1000, 2)
        return outcome

    def cancel(self, op_id: str) -> bool:
        """Cancel a running operation; False when there is none by that name."""
        op = self.ops.get(op_id)
        if op is None or op.task.done():
            return False
        op.task.cancel()
        return True

    async def _perform(self, op_id: str, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        hello = self.session.hello
        if hello is None:
            raise InteractiveError("not connected")
        missing = missing_capability(method, hello.capabilities)
        if missing is not None:
            raise CapabilityError(
                f"the server does not advertise the {missing!r} capability that {method} needs"
            )
        p = dict(params or {})
        if method == "tools/call":
            return await self._call_tool(op_id, p)
        if method in ("resources/read", "prompts/get"):
            call = Call(method, uri=p.pop("uri", None), prompt_name=p.pop("name", None))
            call.prompt_args = p.pop("arguments", None) or {}
            call.params = p or None
            return {"status": "ok", "result": await perform(self.session, call)}
        result = await self.session.core.request(method, params, progress_token=op_id)
        if method == LISTS["tools"] and isinstance(result, dict):
            self._remember_tools(result.get("tools"))
        return {"status": "ok", "result": result}

    async def _call_tool(self, op_id: str, p: dict[str, Any]) -> dict[str, Any]:
        name = p.pop("name", None)
        if not isinstance(name, str) or not name:
            raise ValidationError("tools/call needs the tool's name")
        arguments = p.pop("arguments", None) or {}
        if not isinstance(arguments, dict):
            raise ValidationError("the tool's arguments must be a JSON object")
        call = Call("tools/call", params=p or None, tool_name=name, tool_args=arguments, progress_token=op_id)
        out: dict[str, Any] = {"status": "ok"}
        try:
            out["result"] = await perform(self.session, call)
        except ToolError as exc:
            out["status"] = "tool-error"
            out["result"] = exc.result
        tool = self.tools.get(name)
        if tool is not None and isinstance(tool.get("outputSchema"), dict):
            problem = output_problem(out["result"], tool)
            out["outputCheck"] = {
                "ok": problem is None,
                "message": problem or "structuredContent matches outputSchema",
            }
        return out

    async def list_page(self, kind: str, cursor: str | None = None) -> dict[str, Any]:
        """One page of tools, resources, templates or prompts: ``{"items", "nextCursor"}``."""
        method = LISTS.get(kind)
        if method is None:
            raise InteractiveError(f"unknown list {kind!r}; known: {', '.join(LISTS)}")
        hello = self.session.hello
        if hello is None:
            raise InteractiveError("not connected")
        if missing_capability(method, hello.capabilities) is not None:
            return {"items": [], "forms": [], "nextCursor": None, "unsupported": True}
        from mcptape.client.errors import ServerProtocolError

        try:
            page = await self.session.core.request(method, {"cursor": cursor} if cursor else None)
        except ServerProtocolError as exc:
            if exc.code == -32601 and kind == "templates":  # resources without templates
                return {"items": [], "forms": [], "nextCursor": None, "unsupported": True}
            raise
        items = page.get(LIST_KEYS[kind]) if isinstance(page, dict) else None
        if not isinstance(items, list):
            raise InteractiveError(f"{method} answered without a {LIST_KEYS[kind]!r} list")
        if kind == "tools":
            self._remember_tools(items)
        cursor_out = page.get("nextCursor")
        return {
            "items": items,
            "nextCursor": cursor_out if isinstance(cursor_out, str) and cursor_out else None,
            "forms": _forms(kind, items),
        }

    def _remember_tools(self, items: Any) -> None:
        for tool in items if isinstance(items, list) else []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self.tools[tool["name"]] = tool


def _forms(kind: str, items: list[Any]) -> list[list[dict[str, Any]]]:
    """Each item's form, in the order of ``items``: a tool's arguments (its ``inputSchema``), a
    prompt's arguments, a resource template's variables; resources have none."""
    from mcptape.client.schemaform import form_of, prompt_form, template_form

    out: list[list[dict[str, Any]]] = []
    for item in items:
        item = item if isinstance(item, dict) else {}
        if kind == "tools":
            out.append(form_of(item.get("inputSchema")))
        elif kind == "prompts":
            out.append(prompt_form(item.get("arguments")))
        elif kind == "templates":
            out.append(template_form(item.get("uriTemplate")))
        else:
            out.append([])
    return out


def _ready(reply: Reply) -> Awaitable[Reply]:
    future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
    future.set_result(reply)
    return future


def _declined_on_close(method: str) -> Reply:
    from mcptape.client.handlers import decline

    reply = decline(method)
    reply.by = "closed"
    return reply
