"""One person's client session, for the web and terminal clients: ``call``'s core driven by hand.

:class:`Interactive` is the one thing both interactive faces drive. It holds a
:class:`~mcptape.client.session.CallSession` (the same relay, recording, negotiation and
state machine ``call`` uses; recorded as mode ``client``) and adds what a person needs:

- **operations** named by the front end (``op``): each runs in a task of its own, so a
  person can cancel it (the core then sends ``notifications/cancelled``), and its
  progress notifications carry the operation's name as their token;
- **the person** (:class:`~mcptape.client.asking.Person`, ``interactive.person``): a
  server request no rule answers (sampling, elicitation; in 2026-07-28 an
  ``input_required`` round's input requests) waits for the person's answer; the rules
  they set; the roots they keep;
- **events** for the front end, through one callback ``emit(name, data)``: ``state``,
  ``hello``, ``recording`` (the session's id, once its row exists), ``log``,
  ``progress``, ``notification``, ``list_changed``, ``resource_updated``, ``question``,
  ``answered``, ``notice``, ``traffic``.

Every event's data is plain JSON. Nothing here knows HTTP or widgets.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from mcptape.client.asking import Emit, InteractiveError, Person, parse_roots
from mcptape.client.core import Timeouts, error_of
from mcptape.client.errors import CapabilityError, ClientError, ToolError, ValidationError
from mcptape.client.methods import Call, missing_capability, output_problem, perform
from mcptape.client.session import CallSession, SessionOptions, Target
from mcptape.wire.protocol import HELLO_METHODS, INITIALIZED, PROGRESS

if TYPE_CHECKING:
    from mcptape.client.negotiate import ServerHello
    from mcptape.proxy.link import Link
    from mcptape.rules.rules import Rules

__all__ = ["Interactive", "InteractiveError"]
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
REFUSED_METHODS: Final = frozenset({*HELLO_METHODS, INITIALIZED})
TRAFFIC_TEXT_MAX: Final = 4000


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
        # Through self.emit as it is then: a front end may take the events over later.
        self.person = Person(lambda name, data: self.emit(name, data), rules, roots)
        self.ops: dict[str, Operation] = {}
        self.tools: dict[str, dict[str, Any]] = {}
        options = SessionOptions(
            db=db,
            record=record,
            timeouts=timeouts,
            protocol_version=protocol_version,
            handler=self.person.handler(),
            capabilities=CAPABILITIES,
            on_state=lambda state, detail: self.emit("state", {"state": state, "detail": detail}),
            on_message=self._on_message,
            say=lambda text: self.emit("notice", {"text": text}),
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
        self.person.gone()
        with contextlib.suppress(Exception):
            await asyncio.gather(*(op.task for op in list(self.ops.values())), return_exceptions=True)
        await self.session.close()

    async def set_roots(self, roots: Any) -> list[dict[str, str]]:
        """The person's roots (see :func:`mcptape.client.asking.parse_roots`); the server is told."""
        self.person.roots = parse_roots(roots)
        if self.state == "connected":
            await self.session.core.notify("notifications/roots/list_changed")
        return self.person.roots

    # -- what the server says ---------------------------------------------------------------

    def _on_message(self, kind: str, body: Any) -> None:
        if kind != "notification" or not isinstance(body, dict):
            return  # server requests are told by _observed, rounds included
        method = body.get("method")
        given = body.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        if method == "notifications/message":
            self.emit("log", params)
        elif method == PROGRESS:
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
