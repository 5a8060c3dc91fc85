"""`mcptape demo`: the one-minute tour. A real MCP client drives the demo server through `record`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

import click

from mcptape.cli.common import Interrupted, db_option
from mcptape.cli.helptext import Command
from mcptape.wire.protocol import INITIALIZE

MCPTAPE = [sys.executable, "-m", "mcptape"]

# (tool, arguments): one call per tool of mcptape.servers.demo, the last one fails on purpose.
TOOL_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("add", {"a": 2, "b": 3}),
    ("echo", {"text": "hello, tape"}),
    ("weather", {"city": "Lisbon"}),
    ("countdown", {"start": 3}),
    ("fail", {"reason": "on purpose"}),
]

# Portable SQL: stock PostgreSQL has no round(double precision, integer) (mcptape's migration
# 0003 adds one); rounding to 0.01 ms by hand works on any database and any SQL tool.
TOOL_CALLS_SQL = (
    "select tool, is_error, round(latency_ms * 100) / 100 as latency_ms from tool_calls"
    " where session_id = (select id from sessions where name = 'demo' order by started_at desc limit 1)"
)
# Every method seen, with how often; responses have no method of their own, so count requests.
METHODS_SQL = "select method, count(*) as n from exchanges group by 1 order by 2 desc"


class DemoFailed(click.ClickException):
    """The tour could not finish: printed as one line, exit status 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        from mcptape.terminal import safe

        click.echo(f"mcptape: error: {safe(self.format_message())}", err=True)


@click.command(cls=Command)
@db_option
@click.option("--quiet", "-q", is_flag=True, help="Skip the step-by-step narration; show only the recording.")
def demo(db: str | None, quiet: bool) -> None:
    """Take the one-minute tour: record a real MCP session and look at it.

    An MCP client (the mcp SDK's) starts the built-in demo server through
    `mcptape record`, lists its tools, calls each one (one fails on purpose),
    reads a resource and a resource template, gets a prompt and sets the log
    level. Every frame goes through the recorder into the database. The tour
    then shows the recording with `mcptape show last` and answers a question
    with `mcptape sql`.

    \b
    Examples:
      mcptape demo
      mcptape demo --db /tmp/tour.db
      mcptape demo --quiet
    """
    import shlex
    import tempfile

    import anyio

    db_args = ["--db", db] if db is not None else []
    command = [
        *MCPTAPE,
        "record",
        "--name",
        "demo",
        *db_args,
        "--",
        sys.executable,
        "-m",
        "mcptape.servers.demo",
    ]
    say: Callable[[str], None] = (lambda _line: None) if quiet else click.echo
    me = invocation()
    say("An MCP client talks to the demo server through the recorder:")
    say(f"  $ {shlex.join([*me, *command[3:]])}")
    say("")
    # The recorder's stderr (and the server's, which it passes on) would interleave with
    # the narration; it is kept aside and shown only if the session fails.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            anyio.run(drive_demo_session, command, say, errlog)
        except BaseException as exc:
            if _interrupted(exc):
                raise Interrupted("the demo was interrupted") from None
            if not isinstance(exc, Exception):
                raise
            errlog.seek(0)
            tail = "".join(errlog.readlines()[-15:])
            if tail:
                click.echo(tail.rstrip(), err=True)
            where = "; the recorder's last messages are above" if tail else ""
            raise DemoFailed(f"the demo session failed: {_describe(exc)}{where}") from None
    prog = shlex.join(me)
    hint = f" --db {shlex.quote(db)}" if db is not None else ""
    failed = []
    for title, shown, args in [
        ("What was recorded", f"{prog} show{hint} last", ["show", *db_args, "last"]),
        # Shown in double quotes, as people type it: shlex would escape the SQL's single quotes.
        (
            "Tool calls, answered by SQL",
            f'{prog} sql{hint} "{TOOL_CALLS_SQL}"',
            ["sql", *db_args, TOOL_CALLS_SQL],
        ),
    ]:
        click.echo(f"\n{title}:\n  $ {shown}")
        if not run_mcptape(args):
            failed.append(args[0])
    click.echo("\nTry next:")
    for line, why in suggestions(prog, hint):
        click.echo(f"  {line}\n      {why}")
    if failed:
        raise DemoFailed(f"`mcptape {' and '.join(failed)}` failed; see the messages above")


