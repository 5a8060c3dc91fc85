"""``call`` run end to end: connect, run one method or a script, follow, print, and pick the exit status.

The whole operation (connecting included) is bounded by ``--timeout``; past it the
run ends with a timeout error (exit 124), except under ``--follow``, where the timeout
is how long to follow and ending there is success. SIGINT and SIGTERM end a follow
cleanly, and anything else with 128+N; the server is shut down and the session is
recorded in every case.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from mcptape.client.core import error_of
from mcptape.client.errors import ClientError, ClientTimeout, ToolError, exit_status
from mcptape.client.methods import Call, perform
from mcptape.client.output import dumps, envelope, error_line, event, log_line
from mcptape.client.script import ScriptStep, resolve
from mcptape.client.session import CallSession, SessionOptions, Target, close_fully
from mcptape.proxy.early_signals import STOP_SIGNALS

if TYPE_CHECKING:  # the OAuth steps (hashlib, secrets) load only when one runs
    from mcptape.client.oauth import OAuthCall

# SIGHUP too (the terminal closed): its default action left the server running (one that
# outlives its stdin, for good) and the session unrecorded.
SIGNALS = STOP_SIGNALS
STEP_TO_CALL = {
    "params": "params",
    "toolName": "tool_name",
    "toolArgs": "tool_args",
    "promptName": "prompt_name",
    "promptArgs": "prompt_args",
    "uri": "uri",
    "cursor": "cursor",
    "level": "level",
    "taskId": "task_id",
    "ref": "ref",
    "completionRef": "ref",  # the flag --completion-ref in camelCase, as the help says fields are
    "argumentName": "argument_name",
    "argumentValue": "argument_value",
    "runAsTask": "run_as_task",
    "poll": "poll",
}


@dataclass
class RunPlan:
    """Everything ``call`` was asked to do."""

    target: Target
    session: SessionOptions
    call: Call | None = None
    script: list[ScriptStep] = field(default_factory=list)
    structured: bool = False
    follow: bool = False
    timeout: float = 30.0
    verbose: bool = False
    oauth: OAuthCall | None = None


@dataclass
class StepOutcome:
    method: str
    result: Any
    error: ClientError | None
    duration: float
    captured: tuple[int, int, int, int, int, int]  # logs, serverRequests, notifications: [from, to)


def call_from_step(fields: dict[str, Any], defaults: Call) -> Call:
    """A script step's fields (references resolved) as a :class:`Call`."""
    changes: dict[str, Any] = {"method": fields["method"]}
    for key, attr in STEP_TO_CALL.items():
        if key in fields:
            changes[attr] = fields[key]
    if "toolArg" in fields:
        changes["tool_arg_pairs"] = [
            (str(k), v if isinstance(v, str) else dumps(v, pretty=False))
            for k, v in fields["toolArg"].items()
        ]
    return dataclasses.replace(defaults, **changes)


