"""`mcptape call`: run MCP methods against a server from flags or a JSON script, for CI and agents."""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import click

from mcptape.cli.common import UserError, db_option, otlp_option
from mcptape.cli.helptext import Command
from mcptape.cli.rule_options import rule_options, rules_from_cli


class CallUsageError(UserError):
    """A usage error of `call`: one line, exit status 1 (2 means the server answered with an error)."""

    exit_code = 1


class CallCommand(Command):
    """Click's own usage errors (an unknown option, a bad value) as one line with exit status 1.

    With --structured, a usage error is also a ``validation`` envelope on stdout: a
    pipeline or an agent parsing stdout gets JSON whatever went wrong.
    """

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        given = list(args)  # click consumes args as it parses them
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            if "--structured" in given[: given.index("--") if "--" in given else len(given)]:
                _usage_envelope(exc.format_message(), None)
            raise CallUsageError(exc.format_message()) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CallUsageError as exc:
            if ctx.params.get("structured"):
                _usage_envelope(exc.format_message(), ctx.params.get("method"))
            raise


def _usage_envelope(message: str, method: str | None) -> None:
    from mcptape.client.errors import ValidationError
    from mcptape.client.output import dumps, envelope

    click.echo(dumps(envelope(method or "", 0.0, None, ValidationError(message), [], [], [])))


