"""One debug-and-evaluate run: start Node, break, evaluate at every hit, clean up.

The sequence, within one deadline (the tool's ``timeout``):

1. Start the command (``--inspect-brk`` makes Node wait for us before running any
   user code) and read its inspector URL from stderr.
2. Connect, enable Runtime and Debugger, ask V8 to pause before any script that
   has a source map runs, set the breakpoint by URL (plain path or ``file://``),
   then ``Runtime.runIfWaitingForDebugger``.
3. Handle events in arrival order. ``Debugger.scriptParsed`` of a script whose
   source map contains the breakpoint file sets a breakpoint at the mapped
   position; since V8 pauses before that script executes (the instrumentation
   pause, or the initial pause of the main script), the breakpoint is in place
   before its code runs. A pause at one of our breakpoints evaluates the
   expression; every other pause (the initial one, instrumentation, a
   ``debugger;`` statement) is resumed without recording.
4. The run ends when the main execution context is destroyed (the script
   finished: Node then waits for the debugger to leave, so we disconnect), when
   the inspector connection closes (the process exited) or at the deadline.
   Clean-up disconnects, lets a finished process exit on its own for a moment
   and kills the process group if anything in it still runs.

"No loaded script matches the breakpoint file" is reported, rather than waiting
for the timeout, when it is certain: (a) at the initial pause, nothing loaded so
far names or maps the file, no source map on disk names it and the file does not
exist, so no later ``require`` or ``import`` can load it; (b) the process finished without ever loading a script
that names or maps it. A file that exists but is not loaded yet may still be
required later, so that case waits (until exit or timeout) as it must.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

from websockets.exceptions import InvalidHandshake, InvalidURI

from mcptape.servers.debug_script.cdp import CdpClosed, CdpConnection, CdpError, CdpEvent
from mcptape.servers.debug_script.errors import PROCESS_EXITED, DebugScriptError, timeout_message
from mcptape.servers.debug_script.evaluate import OBJECT_GROUP, HitValue, evaluate_on_frame
from mcptape.servers.debug_script.launch import NodeProcess, split_command, with_inspect_brk
from mcptape.servers.debug_script.predict import PredictedLocation, predict_locations, search_roots
from mcptape.servers.debug_script.sourcemap import path_from_url
from mcptape.servers.debug_script.target import BreakpointTarget, url_regex

# After its script ended, Node exits as soon as the debugger disconnects.
_EXIT_GRACE_SECONDS = 1.0
_SCRIPTS_IN_MESSAGES = 5


@dataclass(frozen=True)
class DebugRequest:
    """The tool's arguments: command, breakpoint file and 1-based line, expression, timeout in ms."""

    command: str
    file: str
    line: int
    expression: str
    timeout_ms: float


@dataclass
class DebugOutcome:
    """A run that hit the breakpoint at least once: the values in hit order and how it ended."""

    breakpoint: str
    expression: str
    results: list[HitValue]
    timed_out: bool
    exit: str


@dataclass
class _RunState:
    breakpoint_ids: set[str] = field(default_factory=set)
    matched: bool = False
    scripts: list[str] = field(default_factory=list)
    main_context: int | None = None
    # Generated files whose predicted by-URL breakpoint already covers them.
    predicted_scripts: set[str] = field(default_factory=set)
    results: list[HitValue] = field(default_factory=list)


async def run_debug_session(request: DebugRequest) -> DebugOutcome:
    """Run the command under the debugger and return the expression's value at every hit.

    Raises DebugScriptError for every failure the caller should see as an error
    result, with its final message.
    """
    return await _DebugRun(request).run()


