"""Running the scenarios against a target: each on a fresh, recorded session of the client core.

Each scenario gets a :class:`~mcptape.client.session.CallSession` of its own (mode
``probe``, named ``PREFIX:SCENARIO``), so one that breaks its session (a 16 MiB frame a
proxy refuses, a cancellation) cannot change another's verdict, and ``--jobs`` of them
run at once. Each is bounded by the scenario time limit, its session included.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mcptape.client.core import Timeouts
from mcptape.client.errors import ClientError, ConnectError
from mcptape.client.session import CallSession, SessionOptions, Target, close_fully
from mcptape.probe.answers import CLIENT_CAPABILITIES
from mcptape.probe.context import (
    DEFAULT_REVISION,
    FAIL,
    NOT_OFFERED,
    PASS,
    Failed,
    NotOffered,
    Probe,
    failure_of,
    short,
)
from mcptape.probe.scenarios import Scenario

CLOSE_WAIT = 10.0  # a session whose server hangs on shutdown must not hold the run


@dataclass
class ProbeSettings:
    """How to probe: the revision of the scenarios that do not choose one, limits, recording."""

    version: str | None = None
    timeout: float = 20.0
    connect_timeout: float = 15.0
    jobs: int = 4
    db: str | None = None
    record: bool = True
    name: str = "probe"


@dataclass
class Result:
    """One scenario's verdict against one target."""

    scenario: Scenario
    status: str
    detail: str
    seconds: float
    revision: str | None = None
    session_id: str | None = None
    unreachable: bool = False  # the target could not even be started or reached


@dataclass
class ProbeReport:
    """Every verdict against one target, in the scenarios' order."""

    target: str
    results: list[Result] = field(default_factory=list)
    recorded: str | None = None  # the database the sessions went into

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    def by_id(self) -> dict[str, Result]:
        return {r.scenario.id: r for r in self.results}


class Unreachable(Exception):
    """The target could not be started or reached at all: no scenario can say anything."""


async def run_scenario(
    target: Target, scenario: Scenario, settings: ProbeSettings
) -> tuple[Result, str | None]:
    """Run one scenario on sessions of its own; its result and where they were recorded."""
    probe = Probe(settings.version or DEFAULT_REVISION, settings.timeout)
    sessions: list[CallSession] = []

    async def opener(version: str | None) -> CallSession:
        limit = max(settings.timeout - 1, 1.0)
        options = SessionOptions(
            db=settings.db,
            record=settings.record,
            timeouts=Timeouts(min(settings.connect_timeout, limit), limit, limit),
            protocol_version=version,
            handler=probe.answers,
            capabilities=CLIENT_CAPABILITIES,
            on_message=probe.on_message,
            on_frame=probe.on_frame,
            mode="probe",
            say=lambda text: None,  # what goes wrong is the verdict's detail
            retry_delays=(0.5,),
        )
        session = CallSession(dataclasses.replace(target, name=f"{settings.name}:{scenario.id}"), options)
        sessions.append(session)
        await session.open()
        return session

    probe.opener = opener
    started = time.monotonic()
    unreachable: ClientError | None = None
    where = None
    try:
        try:
            async with asyncio.timeout(settings.timeout):
                if not scenario.opens:
                    await probe.open()
                detail = await scenario.check(probe)
            status = PASS
        except NotOffered as exc:
            status, detail = NOT_OFFERED, str(exc)
        except Failed as exc:
            status, detail = FAIL, str(exc)
        except TimeoutError:
            status, detail = FAIL, f"did not end within {settings.timeout:g} s"
        except ConnectError as exc:
            status, detail, unreachable = FAIL, failure_of(exc), exc
        except ClientError as exc:
            status, detail = FAIL, failure_of(exc)
        except Exception as exc:  # a bug of the probe's must not end the run: it is this verdict
            status, detail = FAIL, f"the probe itself failed: {type(exc).__name__}: {short(str(exc))}"
        seconds = time.monotonic() - started
    finally:
        # Also when the run is interrupted (a signal cancels it): servers are shut down,
        # sessions written.
        interrupted = False
        for session in sessions:
            interrupted = await close_fully(session, CLOSE_WAIT) or interrupted
            where = session.where() or where
        if interrupted:
            raise asyncio.CancelledError
    revision = sessions[-1].hello.protocol_version if sessions and sessions[-1].hello else None
    store = sessions[-1].session.store if sessions and sessions[-1].session else None
    result = Result(scenario, status, detail, seconds, revision, store.session_id if store else None)
    result.unreachable = unreachable is not None and revision is None
    return result, where


async def run_probe(
    target: Target,
    scenarios: Sequence[Scenario],
    settings: ProbeSettings,
    on_result: Callable[[Result], None] | None = None,
    gate: asyncio.Semaphore | None = None,
) -> ProbeReport:
    """Every scenario against ``target``; raises :class:`Unreachable` when the first cannot even connect.

    The first scenario runs alone: a target that cannot be reached is said once, not as
    one failure per scenario. ``gate`` bounds how many run at once (shared by the proxy
    and direct runs of ``--direct``).
    """
    gate = gate or asyncio.Semaphore(max(1, settings.jobs))
    report = ProbeReport(target.description)

    async def one(scenario: Scenario) -> Result:
        async with gate:
            result, where = await run_scenario(target, scenario, settings)
        report.recorded = report.recorded or where
        if on_result is not None:
            on_result(result)
        return result

    if not scenarios:
        return report
    lead = next((s for s in scenarios if not s.opens), scenarios[0])
    first = await one(lead)
    if first.unreachable:
        raise Unreachable(f"cannot probe {target.description}: {first.detail}")
    rest = await asyncio.gather(*(one(s) for s in scenarios if s is not lead))
    done = {r.scenario.id: r for r in (first, *rest)}
    report.results = [done[s.id] for s in scenarios]
    return report
