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
   expression, once, if the pause is where the requested line is (see
   ``locations``: V8 may resolve a line into another function, and a pause there
   is refused with a note); every other pause (the initial one,
   instrumentation, a ``debugger;`` statement) is resumed without recording.
   A script whose source map names the breakpoint file is always read through
   its map, even when its URL is the file itself (tsx serves ``util.ts`` as
   ``util.ts``, compiled, with an inline map).
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

from mcptape.servers.debug_script.arguments import DebugRequest
from mcptape.servers.debug_script.cdp import CdpClosed, CdpConnection, CdpError, CdpEvent
from mcptape.servers.debug_script.errors import PROCESS_EXITED, DebugScriptError, format_ms, timeout_message
from mcptape.servers.debug_script.evaluate import (
    HitValue,
    choose_form,
    evaluate_on_frame,
)
from mcptape.servers.debug_script.launch import NodeProcess, split_command, with_inspect_brk
from mcptape.servers.debug_script.locations import (
    HitLocation,
    no_code_note,
    slide_allowed,
)
from mcptape.servers.debug_script.pauses import PauseLocator
from mcptape.servers.debug_script.policy import CommandPolicy
from mcptape.servers.debug_script.predict import PredictedLocation, predict_locations, search_roots
from mcptape.servers.debug_script.sourcemap import path_from_url
from mcptape.servers.debug_script.target import BreakpointTarget, url_regex

__all__ = ["DebugOutcome", "DebugRequest", "Hit", "run_debug_session"]

# After its script ended, Node exits as soon as the debugger disconnects.
_EXIT_GRACE_SECONDS = 1.0
_SCRIPTS_IN_MESSAGES = 5
_METHOD_NOT_FOUND = -32601
_JAVASCRIPT_SUFFIXES = (".js", ".mjs", ".cjs")


@dataclass(frozen=True, slots=True)
class Hit:
    """One counted hit: the expression's value and where the program was paused."""

    value: HitValue
    location: HitLocation

    def as_json(self) -> dict[str, Any]:
        """``{"type", "value", "line", "column", "function"}`` (plus ``truncated``/``escaped``)."""
        result = self.value.as_json()
        return {"type": result.pop("type"), "value": result.pop("value"), **self.location.as_json(), **result}


@dataclass
class DebugOutcome:
    """A run that hit the breakpoint at least once: the hits in order, how it ended, what to know."""

    breakpoint: str
    expression: str
    results: list[Hit]
    timed_out: bool
    exit: str
    notes: list[str] = field(default_factory=list)


@dataclass
class _RunState:
    breakpoint_ids: set[str] = field(default_factory=set)
    # The by-URL breakpoint on the file's own line number.
    raw_id: str = ""
    # Breakpoints that only hold a compiled module at its start (never a hit of their own).
    entry_ids: set[str] = field(default_factory=set)
    matched: bool = False
    scripts: list[str] = field(default_factory=list)
    main_context: int | None = None
    # Generated files whose predicted by-URL breakpoint already covers them.
    predicted_scripts: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    form: str = ""
    budget: int = 0
    evaluating: HitLocation | None = None
    results: list[Hit] = field(default_factory=list)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


async def run_debug_session(request: DebugRequest, policy: CommandPolicy | None = None) -> DebugOutcome:
    """Run the command under the debugger and return the expression's value at every hit.

    Raises DebugScriptError for every failure the caller should see as an error
    result, with its final message.
    """
    return await _DebugRun(request, policy or CommandPolicy()).run()