class Runner:
    """One ``call`` invocation."""

    def __init__(self, plan: RunPlan, out: IO[str] = sys.stdout, err: IO[str] = sys.stderr) -> None:
        self.plan = plan
        self.out = out
        self.err = err
        options = plan.session
        options.say = self.say
        if plan.verbose:
            options.on_state = lambda state, detail: self.say(
                f"state: {state}" + (f" ({detail})" if detail else "")
            )
            options.echo_stderr = True
        options.on_message = self._on_message
        self.session = CallSession(plan.target, options)
        self.outcomes: list[StepOutcome] = []
        self._follow_tasks: set[asyncio.Task[None]] = set()
        self._following = False
        self._stop_following = asyncio.Event()
        self.signalled: int | None = None

    def say(self, text: str) -> None:
        """One line on stderr. Log messages, error messages and names in it come from the
        server: escaped so that they cannot drive the terminal."""
        from mcptape.terminal import safe

        print(f"mcptape: {safe(text)}", file=self.err, flush=True)

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _on_message(self, kind: str, body: Any) -> None:
        if kind == "notification" and body.get("method") == "notifications/message":
            self.say(log_line(body.get("params")))
        if self.plan.follow:
            self._print(event(kind, body))
            if kind == "notification" and body.get("method") == "notifications/resources/updated":
                params = body.get("params") or {}
                if isinstance(params.get("uri"), str):
                    task = asyncio.ensure_future(self._reread(params["uri"]))
                    self._follow_tasks.add(task)
                    task.add_done_callback(self._follow_tasks.discard)

    async def _reread(self, uri: str) -> None:
        try:
            result = await self.session.core.request("resources/read", {"uri": uri})
            self._print(event("resource", {"uri": uri, "result": result}))
        except ClientError as exc:
            self._print(event("resource", {"uri": uri, "error": exc.as_dict()}))

    # -- running --------------------------------------------------------------------

    def _marks(self) -> tuple[int, int, int]:
        core = self.session.core
        return len(core.logs), len(core.server_requests), len(core.notifications)

    async def _step(self, call: Call) -> StepOutcome:
        before = self._marks()
        started = time.monotonic()
        result: Any = None
        error: ClientError | None = None
        try:
            result = await perform(self.session, call)
        except ClientError as exc:
            error = exc
        after = self._marks()
        outcome = StepOutcome(
            call.method,
            result,
            error,
            time.monotonic() - started,
            (before[0], after[0], before[1], after[1], before[2], after[2]),
        )
        self.outcomes.append(outcome)
        return outcome

    async def _script(self) -> None:
        results: dict[int, Any] = {}
        steps = self.plan.script
        defaults = self.plan.call or Call("ping")
        index = 0
        while index < len(steps):
            step = steps[index]
            where = f"step {step.index}"
            try:
                fields = resolve(step.fields, results, where)
                call = call_from_step(fields, defaults)
            except ClientError as exc:
                self.outcomes.append(StepOutcome(step.fields["method"], None, exc, 0.0, (0, 0, 0, 0, 0, 0)))
                outcome = self.outcomes[-1]
            else:
                outcome = await self._step(call)
            shown = _shown(outcome)
            if shown is not None:
                results[step.index] = shown
            if exit_status(outcome.error) == 0:
                index += 1
                continue
            if step.on_error == "stop":
                break
            index = step.skip_to if step.skip_to is not None else index + 1

    async def _follow(self) -> None:
        await self._stop_following.wait()

    async def _oauth(self, call: OAuthCall) -> int:
        """An OAuth step: plain HTTP exchanges, no MCP session, nothing recorded."""
        started = time.monotonic()
        result: Any = None
        error: ClientError | None = None
        try:
            async with asyncio.timeout(self.plan.timeout):
                from mcptape.client.oauth import perform_oauth

                result = await perform_oauth(call)
        except TimeoutError:
            error = ClientTimeout(f"{call.method} did not finish within --timeout {self.plan.timeout:g} s")
        except ClientError as exc:
            error = exc
        self.outcomes.append(
            StepOutcome(call.method, result, error, time.monotonic() - started, (0, 0, 0, 0, 0, 0))
        )
        return self._report(None)

    async def run(self) -> int:
        """Run the plan; returns the exit status (128+N when signal N stopped it)."""
        if self.plan.oauth is not None:
            return await self._oauth(self.plan.oauth)
        loop = asyncio.get_running_loop()
        work = asyncio.ensure_future(self._run())

        def on_signal(signum: int) -> None:
            # A signal ends a follow normally; anything else is cut short (the server is
            # still shut down and the session recorded); a second gives up on that.
            if self.signalled is not None:
                self.say(f"{signal.Signals(signum).name} again: not waiting for the server to exit")
                os._exit(128 + self.signalled)
            self.signalled = signum
            if self._following:
                self._stop_following.set()
            else:
                work.cancel()

        for signum in SIGNALS:
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            return await work
        except asyncio.CancelledError:
            if self.signalled is None:
                raise
            self.say(f"stopped by {signal.Signals(self.signalled).name}")
            return 128 + self.signalled
        finally:
            for signum in SIGNALS:
                loop.remove_signal_handler(signum)

    async def _run(self) -> int:
        plan = self.plan
        first_method = plan.call.method if plan.call and not plan.script else "script"
        started = time.monotonic()
        fatal: ClientError | None = None
        try:
            async with asyncio.timeout(plan.timeout) as limit:
                try:
                    await self.session.open()
                    if plan.script:
                        await self._script()
                    elif plan.call is not None:
                        await self._step(plan.call)
                    if plan.follow and not self.session.core.lost:
                        # What was asked for, before what follows: the method's result, or each
                        # step's ("step" numbers it; a failed step's error goes to stderr).
                        for number, outcome in enumerate(self.outcomes):
                            if outcome.error is None or isinstance(outcome.error, ToolError):
                                step = {"step": number} if plan.script else {}
                                body = {**step, "method": outcome.method, "result": _shown(outcome)}
                                self._print(event("result", body))
                        self._following = True
                        # --timeout is how long to follow, from now.
                        limit.reschedule(asyncio.get_running_loop().time() + plan.timeout)
                        await self._follow()
                except ClientError as exc:
                    fatal = exc
        except TimeoutError:
            if not self._following:
                note = self.session.core.stray_note()
                fatal = ClientTimeout(
                    f"the operation did not finish within --timeout {plan.timeout:g} s{note}"
                )
        except Exception as exc:  # a bug must still end with an envelope and a recorded session
            fatal = error_of(exc)
        finally:
            for task in list(self._follow_tasks):
                task.cancel()
            # A signal cancels the run: the server is still shut down to the end.
            if await close_fully(self.session):
                raise asyncio.CancelledError
        if fatal is not None:
            method = first_method if not self.outcomes else "script"
            self.outcomes.append(StepOutcome(method, None, fatal, time.monotonic() - started, self._whole()))
        return self._report(fatal)

    def _whole(self) -> tuple[int, int, int, int, int, int]:
        logs, requests, notes = self._marks()
        return (0, logs, 0, requests, 0, notes)

    def _report(self, fatal: ClientError | None) -> int:
        plan = self.plan
        core = self.session.core
        outcomes = self.outcomes
        if plan.follow:
            for outcome in outcomes:
                if outcome.error is not None:
                    self.say(error_line(outcome.error))
            return exit_status(next((o.error for o in outcomes if o.error is not None), None))
        if plan.structured:
            envelopes = [
                envelope(
                    o.method,
                    o.duration,
                    o.result,
                    o.error,
                    core.logs[o.captured[0] : o.captured[1]],
                    [r.as_dict() for r in core.server_requests[o.captured[2] : o.captured[3]]],
                    core.notifications[o.captured[4] : o.captured[5]],
                )
                for o in outcomes
            ]
            if plan.script:
                self._print(dumps(envelopes))
            else:
                self._print(dumps(envelopes[-1]))
        else:
            for outcome in outcomes:
                if outcome.error is not None:
                    self.say(error_line(outcome.error))
            if plan.script:
                self._print(dumps([_shown(o) for o in outcomes if o.method != "script"]))
            elif outcomes and (outcomes[-1].error is None or isinstance(outcomes[-1].error, ToolError)):
                self._print(dumps(_shown(outcomes[-1])))
        statuses = [exit_status(o.error) for o in outcomes if o.error is not None]
        return next((s for s in statuses if s != 0), 0)


def _shown(outcome: StepOutcome) -> Any:
    if outcome.error is None:
        return outcome.result
    return outcome.error.result if isinstance(outcome.error, ToolError) else None


def run(plan: RunPlan) -> int:
    """Run ``plan`` in a fresh event loop; returns the exit status."""
    return asyncio.run(Runner(plan).run())
