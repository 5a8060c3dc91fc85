"""The MCP methods ``call`` runs: parameters from flags or a script step, capability gating,
pagination to the end, tool argument coercion, tool errors, output schemas, tasks.

:class:`Call` says what to run; :func:`perform` runs it on a connected
:class:`~mcptape.client.session.CallSession` and returns the result, or raises a
:class:`~mcptape.client.errors.ClientError`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcptape.client.coerce import coerce_arguments
from mcptape.client.errors import (
    CapabilityError,
    ProtocolError,
    ServerProtocolError,
    ToolError,
    ValidationError,
)
from mcptape.client.handlers import request_with_input

if TYPE_CHECKING:
    from mcptape.client.session import CallSession

# list method -> the key of its items
LISTS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
    "tasks/list": "tasks",
}
# method -> the server capability path it needs
CAPABILITY = {
    "tools/list": ("tools",),
    "tools/call": ("tools",),
    "resources/list": ("resources",),
    "resources/read": ("resources",),
    "resources/templates/list": ("resources",),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts",),
    "prompts/get": ("prompts",),
    "completion/complete": ("completions",),
    "logging/setLevel": ("logging",),
    "tasks/list": ("tasks",),
    "tasks/get": ("tasks",),
    "tasks/result": ("tasks",),
    "tasks/cancel": ("tasks",),
}
LOCAL = {"server/info", "discover"}
TERMINAL = {"completed", "failed", "cancelled"}
METHOD_NOT_FOUND = -32601


@dataclass
class Call:
    """One method to run and its inputs (flags, or a script step's fields)."""

    method: str
    params: dict[str, Any] | None = None
    tool_name: str | None = None
    tool_args: dict[str, Any] = field(default_factory=dict)
    tool_arg_pairs: list[tuple[str, str]] = field(default_factory=list)
    prompt_name: str | None = None
    prompt_args: dict[str, Any] = field(default_factory=dict)
    uri: str | None = None
    cursor: str | None = None
    level: str | None = None
    task_id: str | None = None
    ref: str | None = None
    argument_name: str | None = None
    argument_value: str | None = None
    run_as_task: bool = False
    poll: bool = False
    poll_interval: float = 1.0
    fail_on_error: bool = False
    validate_output: bool = False
    progress_token: str | int | None = None  # a front end's name for the operation (default: the id)


def missing_capability(method: str, capabilities: dict[str, Any]) -> str | None:
    """The capability ``method`` needs that ``capabilities`` lacks (dotted), or None."""
    path = CAPABILITY.get(method)
    if path is None:
        return None
    node: Any = capabilities
    for part in path:
        if not isinstance(node, dict) or part not in node or node[part] in (None, False):
            return ".".join(path)
        node = node[part]
    return None


def _require(value: str | None, flag: str, method: str) -> str:
    if not value:
        raise ValidationError(f"{method} needs {flag}")
    return value


def build_params(call: Call) -> dict[str, Any] | None:
    """The request's params from the call's inputs; ``--params`` is merged over them."""
    m = call.method
    params: dict[str, Any] = {}
    if m == "tools/call":
        params = {"name": _require(call.tool_name, "--tool-name", m), "arguments": dict(call.tool_args)}
    elif m in ("resources/read", "resources/subscribe", "resources/unsubscribe"):
        params = {"uri": _require(call.uri, "--uri", m)}
    elif m == "prompts/get":
        params = {"name": _require(call.prompt_name, "--prompt-name", m)}
        if call.prompt_args:
            params["arguments"] = {
                k: v if isinstance(v, str) else str(v) for k, v in call.prompt_args.items()
            }
    elif m == "completion/complete":
        ref = _require(call.ref, "--completion-ref", m)
        name = ref.partition("/")[2].partition("/")[2]
        if ref.startswith("ref/prompt/") and name:
            ref_obj = {"type": "ref/prompt", "name": name}
        elif ref.startswith("ref/resource/") and name:
            ref_obj = {"type": "ref/resource", "uri": name}
        else:
            raise ValidationError(f"--completion-ref {ref!r}: expected ref/prompt/NAME or ref/resource/URI")
        params = {
            "ref": ref_obj,
            "argument": {
                "name": _require(call.argument_name, "--argument-name", m),
                "value": call.argument_value or "",
            },
        }
    elif m == "logging/setLevel":
        params = {"level": _require(call.level, "--level", m)}
    elif m in ("tasks/get", "tasks/result", "tasks/cancel"):
        params = {"taskId": _require(call.task_id, "--task-id", m)}
    if m in LISTS and call.cursor is not None:
        params["cursor"] = call.cursor
    if call.params:
        params.update(call.params)
    if call.run_as_task:
        if m != "tools/call":
            raise ValidationError("--run-as-task works with tools/call only")
        params.setdefault("task", {})
    return params or None


async def list_all(session: CallSession, method: str, params: dict[str, Any] | None) -> Any:
    """A list method's result with every page: items concatenated, no ``nextCursor``."""
    key = LISTS[method]
    page = await session.core.request(method, params)
    if params and "cursor" in params:
        return page
    items: list[Any] = []
    seen: set[str] = set()
    while True:
        if not isinstance(page, dict) or not isinstance(page.get(key), list):
            raise ProtocolError(f"{method} answered without a {key!r} list")
        items.extend(page[key])
        cursor = page.get("nextCursor")
        if not cursor:
            break
        if cursor in seen:
            raise ProtocolError(f"{method}: the server repeated cursor {cursor!r}")
        seen.add(cursor)
        page = await session.core.request(method, {**(params or {}), "cursor": cursor})
    out = {k: v for k, v in page.items() if k != "nextCursor"}
    out[key] = items
    return out


async def find_tool(session: CallSession, name: str) -> dict[str, Any]:
    """The tool's definition from ``tools/list`` (every page); a ValidationError naming what is there."""
    listed = await list_all(session, "tools/list", None)
    names = []
    for tool in listed["tools"]:
        if isinstance(tool, dict) and tool.get("name") == name:
            return tool
        if isinstance(tool, dict) and isinstance(tool.get("name"), str):
            names.append(tool["name"])
    raise ValidationError(unknown_tool(name, names))


def unknown_tool(name: str, names: list[str], shown: int = 10) -> str:
    """Why ``name`` is not a tool of the server: what it lists, the nearest name, and why it may lack one."""
    import difflib

    if not names:
        return f"the server has no tool named {name!r}: it lists no tools"
    listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
    near = difflib.get_close_matches(name, names, n=1)
    if near:
        return f"the server has no tool named {name!r} (it lists {listed}); did you mean {near[0]!r}?"
    # server-everything, for one, lists trigger-sampling-request only to a client that can sample.
    return (
        f"the server has no tool named {name!r} (it lists {listed}); a server may offer some tools "
        "only to clients declaring sampling, elicitation or roots (--handle-sampling, "
        "--handle-elicitation, --roots)"
    )


def tool_text(result: Any) -> str:
    """A tool result's text blocks joined, for messages."""
    blocks = result.get("content") if isinstance(result, dict) else None
    texts = [b.get("text", "") for b in blocks or [] if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join(texts) or "the tool reported an error"


def output_problem(result: Any, tool: dict[str, Any] | None) -> str | None:
    """Why ``result`` fails the tool's ``outputSchema`` (one line), or None when it passes."""
    schema = tool.get("outputSchema") if tool else None
    if not isinstance(schema, dict):
        return "the tool declares no outputSchema"
    structured = result.get("structuredContent") if isinstance(result, dict) else None
    if structured is None:
        return "the result has no structuredContent"
    import jsonschema

    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(structured), key=lambda e: list(e.path)
    )
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(root)"
        return f"structuredContent breaks the output schema at {where}: {first.message}"
    return None


def validate_output(result: Any, tool: dict[str, Any] | None) -> None:
    """Check ``structuredContent`` against the tool's ``outputSchema``; ValidationError if it breaks it."""
    problem = output_problem(result, tool)
    if problem is None:
        return
    if problem.startswith("structuredContent"):
        raise ValidationError(problem)
    raise ValidationError(f"--output-schema-validate: {problem}")


async def perform(session: CallSession, call: Call) -> Any:
    """Run ``call`` on a connected session; the result, or a ClientError."""
    hello = session.hello
    assert hello is not None, "perform() needs a negotiated session"
    method = call.method
    if method == "server/info":
        return hello.as_dict()
    if method == "discover":
        return await _discover(session)
    missing = missing_capability(method, hello.capabilities)
    if missing is not None:
        raise CapabilityError(f"the server does not advertise the {missing!r} capability that {method} needs")
    tool: dict[str, Any] | None = None
    if method == "tools/call" and (call.tool_arg_pairs or call.validate_output):
        tool = await find_tool(session, _require(call.tool_name, "--tool-name", method))
        if call.tool_arg_pairs:
            call.tool_args = {
                **call.tool_args,
                **coerce_arguments(call.tool_arg_pairs, tool.get("inputSchema")),
            }
    params = build_params(call)
    if method in LISTS:
        return await list_all(session, method, params)
    if method == "tools/call":
        return await _call_tool(session, call, params, tool)
    if method in ("resources/read", "prompts/get"):
        return object_result(method, await request_with_input(session.core, method, params))
    result = await session.core.request(method, params)
    # Every MCP result is an object; a method mcptape does not know may answer anything.
    return object_result(method, result) if method in CAPABILITY or method == "ping" else result


def object_result(method: str, result: Any) -> dict[str, Any]:
    """``result`` when it is a JSON object, as every MCP result is; else a ProtocolError saying what came."""
    if isinstance(result, dict):
        return result
    shown = repr(result)
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    raise ProtocolError(
        f"{method} answered with a result that is not an object: {shown}", data={"result": result}
    )


async def _call_tool(session: CallSession, call: Call, params: Any, tool: dict[str, Any] | None) -> Any:
    core = session.core
    core.tool_in_flight = call.tool_name
    try:
        result = await request_with_input(
            core, "tools/call", params, progress=True, progress_token=call.progress_token
        )
        if call.run_as_task and call.poll:
            result = await _poll_task(session, result, call.poll_interval)
    finally:
        core.tool_in_flight = None
    result = object_result("tools/call", result)
    if "content" in result and not isinstance(result["content"], list):
        raise ProtocolError(
            "tools/call answered with a content that is not an array", data={"result": result}
        )
    if result.get("isError") is True:
        raise ToolError(tool_text(result), result=result, fail=call.fail_on_error)
    if call.validate_output:
        validate_output(result, tool)
    return result


async def _poll_task(session: CallSession, created: Any, interval: float) -> Any:
    task = created.get("task") if isinstance(created, dict) else None
    if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
        raise ProtocolError(f"tools/call with a task answered without a task: {created!r}")
    task_id = task["taskId"]
    while task.get("status") not in TERMINAL:
        await asyncio.sleep(interval)
        task = await session.core.request("tasks/get", {"taskId": task_id})
        if not isinstance(task, dict):
            raise ProtocolError(f"tasks/get answered {task!r}")
    return await session.core.request("tasks/result", {"taskId": task_id})


async def _discover(session: CallSession) -> dict[str, Any]:
    hello = session.hello
    assert hello is not None
    out = hello.as_dict()
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        key = LISTS[method]
        out[key] = []
        if missing_capability(method, hello.capabilities) is None:
            try:
                out[key] = (await list_all(session, method, None))[key]
            except ServerProtocolError as exc:
                # A server with resources but no templates answers "method not found".
                if exc.code != METHOD_NOT_FOUND:
                    raise
    return out
