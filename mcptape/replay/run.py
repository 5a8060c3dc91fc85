"""`replay`: a tape player as the client link and a freshly started server, compared with the recording.

One recording at a time: the server is started, re-driven with the recorded client
frames through the relay (so the replay is recorded like any session, mode ``replay``,
``replay_of`` the original), shut down as a client leaving would, and the result is
compared with the recording.
"""

from __future__ import annotations

import gc
import json
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcptape.assemble import OwnStore, SessionPlan, assemble
from mcptape.proxy.early_signals import catch_early, take_early
from mcptape.proxy.link import Link
from mcptape.proxy.links.process import ProcessLink, SpawnError
from mcptape.redact import redact_command
from mcptape.replay.compare import DIFFERS, ExchangeResult, SessionResult, compare_tapes, cut_short
from mcptape.replay.matchers import Difference
from mcptape.replay.normalise import Normaliser
from mcptape.replay.player import TapePlayer
from mcptape.replay.tape import Tape, TapeFrame
from mcptape.terminal import say as _say
from mcptape.wire.protocol import DISCOVER

PROGRESS_EVERY = 250


@dataclass
class ReplayPlan:
    """What ``mcptape replay`` was asked to do for each recording."""

    argv: list[str]
    env: dict[str, str] | None
    cwd: str | None
    description: str
    db: str | None
    record: bool = True
    normaliser: Normaliser = field(default_factory=Normaliser)
    timeout: float = 30.0
    grace: float = 2.0
    echo_stderr: bool = False
    progress: bool = True
    rules: Any = None  # mcptape.rules.rules.Rules: the user's injection rules, asked before the recording
    # A remote server (--url, or a remote --upstream entry): a fresh link to it per recording.
    upstream_link: Callable[[], Link] | None = None
    transport: str = "stdio"
    otlp: str | None = None  # an OTLP/HTTP receiver: export spans and metrics there
    # The signals that stop a replay (the command line's; none where a host process owns
    # its signals). Noted from the end of one session to the next.
    signals: tuple[int, ...] = ()


@dataclass
class Replayed:
    """A recording replayed: the comparison, the frames the replay exchanged, how it ended."""

    result: SessionResult
    frames: list[TapeFrame]
    interrupted_by: int | None = None


def _progress(source: str, total: int) -> Callable[[int, int], None] | None:
    if total < PROGRESS_EVERY:
        return None

    def report(done: int, _total: int) -> None:
        if done % PROGRESS_EVERY == 0:
            _say(f"{source}: {done}/{total} exchanges sent")

    return report


async def replay_tape(tape: Tape, plan: ReplayPlan) -> Replayed:
    """Replay one recording against a new server process; never raises for a server that fails."""
    # The recordings read so far are long-lived: keep the cyclic collector from walking
    # them again and again while the replay allocates (it took a third of a replay's time).
    gc.freeze()
    server: Link
    if plan.upstream_link is not None:
        description = plan.description  # the URL, redacted by the command line already
        server = plan.upstream_link()
    else:
        _, description = redact_command(plan.argv, plan.description)  # secrets never reach the database
        try:
            server = ProcessLink.spawn(plan.argv, env=plan.env, cwd=plan.cwd, echo_stderr=plan.echo_stderr)
        except SpawnError as exc:
            return Replayed(SessionResult(tape.source, [], error=str(exc)), [])
    report = _progress(tape.source, len(tape.exchanges)) if plan.progress else None
    player = TapePlayer(tape, timeout=plan.timeout, progress=report)
    if plan.rules:
        player.answer = rules_answer(plan.rules, player)
    session_plan = SessionPlan(
        "replay",
        f"tape->{plan.transport}",
        description,
        replay_of=tape.session_id,
        store=OwnStore(plan.db) if plan.record else None,
        grace=plan.grace,
        otlp=plan.otlp,
    )
    session = assemble(session_plan, player, server)
    if session.store is not None:
        # Nobody is waiting on a replay's first frame: open the store (while the server
        # starts) before driving, rather than holding frames for it mid-replay.
        await session.store.opened()
    outcome = await session.run(plan.signals)
    if plan.signals:
        # Writing the frames and comparing may take a while: a signal now ends the replay
        # after this recording, and one after the signal that stopped it gives up.
        catch_early(plan.signals, after=session.stopped_by)
    replay_id = None
    if session.store is not None:
        if not await session.finish_store():
            _say(f"warning: the replay of {tape.source} could not be recorded fully into {session.where()}")
        replay_id = session.store.session_id
    cut_by = session.stopped_by  # the signals that stopped the session (late ones come after it)
    stopped_by = cut_by + (take_early() if plan.signals else [])
    replayed = player.replayed_tape()
    results = compare_tapes(tape, replayed, plan.normaliser)
    if cut_by:
        cut_short(results)  # what had no answer yet was stopped, not left unanswered by the server
    if player.notifications_dropped:
        results.append(_flood(tape, player))
    error = None
    if not _server_answered(player.seen):
        # Nothing came from the server: the replay could not run (a server that died, a URL
        # nobody answers), unless the server is merely silent (reported per exchange).
        unreachable = _link_error(player.seen)
        if outcome.status == "error" or unreachable:
            # The link's own words (cannot reach ..., and why) say more than how the session ended.
            error = unreachable or outcome.error or "the server ended before answering"
            error += _revision_hint(tape, error)
    interrupted = signal.Signals(cut_by[0]).name if cut_by else None
    return Replayed(
        SessionResult(
            tape.source, [] if error else results, replay_id=replay_id, error=error, interrupted=interrupted
        ),
        player.seen,
        stopped_by[0] if stopped_by else None,
    )


