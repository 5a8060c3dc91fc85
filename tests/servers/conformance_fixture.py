"""An MCP server, written with the `mcp` Python SDK, that serves every `test_*` fixture the
conformance suite's server scenarios check (`@modelcontextprotocol/conformance` 0.1.16).

Tools, resources, a resource template, subscriptions, prompts, completion, logging and
ping answer with exactly the names, texts and schemas those scenarios expect. Streamable
HTTP keeps an in-memory event store and a 100 ms ``retry``, so ``test_reconnection`` can
close its stream mid-call and the client resumes with ``Last-Event-ID`` (SEP-1699).

Run: ``python tests/servers/conformance_fixture.py stdio``, or ``http --port N``
(streamable HTTP at ``/mcp``) or ``sse --port N`` (legacy SSE at ``/sse``), always on
127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import warnings
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Message, UserMessage
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.types import (
    AudioContent,
    Completion,
    CompletionArgument,
    CompletionContext,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    JSONRPCMessage,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)

# Logging is deprecated from protocol 2026-07-28 on; the suite speaks 2025-11-25, where
# the fixtures must still log, so the SDK's deprecation warnings are only noise here.
warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

# A 1x1 PNG and a WAV with one silent sample: the smallest media the suite accepts.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
STEP = 0.05  # the pause the suite asks for between log and progress notifications

server: MCPServer = MCPServer(name="mcptape-conformance-fixture", version="1.0.0")
subscribed: set[str] = set()


def image() -> ImageContent:
    return ImageContent(type="image", data=PNG, mime_type="image/png")


def text_resource(uri: str, mime_type: str, text: str) -> EmbeddedResource:
    return EmbeddedResource(
        type="resource", resource=TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    )


# Tools returning content blocks, not values: no output schema, no structured content.
content_tool = server.tool(structured_output=False)


@content_tool
def test_simple_text() -> str:
    """Returns one text block."""
    return "This is a simple text response for testing."


@content_tool
def test_image_content() -> list[ImageContent]:
    """Returns one PNG image block."""
    return [image()]


@content_tool
def test_audio_content() -> list[AudioContent]:
    """Returns one WAV audio block."""
    return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


@content_tool
def test_embedded_resource() -> list[EmbeddedResource]:
    """Returns one embedded text resource."""
    return [text_resource("test://embedded-resource", "text/plain", "This is an embedded resource content.")]


@content_tool
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Returns a text, an image and an embedded JSON resource."""
    return [
        TextContent(type="text", text="Multiple content types test:"),
        image(),
        text_resource("test://mixed-content-resource", "application/json", '{"test":"data","value":123}'),
    ]


@content_tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three info log messages, 50 ms apart, while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(STEP)
    await ctx.info("Tool processing data")
    await asyncio.sleep(STEP)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@content_tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100, 50 ms apart (when the request has a progress token)."""
    for done in (0, 50, 100):
        await ctx.report_progress(done, 100, f"Completed step {done} of 100")
        if done < 100:
            await asyncio.sleep(STEP)
    return "Tool with progress executed successfully"


@content_tool
def test_error_handling() -> str:
    """Always fails: the result has isError set."""
    raise ToolError("This tool intentionally returns an error for testing")


@content_tool
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's LLM to answer the prompt (sampling/createMessage) and returns its answer."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    # Tied to this call, so over streamable HTTP it rides the call's own SSE stream.
    result = await ctx.session.create_message([message], max_tokens=100, related_request_id=ctx.request_id)
    content = result.content
    answer = content.text if isinstance(content, TextContent) else json.dumps(content.model_dump(mode="json"))
    return f"LLM response: {answer}"


async def elicit(ctx: Context, message: str, schema: dict[str, Any]) -> tuple[str, str]:
    """Asks the client's user (elicitation/create, form mode); the action and the content as JSON."""
    result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return result.action, json.dumps(result.content or {}, separators=(",", ":"))


def string(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **more}