class _DebugRun:
    def __init__(self, request: DebugRequest) -> None:
        self.request = request
        self.target = BreakpointTarget(request.file, request.line)
        self.state = _RunState()

    async def run(self) -> DebugOutcome:
        argv = with_inspect_brk(split_command(self.request.command))
        deadline = asyncio.get_running_loop().time() + self.request.timeout_ms / 1000
        # Reading source maps on disk overlaps with Node's start-up.
        roots = search_roots(argv, os.getcwd())
        predicting = asyncio.ensure_future(
            asyncio.to_thread(predict_locations, self.target.candidates, self.target.line0, roots)
        )
        try:
            process = await NodeProcess.start(argv)
        except BaseException:
            predicting.cancel()
            raise
        cdp: CdpConnection | None = None
        finished = timed_out = False
        try:
            async with asyncio.timeout_at(deadline):
                cdp = await _connect(await process.inspector_url())
                await self._prepare(cdp, await predicting)
                await self._pump(cdp)
                finished = True
        except TimeoutError:
            timed_out = True
        except CdpClosed:
            finished = True  # the process exited while we were still setting up
        except CdpError as error:
            raise DebugScriptError(
                f"The Node.js inspector refused a command: {error}. Is this a Node.js version "
                "without the DevTools Protocol methods debug-script uses (Node 18 or newer works)?"
            ) from error
        finally:
            predicting.cancel()
            try:
                if cdp is not None:
                    await cdp.close()
            finally:
                await process.close(grace=_EXIT_GRACE_SECONDS if finished else 0.0)
        return self._verdict(process, timed_out)

    async def _prepare(self, cdp: CdpConnection, predicted: list[PredictedLocation]) -> None:
        await cdp.send("Runtime.enable")
        await cdp.send("Debugger.enable")
        # An older V8 lacks it: a mapped breakpoint in a lazily loaded script may then come late.
        with contextlib.suppress(CdpError):
            await cdp.send(
                "Debugger.setInstrumentationBreakpoint",
                {"instrumentation": "beforeScriptWithSourceMapExecution"},
            )
        await self._set_by_url(cdp, self.target.url_regex, self.target.line0, 0)
        for location in predicted:
            spellings = {location.script, os.path.realpath(location.script)}
            self.state.predicted_scripts |= spellings
            await self._set_by_url(cdp, url_regex(spellings), location.line, location.column)
        await cdp.send("Runtime.runIfWaitingForDebugger")

    async def _set_by_url(self, cdp: CdpConnection, regex: str, line: int, column: int) -> None:
        response = await cdp.send(
            "Debugger.setBreakpointByUrl", {"urlRegex": regex, "lineNumber": line, "columnNumber": column}
        )
        self.state.breakpoint_ids.add(response["breakpointId"])

    async def _pump(self, cdp: CdpConnection) -> None:
        try:
            while (event := await cdp.next_event()) is not None:
                if await self._handle(cdp, event):
                    return
        except CdpClosed:
            return  # the process went away mid-command: the run is over

    async def _handle(self, cdp: CdpConnection, event: CdpEvent) -> bool:
        """Act on one event; True when the program has finished."""
        params = event.params
        if event.method == "Debugger.scriptParsed":
            await self._on_script_parsed(cdp, params)
        elif event.method == "Debugger.paused":
            await self._on_paused(cdp, params)
        elif event.method == "Runtime.executionContextCreated":
            context = params.get("context") or {}
            if (context.get("auxData") or {}).get("isDefault") and self.state.main_context is None:
                self.state.main_context = context.get("id")
        elif event.method == "Runtime.executionContextDestroyed":
            # vm.createContext() contexts come and go; only the main one ends the program.
            return params.get("executionContextId") in (self.state.main_context, None)
        return False

    async def _on_script_parsed(self, cdp: CdpConnection, params: dict[str, Any]) -> None:
        url = str(params.get("url") or "")
        if not url or url.startswith("node:"):
            return
        self.state.scripts.append(url)
        if self.target.names_script(url):
            self.state.matched = True  # the by-URL breakpoint already covers it
            return
        mapped = self.target.mapped_location(url, str(params.get("sourceMapURL") or ""))
        if mapped is None:
            return
        self.state.matched = True
        path = path_from_url(url)
        if mapped.position is None or (
            path is not None and os.path.normpath(path) in self.state.predicted_scripts
        ):
            return
        line, column = mapped.position
        try:
            response = await cdp.send(
                "Debugger.setBreakpoint",
                {"location": {"scriptId": params["scriptId"], "lineNumber": line, "columnNumber": column}},
            )
        except CdpError:
            return
        self.state.breakpoint_ids.add(response["breakpointId"])

    async def _on_paused(self, cdp: CdpConnection, params: dict[str, Any]) -> None:
        frames = params.get("callFrames") or []
        ours = self.state.breakpoint_ids.intersection(params.get("hitBreakpoints") or [])
        if ours and frames:
            value = await evaluate_on_frame(cdp, frames[0]["callFrameId"], self.request.expression)
            self.state.results.append(value)
            await cdp.send("Runtime.releaseObjectGroup", {"objectGroup": OBJECT_GROUP})
        elif params.get("reason") == "Break on start" and not self._may_still_load():
            raise DebugScriptError(self._no_match_message("the file does not exist"))
        await cdp.send("Debugger.resume")

    def _may_still_load(self) -> bool:
        """Whether a later require or import could still load (or map) the breakpoint file."""
        return (
            self.state.matched
            or bool(self.state.predicted_scripts)
            or any(os.path.exists(path) for path in self.target.candidates)
        )

    def _verdict(self, process: NodeProcess, timed_out: bool) -> DebugOutcome:
        if self.state.results:
            return DebugOutcome(
                breakpoint=self.target.describe(),
                expression=self.request.expression,
                results=self.state.results,
                timed_out=timed_out,
                exit=process.describe_exit() if not timed_out else "stopped at the timeout",
            )
        if timed_out:
            raise DebugScriptError(
                timeout_message(self.request.timeout_ms) + process.inspector_missing_hint()
            )
        if not self.state.matched:
            reason = f"the process exited ({process.describe_exit()}) without loading it"
            raise DebugScriptError(self._no_match_message(reason) + process.stderr_excerpt())
        raise DebugScriptError(PROCESS_EXITED)

    def _no_match_message(self, reason: str) -> str:
        scripts = self.state.scripts
        loaded = ", ".join(scripts[:_SCRIPTS_IN_MESSAGES]) + (
            " ..." if len(scripts) > _SCRIPTS_IN_MESSAGES else ""
        )
        return (
            f"No loaded script matches breakpoint file {self.target.path}: {reason}, and no source map "
            f"of a loaded script names it. Scripts loaded: {loaded or 'none'}. Give the path of a script "
            f"the command runs (relative paths are resolved against {os.getcwd()}), or of a source that "
            "its source maps name."
        )


async def _connect(url: str) -> CdpConnection:
    try:
        return await CdpConnection.connect(url)
    except (OSError, InvalidHandshake, InvalidURI) as error:
        raise DebugScriptError(
            f"Cannot connect to the Node.js inspector at {url}: {error}. Is another debugger attached?"
        ) from error