def _flood(tape: Tape, player: TapePlayer) -> ExchangeResult:
    """The notifications a flooding server sent beyond what the player keeps: a difference of its own."""
    recorded = len(tape.loose) + sum(len(e.notifications) for e in tape.exchanges)
    sent = player.notifications_kept + player.notifications_dropped
    why = f"{sent} sent; the first {player.notifications_kept} were kept and compared, the rest counted"
    return ExchangeResult(
        0, "notifications", None, DIFFERS, [Difference("notifications sent in all", recorded, why)]
    )


def rules_answer(rules: Any, player: TapePlayer) -> Callable[[dict[str, Any]], dict[str, Any] | None]:
    """The player's hook asking injection rules about a live server request."""
    from mcptape.rules.rules import RuleContext

    def answer(request: dict[str, Any]) -> dict[str, Any] | None:
        method = request.get("method")
        if not isinstance(method, str):
            return None
        found = rules.answer(method, request.get("params"), RuleContext(player.tool_in_flight()))
        if found is None:
            return None
        return {"result": found.result} if found.kind == "result" else {"error": found.error}

    return answer


def _revision_hint(tape: Tape, error: str) -> str:
    """Why a server may refuse every request of a 2026-07-28 recording: it speaks an earlier revision."""
    first = tape.exchanges[0].method if tape.exchanges else None
    if first == DISCOVER and "answered HTTP 4" in error:
        return " (the recording speaks 2026-07-28, without a session: does this server?)"
    return ""


def _server_answered(frames: list[TapeFrame]) -> bool:
    return any(f.direction == "s2c" and f.origin == "server" for f in frames)


def _link_error(frames: list[TapeFrame]) -> str | None:
    """The message of the first error mcptape's server link answered in the server's place."""
    for frame in frames:
        if frame.direction == "s2c" and frame.origin == "proxy":
            for message in frame.messages:
                error = message.get("error") if isinstance(message, dict) else None
                if isinstance(error, dict) and isinstance(error.get("message"), str):
                    return str(error["message"]).removeprefix("mcptape: ")
    return None


def write_jsonl(path: Path, frames: list[TapeFrame]) -> None:
    """Write frames in the format ``mcptape export`` writes, replacing ``path`` only when complete.

    The file keeps its mode (a recording only its owner may read stays so), and a symlink
    stays a symlink: the file it points to is the one replaced.
    """
    import base64
    import contextlib
    import os
    import tempfile

    target = path.resolve()
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o600
    start = frames[0].ts if frames else 0.0
    # mkstemp creates the file exclusively (never through a planted symlink), readable by us alone.
    fd, partial = tempfile.mkstemp(prefix=target.name + ".", suffix=".partial", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for frame in frames:
                obj: dict[str, object] = {"dir": frame.direction, "t": round(frame.ts - start, 6)}
                try:
                    obj["frame"] = frame.data.decode("utf-8")
                except UnicodeDecodeError:
                    obj["frame"] = frame.data.decode("utf-8", errors="replace")
                    obj["raw_b64"] = base64.b64encode(frame.data).decode("ascii")
                if frame.origin == "proxy":
                    obj["origin"] = "proxy"
                out.write(json.dumps(obj) + "\n")
            os.fchmod(out.fileno(), mode)
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