def suggestions(prog: str, hint: str) -> list[tuple[str, str]]:
    """What to try after the tour, as commands that work as printed (``prog`` is how to run
    mcptape here, ``hint`` the --db option when one was given)."""
    from mcptape.config.registry import default_client_config_path

    config = default_client_config_path()
    # Without a desktop client's config, wrap needs the path of an mcpServers file.
    wrap = f"{prog} wrap --dry-run" if config.exists() else f"{prog} wrap --dry-run PATH/TO/mcp.json"
    return [
        (f"{prog} sessions{hint}", "every recorded session"),
        (f'{prog} sql{hint} "{METHODS_SQL}"', "any SQL over the traffic"),
        (f"{prog} record{hint} -- <your server command>", "record your own server"),
        (wrap, "record your desktop client's servers"),
    ]


def invocation() -> list[str]:
    """How to run this mcptape from here, as short as works: ``mcptape`` when that is on PATH
    and is this one, else the console script as it was typed or installed (relative under the
    current directory, e.g. ``.venv/bin/mcptape``), else ``python -m mcptape``."""
    import shutil

    from mcptape.config.wrap import mcptape_launcher

    typed = (
        sys.argv[0] if os.path.basename(sys.argv[0]) == "mcptape" and os.path.isfile(sys.argv[0]) else None
    )
    launcher = [typed] if typed else mcptape_launcher()
    on_path = shutil.which("mcptape")
    if len(launcher) == 1 and on_path and os.path.realpath(on_path) == os.path.realpath(launcher[0]):
        return ["mcptape"]
    return [_shortest(launcher[0]), *launcher[1:]]


def _shortest(path: str) -> str:
    relative = os.path.relpath(os.path.abspath(path))
    # A relative path needs a slash, or the shell would look the name up on PATH.
    return relative if not relative.startswith("..") and os.sep in relative else path


def _interrupted(exc: BaseException) -> bool:
    if isinstance(exc, KeyboardInterrupt):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return any(_interrupted(e) for e in exc.exceptions)
    return False


def run_mcptape(args: list[str]) -> bool:
    """Run `mcptape ARGS` in a subprocess, its output going straight to ours; True if it succeeded."""
    import subprocess

    sys.stdout.flush()
    return subprocess.run([*MCPTAPE, *args], check=False).returncode == 0


async def drive_demo_session(command: list[str], say: Callable[[str], None], errlog: TextIO) -> None:
    """Connect to ``command`` over stdio and use every feature of the demo server once."""
    import json
    import warnings

    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPDeprecationWarning
    from mcp_types import Implementation, LoggingMessageNotificationParams

    from mcptape import __version__
    from mcptape.wire.summaries import count_of

    logs: list[str] = []
    steps: list[float] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(str(params.data))

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append(progress)

    # The full environment, not the SDK's safe subset: MCPTAPE_DB and PYTHONPATH must reach the recorder.
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    client = Client(
        stdio_client(params, errlog=errlog),
        # The initialize handshake is what most clients in the wild still speak.
        mode="legacy",
        logging_callback=on_log,
        client_info=Implementation(name="mcptape-demo-client", version=__version__),
    )

    def step(request: str, answer: str) -> None:
        say(f"  {request:<40} -> {answer}")

    async with client:
        info = client.server_info
        server = f"{info.name} {info.version}" if info else "an anonymous server"
        step(INITIALIZE, f"{server}, protocol {client.protocol_version}")
        with warnings.catch_warnings():
            # Deprecated from 2026-07-28 on; a legacy session still uses it.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.set_logging_level("info")
        step("logging/setLevel info", "ok")
        tools = await client.list_tools()
        step("tools/list", ", ".join(tool.name for tool in tools.tools))
        for name, arguments in TOOL_CALLS:
            logs.clear()
            steps.clear()
            result = await client.call_tool(name, arguments, progress_callback=on_progress)
            text = " ".join(getattr(block, "text", f"<{block.type}>") for block in result.content)
            shown = json.dumps(result.structured_content) if result.structured_content else text
            outcome = f"isError: {text}" if result.is_error else shown
            counts = f"{count_of(len(logs), 'log message')}, {count_of(len(steps), 'progress notification')}"
            extra = f"  ({counts})" if logs else ""
            step(f"tools/call {name} {json.dumps(arguments)}", f"{outcome}{extra}")
        for uri in ("demo://readme", "demo://greeting/Ada"):
            contents = (await client.read_resource(uri)).contents
            first = getattr(contents[0], "text", "").splitlines()[0] if contents else ""
            step(f"resources/read {uri}", repr(first))
        prompt = await client.get_prompt("review", {"code": "print('hi')", "language": "python"})
        step(
            "prompts/get review",
            f"{count_of(len(prompt.messages), 'message')} for the {prompt.messages[0].role}",
        )


def _describe(exc: BaseException) -> str:
    # anyio task groups wrap the one error that matters in an exception group.
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
