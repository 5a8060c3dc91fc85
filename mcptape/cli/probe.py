"""`mcptape probe`: does a server, or a proxy in front of it, carry every feature of MCP?"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from mcptape.cli.common import Seconds, UserError, db_option
from mcptape.cli.helptext import Command

if TYPE_CHECKING:  # the client core loads only when a probe runs
    from mcptape.client.session import Target
    from mcptape.probe.runner import ProbeReport, ProbeSettings
    from mcptape.probe.scenarios import Scenario

T = TypeVar("T")

FORMAT_HELP = {
    "table": "A table of verdicts, 80 columns wide (the default).",
    "json": "Every verdict as JSON.",
    "junit": "JUnit XML, for CI systems (not offered: skipped).",
    "sarif": "SARIF 2.1.0, for code scanning (kinds pass, fail, notApplicable).",
}


def _format_options(func: Any) -> Any:
    for name in reversed(FORMAT_HELP):
        extra: dict[str, Any] = {"default": True} if name == "table" else {}
        func = click.option(f"--{name}", "fmt", flag_value=name, help=FORMAT_HELP[name], **extra)(func)
    return func


@click.command(
    cls=Command,
    summary_options=(
        "--upstream",
        "--config",
        "--direct",
        "--only",
        "--list",
        "--json",
        "--junit",
        "--sarif",
    ),
)
@click.option(
    "--upstream", metavar="NAME", help="Probe a registered server: a built-in or an entry of --config."
)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An mcpServers config file (for --upstream and --direct NAME).",
)
@click.option(
    "--direct",
    metavar="URL|NAME",
    help="The server behind the proxy being probed (a URL or a registry name): run the same "
    "scenarios against it too and report only what differs.",
)
@click.option(
    "--transport",
    type=click.Choice(["http", "sse", "auto"]),
    default=None,
    help="For URLs: streamable HTTP, legacy SSE, or auto (HTTP, then SSE when the first POST is "
    "refused; the default for a URL given as TARGET).",
)
@click.option(
    "--header", "headers", multiple=True, metavar="'K: V'", help="For URLs: an HTTP header. Repeatable."
)
@click.option("--token", metavar="TOKEN", help="For URLs: sugar for --header 'Authorization: Bearer TOKEN'.")
@click.option(
    "--only", multiple=True, metavar="PATTERN", help="Run only the scenarios matching (a glob). Repeatable."
)
@click.option(
    "--skip", multiple=True, metavar="PATTERN", help="Leave out the scenarios matching (a glob). Repeatable."
)
@click.option(
    "--list", "list_only", is_flag=True, help="List the scenarios and the tools they use, and exit."
)
@click.option(
    "--protocol-version",
    default="2025-11-25",
    show_default=True,
    metavar="VERSION",
    help="The revision of the scenarios that do not choose their own (the handshakes, batch and "
    "input-required do): a 2025 revision (initialize) or 2026-07-28 (server/discover).",
)
@click.option(
    "--timeout",
    type=Seconds(),
    default=20.0,
    show_default=True,
    metavar="S",
    help="Limit for one scenario, its session included.",
)
@click.option(
    "--connect-timeout",
    type=Seconds(),
    default=15.0,
    show_default=True,
    metavar="S",
    help="Limit for starting the server and the handshake.",
)
@click.option(
    "--jobs", type=click.IntRange(1, 32), default=4, show_default=True, help="Scenarios run at once."
)
@click.option(
    "--name",
    default="probe",
    show_default=True,
    metavar="PREFIX",
    help="Each scenario's session is recorded as PREFIX:SCENARIO.",
)
@db_option
@click.option(
    "--record/--no-record", default=True, show_default=True, help="Record the sessions into the database."
)
@_format_options
@click.argument("target", nargs=-1, type=click.UNPROCESSED, metavar="[URL | -- COMMAND [ARGS]...]")
def probe(target: tuple[str, ...], **opts: Any) -> None:
    """Check which features of MCP a server, or a proxy in front of it, carries.

    With --direct, the same scenarios also run against the server behind the
    proxy, and the report lists only what differs: BREAKS marks what the proxy
    breaks (a failure through it, or a feature that passes directly and not
    through it).

    \b
    Exit status:
      0  every scenario passed or is not offered (--direct: the proxy breaks none)
      1  a scenario failed (with --direct: the proxy breaks one)
      2  usage error, or the target cannot be started or reached
      128+N  stopped by signal N (every server it started is shut down first)

    \b
    Examples:
      mcptape probe -- npx -y @modelcontextprotocol/server-everything
      mcptape probe http://127.0.0.1:8080/mcp --direct everything --config s.json
      mcptape probe --upstream everything --config s.json --junit > probe.xml
      mcptape probe http://127.0.0.1:8080/mcp --only 'initialize-*' --only roots
    \f
    TARGET is a URL (streamable HTTP or legacy SSE), a command after -- (stdio),
    or --upstream NAME (with --config FILE). Each scenario runs on a fresh session
    of the same client core `call` uses, recorded like any session (mode probe,
    named PREFIX:SCENARIO), and ends in a verdict: pass, fail, or not offered
    (the server has no capability or no tool for it; not a failure). Scenarios
    that need a tool name it: server-everything's, the server with every
    feature (--list shows them).
    """
    from mcptape.probe.scenarios import select

    try:
        scenarios = select(opts["only"], opts["skip"])
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if opts["list_only"]:
        _list(scenarios)
        return
    if not scenarios:
        raise UserError("--only and --skip leave no scenario to run")
    version = _version(opts["protocol_version"])
    main, direct = _targets(target, opts)
    from mcptape.probe.runner import ProbeSettings

    settings = ProbeSettings(
        version=version,
        timeout=opts["timeout"],
        connect_timeout=opts["connect_timeout"],
        jobs=opts["jobs"],
        db=opts["db"],
        record=opts["record"],
        name=opts["name"],
    )
    import asyncio

    from mcptape.terminal import say

    what = f"{len(scenarios)} scenarios, {settings.jobs} at a time"
    say(
        f"probing {main.description}"
        + (f" and {direct.description} (direct)" if direct else "")
        + f": {what}"
    )
    try:
        report, direct_report = asyncio.run(_stoppable(_run(main, direct, scenarios, settings)))
    except Stopped as stop:
        import signal

        say(f"stopped by {signal.Signals(stop.signum).name}")
        sys.exit(128 + stop.signum)
    except Exception as exc:
        from mcptape.probe.runner import Unreachable

        if isinstance(exc, Unreachable):
            raise UserError(str(exc)) from None
        raise
    from mcptape.cli.common import writing_output
    from mcptape.probe.compare import differences
    from mcptape.probe.report import WRITERS, ok

    diffs = differences(report, direct_report) if direct_report is not None else None
    with writing_output():
        WRITERS[opts["fmt"]](sys.stdout, report, diffs, direct_report)
        sys.stdout.flush()
    if report.recorded:
        sessions = len(report.results) + (len(direct_report.results) if direct_report else 0)
        say(
            f"{sessions} sessions recorded into {report.recorded} (mode probe, named {settings.name}:SCENARIO)"
        )
    sys.exit(0 if ok(report, diffs) else 1)


class Stopped(Exception):
    """A signal stopped the probe (its servers shut down)."""

    def __init__(self, signum: int) -> None:
        self.signum = signum


async def _stoppable(work: Awaitable[T]) -> T:
    """``work``, cancelled by SIGINT, SIGTERM or SIGHUP: each scenario then shuts its server
    down and writes its session (the default actions left the servers running); a second
    signal gives up on them."""
    import asyncio

    from mcptape.proxy.early_signals import STOP_SIGNALS

    task = asyncio.ensure_future(work)
    stopped: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        stopped.append(signum)
        if len(stopped) > 1:
            import os
            import signal

            from mcptape.terminal import say

            say(f"{signal.Signals(signum).name} again: not waiting for the servers to exit")
            os._exit(128 + stopped[0])
        task.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, on_signal, signum)
    try:
        return await task
    except asyncio.CancelledError:
        if not stopped:
            raise
        raise Stopped(stopped[0]) from None
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


async def _run(
    main: Target, direct: Target | None, scenarios: Sequence[Scenario], settings: ProbeSettings
) -> tuple[ProbeReport, ProbeReport | None]:
    import asyncio

    from mcptape.probe.runner import run_probe

    gate = asyncio.Semaphore(settings.jobs)
    if direct is None:
        return await run_probe(main, scenarios, settings, gate=gate), None
    proxied, behind = await asyncio.gather(
        run_probe(main, scenarios, settings, gate=gate),
        run_probe(direct, scenarios, settings, gate=gate),
    )
    return proxied, behind


def _list(scenarios: Sequence[Scenario]) -> None:
    from mcptape.cli.output import terminal_width, write_table

    rows = [(s.id, s.uses or "", s.title) for s in scenarios]
    write_table(sys.stdout, rows, ("scenario", "uses", "checks"), terminal_width(), keep=("scenario",))


def _version(value: str) -> str:
    from mcptape.wire.protocol import REVISIONS

    if value not in REVISIONS:
        raise UserError(f"--protocol-version {value!r}: known revisions are {', '.join(REVISIONS)}")
    return value


def _targets(target: tuple[str, ...], opts: dict[str, Any]) -> tuple[Target, Target | None]:
    """The target (and the --direct one) as ``call`` would reach them."""
    from mcptape.client.errors import ValidationError
    from mcptape.client.targets import target_from

    url = target[0] if len(target) == 1 and target[0].startswith(("http://", "https://")) else None
    base = {
        "upstream": opts["upstream"],
        "server_name": None,
        "config_path": opts["config_path"],
        "url": url,
        "transport": opts["transport"] or ("auto" if url else None),
        "headers": opts["headers"],
        "token": opts["token"],
        "name": None,
    }
    try:
        if not target and not opts["upstream"]:
            raise ValidationError("nothing to probe: give a URL, a command after --, or --upstream NAME")
        main = target_from(() if url else target, base)
        direct = None
        if opts["direct"]:
            theirs = opts["direct"]
            is_url = theirs.startswith(("http://", "https://"))
            # The proxy's credentials are not the server's: --header and --token stay with TARGET.
            direct = target_from(
                (),
                {
                    **base,
                    "upstream": None if is_url else theirs,
                    "url": theirs if is_url else None,
                    "transport": "auto" if is_url else None,
                    "headers": (),
                    "token": None,
                },
            )
    except ValidationError as exc:
        raise UserError(exc.message) from None
    return main, direct