@content_tool
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email address."""
    schema = {
        "type": "object",
        "properties": {"username": string("User's response"), "email": string("User's email address")},
        "required": ["username", "email"],
    }
    action, content = await elicit(ctx, message, schema)
    return f"User response: action={action}, content={content}"


@content_tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks for one field of each primitive type, each with a default (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": string("User name", default="John Doe"),
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": string("User status", enum=["active", "inactive", "pending"], default="active"),
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
    }
    action, content = await elicit(ctx, "Please provide user information", schema)
    return f"Elicitation completed: action={action}, content={content}"


def titled(prefix: str, titles: list[str]) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{n}", "title": title} for n, title in enumerate(titles, 1)]


@content_tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks for one field of each of the five enum forms of SEP-1330."""
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": string("Untitled single-select", enum=options),
            "titledSingle": string(
                "Titled single-select",
                oneOf=titled("value", ["First Option", "Second Option", "Third Option"]),
            ),
            "legacyEnum": string(
                "Legacy titled enum",
                enum=["opt1", "opt2", "opt3"],
                enumNames=["Option One", "Option Two", "Option Three"],
            ),
            "untitledMulti": {
                "type": "array",
                "description": "Untitled multi-select",
                "items": {"type": "string", "enum": options},
            },
            "titledMulti": {
                "type": "array",
                "description": "Titled multi-select",
                "items": {"anyOf": titled("value", ["First Choice", "Second Choice", "Third Choice"])},
            },
        },
    }
    action, content = await elicit(ctx, "Please select values using different enum schema types", schema)
    return f"Elicitation completed: action={action}, content={content}"


@content_tool
async def test_reconnection(ctx: Context) -> str:
    """Closes its own SSE stream mid-call; the client resumes it with Last-Event-ID (SEP-1699)."""
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    await asyncio.sleep(0.2)  # the client reconnects after the 100 ms retry
    await ctx.info("After reconnect")
    return "Reconnection test completed"


def json_schema_2020_12_tool() -> str:
    """Tool with JSON Schema 2020-12 features"""
    return "json_schema_2020_12_tool"


# The SDK derives a tool's inputSchema from its signature; this one's must carry the
# 2020-12 keywords the suite looks for (`$schema`, `$defs`, `additionalProperties`).
server._tool_manager._tools["json_schema_2020_12_tool"] = Tool.from_function(
    json_schema_2020_12_tool, structured_output=False
).model_copy(
    update={
        "parameters": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        }
    }
)


@server.resource("test://static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@server.resource("test://static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG)."""
    return base64.b64decode(PNG)


@server.resource("test://template/{id}/data", mime_type="application/json")
def template_data(id: str) -> str:
    """A resource template: the id is substituted into the data."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


@server.resource("test://watched-resource", mime_type="text/plain")
def watched() -> str:
    """A resource clients can subscribe to."""
    return "Watched resource content"


@server.prompt()
def test_simple_prompt() -> list[Message]:
    """A prompt without arguments."""
    return [UserMessage("This is a simple prompt for testing.")]


@server.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[Message]:
    """A prompt with two required arguments."""
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@server.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Message]:  # the suite names it in camelCase
    """A prompt embedding the resource it is given."""
    resource = text_resource(resourceUri, "text/plain", "Embedded resource content for testing.")
    return [UserMessage(resource), UserMessage("Please process the embedded resource above.")]


@server.prompt()
def test_prompt_with_image() -> list[Message]:
    """A prompt carrying an image."""
    return [UserMessage(image()), UserMessage("Please analyze the image above.")]


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion:
    """Offers nothing: the suite only checks that completion answers in shape."""
    return Completion(values=[], total=0, has_more=False)


async def set_level(ctx: ServerRequestContext[Any], params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


async def subscribe(ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
    subscribed.add(str(params.uri))
    return EmptyResult()


async def unsubscribe(ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams) -> EmptyResult:
    subscribed.discard(str(params.uri))
    return EmptyResult()


# MCPServer has no decorator for these three; serving them also declares the capabilities.
server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
server._lowlevel_server.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
server._lowlevel_server.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


class MemoryEventStore(EventStore):
    """Every event of every stream, in memory, so a dropped SSE stream can be resumed."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, JSONRPCMessage | None]] = []
        self.ids = itertools.count(1)

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = str(next(self.ids))
        self.events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        stream = next((s for s, e, _ in self.events if e == last_event_id), None)
        if stream is None:
            return None
        for s, event_id, message in self.events:
            # Priming events (no message) are not replayed: the client has them.
            if s == stream and int(event_id) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, help="port on 127.0.0.1 (required for http and sse)")
    args = parser.parse_args()
    if args.transport != "stdio" and args.port is None:
        parser.error(f"{args.transport} needs --port")
    if args.transport == "stdio":
        server.run("stdio")
    elif args.transport == "sse":
        server.run("sse", host="127.0.0.1", port=args.port)
    else:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=args.port,
            event_store=MemoryEventStore(),
            retry_interval=100,
        )


if __name__ == "__main__":
    main()