class Seconds(click.FloatRange):
    """A number of seconds: a float range that also refuses ``nan`` (every comparison with it is
    false, so a range lets it through, and a limit of nan seconds is over at once)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if math.isnan(seconds):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        return seconds


SECONDS = Seconds(min=0)


def _json_option(value: str | None, flag: str) -> Any:
    if value is None:
        return None
    from mcptape.wire.jsontext import loads_finite

    try:
        return loads_finite(value)
    except ValueError as exc:  # NaN and infinities too: they would go out as null
        raise CallUsageError(f"{flag}: not valid JSON ({exc})") from None


@click.command(
    cls=CallCommand,
    summary_options=(
        "--method",
        "--params",
        "--tool-name",
        "--tool-arg",
        "--uri",
        "--script",
        "--structured",
        "--timeout",
        "--upstream",
        "--url",
        "--no-record",
    ),
)
@click.option(
    "--method",
    "-m",
    metavar="METHOD",
    help="The MCP method to run (the list: --help-all), or any other with --params; OAuth steps "
    "against --url: oauth/discover, oauth/register, oauth/authorize-url, oauth/token, oauth/refresh.",
)
@click.option(
    "--params", metavar="JSON", help="Request params as a JSON object (merged over those the flags build)."
)
@click.option("--tool-name", metavar="NAME", help="tools/call: the tool to call.")
@click.option(
    "--tool-arg",
    "tool_arg",
    multiple=True,
    metavar="K=V",
    help="tools/call: one argument, typed by the tool's input schema (numbers, booleans, JSON objects/arrays). Repeatable.",
)
@click.option(
    "--tool-args", metavar="JSON", help="tools/call: the arguments as a JSON object (--tool-arg wins)."
)
@click.option("--prompt-name", metavar="NAME", help="prompts/get: the prompt.")
@click.option(
    "--prompt-arg", multiple=True, metavar="K=V", help="prompts/get: one argument (a string). Repeatable."
)
@click.option(
    "--uri", metavar="URI", help="resources/read, resources/subscribe, resources/unsubscribe: the resource."
)
@click.option(
    "--cursor", metavar="CURSOR", help="Lists: fetch this one page only (default: every page, to the end)."
)
@click.option("--level", metavar="LEVEL", help="logging/setLevel: debug, info, notice, warning, error, ...")
@click.option("--task-id", metavar="ID", help="tasks/get, tasks/result, tasks/cancel: the task.")
@click.option(
    "--completion-ref", metavar="REF", help="completion/complete: ref/prompt/NAME or ref/resource/URI."
)
@click.option("--argument-name", metavar="NAME", help="completion/complete: the argument to complete.")
@click.option("--argument-value", metavar="TEXT", help="completion/complete: what is typed so far.")
@click.option("--run-as-task", is_flag=True, help="tools/call: run the call as a task (2025-11-25 tasks).")
@click.option(
    "--poll", is_flag=True, help="With --run-as-task: poll the task to its end and print its result."
)
@click.option(
    "--poll-interval",
    default=1.0,
    show_default=True,
    type=Seconds(min=0.01),
    metavar="S",
    help="Seconds between polls.",
)
@click.option(
    "--script", metavar="FILE|-", help="Run a JSON array of steps on one connection (the format: --help-all)."
)
@click.option(
    "--structured",
    is_flag=True,
    help="Print a JSON envelope (success, result, error, logs, ...) instead of the raw result.",
)
@click.option(
    "--output-schema-validate",
    is_flag=True,
    help="tools/call: check structuredContent against the tool's outputSchema.",
)
@click.option("--fail-on-error", is_flag=True, help="Exit 2 when a tool answers with isError: true.")
@click.option(
    "--follow",
    is_flag=True,
    help="Then keep the connection open and print notifications and server requests as NDJSON until --timeout or a signal.",
)
@click.option(
    "--timeout",
    default=30.0,
    show_default=True,
    type=SECONDS,
    metavar="S",
    help="Limit for the whole operation (exit 124); with --follow, how long to follow once the method or script is done.",
)
@click.option(
    "--connect-timeout",
    default=30.0,
    show_default=True,
    type=SECONDS,
    metavar="S",
    help="Limit for starting the server and the handshake.",
)
@click.option(
    "--request-timeout",
    default=60.0,
    show_default=True,
    type=SECONDS,
    metavar="S",
    help="Limit for one reply; progress notifications restart it.",
)
@click.option(
    "--max-request-timeout",
    default=300.0,
    show_default=True,
    type=SECONDS,
    metavar="S",
    help="Limit for one reply, progress or not.",
)
@click.option(
    "--protocol-version",
    default="auto",
    show_default=True,
    metavar="VERSION",
    help="auto, 2026-07-28 (server/discover) or a 2025 revision (initialize).",
)
@click.option(
    "--upstream",
    metavar="NAME",
    help="A registered server: a built-in (demo, debug-script) or an entry of --config.",
)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="An mcpServers config file.",
)
@click.option(
    "--server", "server_name", metavar="NAME", help="The entry of --config to call (same as --upstream)."
)
@click.option("--url", metavar="URL", help="A remote server (streamable HTTP or SSE).")
@click.option(
    "--transport",
    type=click.Choice(["http", "sse", "auto"]),
    default=None,
    help="With --url: streamable HTTP (the default), legacy SSE, or auto (HTTP, then SSE when the first POST is refused).",
)
@click.option(
    "--header", "headers", multiple=True, metavar="'K: V'", help="With --url: an HTTP header. Repeatable."
)
@click.option(
    "--token", metavar="TOKEN", help="With --url: sugar for --header 'Authorization: Bearer TOKEN'."
)
@click.option(
    "--auth-server",
    metavar="URL",
    help="oauth/*: the authorization server (default: from the resource's metadata).",
)
@click.option(
    "--oauth/--no-oauth",
    default=True,
    show_default=True,
    help="With --url: when the server answers 401 (or 403 insufficient_scope), run the OAuth "
    "flow without a browser and send the request again with the token.",
)
@click.option(
    "--client-id",
    metavar="ID",
    help="oauth/authorize-url, oauth/token, oauth/refresh: the client (from oauth/register); "
    "OAuth on 401: a pre-registered client.",
)
@click.option(
    "--client-secret",
    metavar="SECRET",
    help="oauth/token, oauth/refresh, OAuth on 401: the client secret, for a confidential client.",
)
@click.option(
    "--client-metadata-url",
    metavar="URL",
    help="OAuth on 401: the URL of this client's metadata document, used as its client_id where "
    "the authorization server supports them (instead of registering).",
)
@click.option(
    "--redirect-uri",
    default="http://127.0.0.1:33418/callback",
    show_default=True,
    metavar="URI",
    help="oauth/register, oauth/authorize-url, oauth/token: where the authorization server sends the code.",
)
@click.option("--scope", metavar="SCOPES", help="oauth/register, oauth/authorize-url: the scopes to ask for.")
@click.option("--code", metavar="CODE", help="oauth/token: the authorization code the redirect carried.")
@click.option(
    "--code-verifier", metavar="VERIFIER", help="oauth/token: the PKCE verifier oauth/authorize-url printed."
)
@click.option("--refresh-token", metavar="TOKEN", help="oauth/refresh: the refresh token.")
@click.option("--name", metavar="NAME", help="Session name in the recording.")
@db_option
@click.option(
    "--record/--no-record", default=True, show_default=True, help="Record the session into the database."
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Say each connection state on stderr and copy the server's stderr there.",
)
@rule_options
@otlp_option
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND [ARGS]...]")
def call(command: tuple[str, ...], **opts: Any) -> None:
    """Run MCP methods against a server: the CI-first MCP client.

    Starts the server (-- COMMAND, --upstream, --config/--server, or --url),
    negotiates (2025 initialize or 2026-07-28 server/discover), runs --method or
    a --script on one connection, prints the raw result on stdout (logs on
    stderr) and exits with a status a pipeline can trust. The session is
    recorded (mode call) unless --no-record.

    \b
    Exit status:
      0      success (a tool result with isError too, unless --fail-on-error)
      1      usage, validation, transport or capability error
      2      the server answered with a JSON-RPC error (or isError, see above)
      124    --timeout exceeded
      128+N  stopped by signal N (a signal ends --follow: 0)

    \b
    Examples:
      mcptape call -m tools/list -- npx -y @modelcontextprotocol/server-everything
      mcptape call -m tools/call --tool-name echo --tool-arg text=hi -- ./server
      mcptape call -m discover --structured --upstream github --config mcp.json
      mcptape call --script steps.json --structured -- python server.py

    \f
    Methods (--method): server/info, discover (info, capabilities and every
    tool, resource, template and prompt), ping, tools/list, tools/call,
    resources/list, resources/read, resources/templates/list,
    resources/subscribe, resources/unsubscribe, prompts/list, prompts/get,
    completion/complete, logging/setLevel, tasks/list, tasks/get, tasks/result,
    tasks/cancel, and any other with --params. The server's requests
    (sampling, elicitation, roots) are answered by the --handle-* rules, else
    declined with a warning; either way they are captured for --structured.

    \b
    Script (--script FILE, or - for stdin): a JSON array of steps, checked
    before anything is sent; fields as the flags, camelCase; {"$ref":
    "N/json/pointer"} takes a value from the result of an earlier step N;
    onError: stop (default), continue or skip-to:N.
      [{"method": "tools/list"},
       {"method": "tools/call", "toolName": {"$ref": "0/tools/0/name"},
        "toolArgs": {"message": "hi"}, "onError": "continue"},
       {"method": "resources/read",
        "uri": "demo://resource/static/document/architecture.md"}]

    OAuth: a server that answers 401 gets the authorization code flow with
    PKCE at once, when its authorization server approves without a user (as in
    CI): metadata discovery, --client-id, a --client-metadata-url or dynamic
    registration, the token, then the request again (--no-oauth: the 401 is
    the error). Otherwise, the steps by hand (each prints JSON; nothing is
    recorded):

    \b
      mcptape call -m oauth/discover --url https://mcp.example.com/mcp
      mcptape call -m oauth/register --url URL              # -> client_id
      mcptape call -m oauth/authorize-url --url URL --client-id ID
                                                 # -> url, codeVerifier
      mcptape call -m oauth/token --url URL --client-id ID \\
          --code CODE --code-verifier V
      mcptape call -m oauth/refresh --url URL --client-id ID --refresh-token T

    \b
    More examples:
      mcptape call -m tools/call --tool-name get-sum --tool-arg a=1 \\
          --tool-arg b=2 -- node server.js
      mcptape call -m logging/setLevel --level debug --follow --timeout 60 \\
          -- node server.js
    """
    from mcptape.client.coerce import split_pairs
    from mcptape.client.core import Timeouts
    from mcptape.client.errors import ValidationError
    from mcptape.client.handlers import rules_handler
    from mcptape.client.methods import Call
    from mcptape.client.negotiate import check_version
    from mcptape.client.runner import RunPlan, run
    from mcptape.client.script import parse_script
    from mcptape.client.session import SessionOptions

    if (opts["method"] or "").startswith("oauth/"):
        _oauth(opts)
    try:
        rules = rules_from_cli(
            opts["handle_sampling"], opts["handle_elicitation"], opts["roots"], opts["inject"]
        )
    except UserError as exc:
        raise CallUsageError(exc.format_message()) from None
    from mcptape.client.targets import read_script, target_from

    try:
        target = target_from(command, opts)
    except ValidationError as exc:
        raise CallUsageError(exc.message) from None
    try:
        version = check_version(opts["protocol_version"])
        base = Call(
            method=opts["method"] or "ping",
            params=_json_option(opts["params"], "--params"),
            tool_name=opts["tool_name"],
            tool_args=_json_option(opts["tool_args"], "--tool-args") or {},
            tool_arg_pairs=split_pairs(opts["tool_arg"]),
            prompt_name=opts["prompt_name"],
            prompt_args=dict(split_pairs(opts["prompt_arg"], "--prompt-arg")),
            uri=opts["uri"],
            cursor=opts["cursor"],
            level=opts["level"],
            task_id=opts["task_id"],
            ref=opts["completion_ref"],
            argument_name=opts["argument_name"],
            argument_value=opts["argument_value"],
            run_as_task=opts["run_as_task"],
            poll=opts["poll"],
            poll_interval=opts["poll_interval"],
            fail_on_error=opts["fail_on_error"],
            validate_output=opts["output_schema_validate"],
        )
        if base.params is not None and not isinstance(base.params, dict):
            raise ValidationError("--params must be a JSON object")
        if not isinstance(base.tool_args, dict):
            raise ValidationError("--tool-args must be a JSON object")
        script = []
        if opts["script"] is not None:
            if opts["method"]:
                raise ValidationError("give either --method or --script, not both")
            script = parse_script(read_script(opts["script"]), f"--script {opts['script']}")
        elif not opts["method"]:
            raise ValidationError("nothing to run: give --method METHOD or --script FILE")
    except ValidationError as exc:
        raise CallUsageError(exc.message) from None
    timeouts = Timeouts(opts["connect_timeout"], opts["request_timeout"], opts["max_request_timeout"])
    say = lambda text: click.echo(f"mcptape: {text}", err=True)  # noqa: E731 - replaced by the runner
    from mcptape.client.authpolicy import ClientConfig

    oauth = ClientConfig(
        opts["client_id"], opts["client_secret"], opts["client_metadata_url"], opts["redirect_uri"]
    )
    options = SessionOptions(
        oauth=oauth if opts["oauth"] else None,
        db=opts["db"],
        record=opts["record"],
        timeouts=timeouts,
        protocol_version=version,
        handler=rules_handler(rules, say),
        capabilities=rules.capabilities(),
        otlp=opts["otlp"],
    )
    plan = RunPlan(
        target=target,
        session=options,
        call=base,
        script=script,
        structured=opts["structured"],
        follow=opts["follow"],
        timeout=opts["timeout"],
        verbose=opts["verbose"],
    )
    status = run(plan)
    # Everything is written and the server is gone: skip the interpreter's teardown, which
    # with SQLAlchemy loaded costs a CI job about half a second per call.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _oauth(opts: dict[str, Any]) -> None:
    """Run one OAuth step against --url (the MCP server, the protected resource) and exit."""
    from mcptape.client.oauth import METHODS, OAuthCall
    from mcptape.client.runner import RunPlan, run
    from mcptape.client.session import SessionOptions, Target

    if opts["method"] not in METHODS:
        raise CallUsageError(f"unknown OAuth step {opts['method']!r}; known: {', '.join(METHODS)}")
    if not opts["url"] or not opts["url"].startswith(("http://", "https://")):
        raise CallUsageError(f"{opts['method']} needs --url, the MCP server's http:// or https:// URL")
    call = OAuthCall(
        method=opts["method"],
        resource=opts["url"],
        auth_server=opts["auth_server"],
        client_id=opts["client_id"],
        client_secret=opts["client_secret"],
        redirect_uri=opts["redirect_uri"],
        scope=opts["scope"],
        code=opts["code"],
        code_verifier=opts["code_verifier"],
        refresh_token=opts["refresh_token"],
    )
    plan = RunPlan(
        target=Target(opts["url"], url=opts["url"]),
        session=SessionOptions(record=False),
        structured=opts["structured"],
        timeout=opts["timeout"],
        oauth=call,
    )
    status = run(plan)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