class _DebugRun:
    def __init__(self, request: DebugRequest, policy: CommandPolicy) -> None:
        self.request = request
        self.policy = policy
        self.target = BreakpointTarget(request.file, request.line)
        self.state = _RunState(budget=request.max_total_length)
        self.pauses = PauseLocator(self.target, self.state.note)

    async def run(self) -> DebugOutcome:
        argv = split_command(self.request.command)
        self.policy.check(argv)
        argv = with_inspect_brk(argv)
        deadline = asyncio.get_running_loop().time() + self.request.timeout_ms / 1000
        # Reading the breakpoint file and source maps on disk overlaps with Node's start-up.
        roots = search_roots(argv, os.getcwd())
        predicting = asyncio.ensure_future(asyncio.to_thread(self._read_disk, roots))
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
            self._expression_did_not_return()
        except CdpClosed:
            finished = True  # the process exited while we were still setting up
        except CdpError as error:
            hint = (
                " Node 18 or newer has every DevTools Protocol method debug-script uses."
                if error.code == _METHOD_NOT_FOUND
                else ""
            )
            raise DebugScriptError(f"The Node.js inspector refused a command: {error}.{hint}") from error
        finally:
            predicting.cancel()
            try:
                if cdp is not None:
                    await cdp.close()
            finally:
                await process.close(grace=_EXIT_GRACE_SECONDS if finished else 0.0)
        return self._verdict(process, timed_out)

    def _read_disk(self, roots: list[str]) -> list[PredictedLocation]:
        """Off the event loop: which lines of the breakpoint file hold code, and predicted locations."""
        line_count = self.target.line_count()
        if line_count is not None and self.request.line > line_count:
            raise DebugScriptError(
                f"breakpoint.line {self.request.line} is past the end of {self.target.path}, "
                f"which has {line_count} line{'s' if line_count != 1 else ''}."
            )
        return predict_locations(self.target.candidates, self.target.line0, roots)

    async def _prepare(self, cdp: CdpConnection, predicted: list[PredictedLocation]) -> None:
        await cdp.send("Runtime.enable")
        await cdp.send("Debugger.enable")
        self.state.form = await choose_form(cdp, self.request.expression)
        # An older V8 lacks it: a mapped breakpoint in a lazily loaded script may then come late.
        with contextlib.suppress(CdpError):
            await cdp.send(
                "Debugger.setInstrumentationBreakpoint",
                {"instrumentation": "beforeScriptWithSourceMapExecution"},
            )
        self.state.raw_id = await self._set_by_url(cdp, self.target.url_regex, self.target.line0, 0)
        if not self.target.path.endswith(_JAVASCRIPT_SUFFIXES):
            # A loader (tsx) may serve this very file compiled, as an ES module: V8 makes no
            # pause before a module runs, so stop at its first statement, by which time its
            # scriptParsed has set the mapped breakpoint.
            response = await cdp.send(
                "Debugger.setBreakpointByUrl",
                {"urlRegex": self.target.url_regex, "lineNumber": 0, "columnNumber": 0},
            )
            self.state.entry_ids.add(response["breakpointId"])
        for location in predicted:
            spellings = {location.script, os.path.realpath(location.script)}
            self.state.predicted_scripts |= spellings
            await self._set_by_url(cdp, url_regex(spellings), location.line, location.column)
        await cdp.send("Runtime.runIfWaitingForDebugger")

    async def _set_by_url(self, cdp: CdpConnection, regex: str, line: int, column: int) -> str:
        response = await cdp.send(
            "Debugger.setBreakpointByUrl", {"urlRegex": regex, "lineNumber": line, "columnNumber": column}
        )
        breakpoint_id = str(response["breakpointId"])
        self.state.breakpoint_ids.add(breakpoint_id)
        return breakpoint_id

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
        script_id = str(params.get("scriptId"))
        source_map_url = str(params.get("sourceMapURL") or "")
        names = self.target.names_script(url)
        path = path_from_url(url)
        predicted = path is not None and os.path.normpath(path) in self.state.predicted_scripts
        if names or predicted:
            self.state.matched = True
            self.pauses.remember(script_id, url, source_map_url)
        if not source_map_url or (predicted and not names):
            # Our file itself (the by-URL breakpoint covers it), no map to read, or a
            # predicted script whose map is read when it first pauses.
            return
        mapped = await asyncio.to_thread(self.target.script_map, url, source_map_url)
        self.pauses.maps[script_id] = mapped
        if mapped is None:
            return
        # Even when the URL names our file, the code is generated (tsx): go through the map.
        self.state.matched = True
        self.pauses.remember(script_id, url, source_map_url)
        landing = mapped.source_map.landing(mapped.source, self.target.line0)
        if landing is None:
            self.state.note(no_code_note(self.request.line, None))
            return
        line, column, original_line = landing
        if not slide_allowed(self.target.code(), self.target.line0, original_line):
            self.state.note(no_code_note(self.request.line, original_line + 1))
            return
        if predicted:
            return
        try:
            response = await cdp.send(
                "Debugger.setBreakpoint",
                {"location": {"scriptId": script_id, "lineNumber": line, "columnNumber": column}},
            )
        except CdpError:
            return
        self.state.breakpoint_ids.add(response["breakpointId"])

    async def _on_paused(self, cdp: CdpConnection, params: dict[str, Any]) -> None:
        frames = params.get("callFrames") or []
        ours = self.state.breakpoint_ids.intersection(params.get("hitBreakpoints") or [])
        if ours == {self.state.raw_id} and frames and self.pauses.compiled(frames[0]):
            # The file's own line number means nothing in its compiled code (tsx): the
            # breakpoint set through its map is the one that counts there.
            ours = set()
        if ours and frames:
            location = await self.pauses.where(frames[0])
            if location is not None:
                await self._evaluate(cdp, frames[0]["callFrameId"], location)
        elif params.get("reason") == "Break on start" and not self._may_still_load():
            raise DebugScriptError(self._no_match_message("the file does not exist"))
        await cdp.send("Debugger.resume")

    async def _evaluate(self, cdp: CdpConnection, call_frame_id: str, location: HitLocation) -> None:
        state = self.state
        limit = min(self.request.max_value_length, state.budget)
        state.evaluating = location
        try:
            value = await evaluate_on_frame(cdp, call_frame_id, state.form, limit)
        except CdpClosed:
            # `process.exit()` in the expression: the hit happened, its evaluation ended the program.
            state.results.append(
                Hit(
                    HitValue("error", "The process exited while the expression was being evaluated."),
                    location,
                )
            )
            state.evaluating = None
            raise
        state.evaluating = None
        state.budget = max(0, state.budget - value.length())
        state.results.append(Hit(value, location))

    def _expression_did_not_return(self) -> None:
        location = self.state.evaluating
        if location is None:
            return
        message = (
            f"The expression did not return within the timeout of {format_ms(self.request.timeout_ms)} ms "
            "(an endless loop or a wait in the expression?); the process was stopped."
        )
        self.state.results.append(Hit(HitValue("error", message), location))

    def _may_still_load(self) -> bool:
        """Whether a later require or import could still load (or map) the breakpoint file."""
        return (
            self.state.matched
            or bool(self.state.predicted_scripts)
            or any(os.path.exists(path) for path in self.target.candidates)
        )

    def _verdict(self, process: NodeProcess, timed_out: bool) -> DebugOutcome:
        notes = self.state.notes
        if self.state.results:
            return DebugOutcome(
                breakpoint=self.target.describe(),
                expression=self.request.expression,
                results=self.state.results,
                timed_out=timed_out,
                exit=process.describe_exit() if not timed_out else "stopped at the timeout",
                notes=notes,
            )
        suffix = "".join(f" {note}" for note in notes)
        if timed_out:
            message = timeout_message(self.request.timeout_ms) + process.inspector_missing_hint()
            raise DebugScriptError(message + ("." + suffix if suffix else ""))
        if not self.state.matched:
            reason = f"the process exited ({process.describe_exit()}) without loading it"
            raise DebugScriptError(self._no_match_message(reason) + process.stderr_excerpt())
        raise DebugScriptError(PROCESS_EXITED + ("." + suffix if suffix else ""))

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
