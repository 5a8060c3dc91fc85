"""Pure parts of `serve --pace`: reading the option, and the pauses one answer is played with."""

from __future__ import annotations

import asyncio

import pytest

from mcptape.replay import pace as pace_module
from mcptape.replay.pace import MAX_GAP_S, NOTIFICATION_PAUSE_S, Pace, PaceError, Pacer, parse_pace


def test_pace_reads_recorded_fast_and_a_factor() -> None:
    assert parse_pace("recorded") == Pace(1.0)
    assert parse_pace("FAST") == Pace(None)
    assert parse_pace("2.5") == Pace(2.5)
    for bad in ("0", "-1", "slow", "", "inf", "nan"):
        with pytest.raises(PaceError, match="expected recorded, fast, or a factor above 0"):
            parse_pace(bad)


def test_recorded_gaps_are_capped_and_divided_by_the_factor() -> None:
    assert Pace(1.0).gap(0.25) == 0.25
    assert Pace(1.0).gap(60.0) == MAX_GAP_S
    assert Pace(4.0).gap(0.4) == pytest.approx(0.1)
    assert Pace(None).gap(0.4) == 0.0
    assert Pace(1.0).gap(-0.1) == 0.0  # a clock that went back


class Clock:
    """time.monotonic and asyncio.sleep for the pacer: sleeping moves the clock, and is noted."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


def play(pace: Pace, script: list[tuple[str, float, float]], monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Play (kind, recorded ts, time the send itself takes) items; the pauses the pacer took."""
    clock = Clock()
    monkeypatch.setattr(pace_module.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(pace_module.asyncio, "sleep", clock.sleep)

    async def run() -> None:
        pacer = Pacer(pace)
        for kind, ts, busy in script:
            await pacer.wait(ts, answer=kind == "answer")
            pacer.sent(ts, notification=kind == "notification")
            clock.now += busy  # a server request waits for the client's answer meanwhile

    asyncio.run(run())
    return clock.slept


ANSWER = [
    ("notification", 10.0, 0.0),
    ("notification", 10.3, 0.0),
    ("call", 10.5, 0.15),
    ("answer", 12.0, 0.0),
]


def test_recorded_pace_plays_the_gaps_less_the_time_spent_waiting_for_the_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 0.3 s, then 0.2 s, then 1.5 s capped at 1 s less the 0.15 s the client took to answer.
    assert play(Pace(1.0), ANSWER, monkeypatch) == [0.3, 0.2, MAX_GAP_S - 0.15]
    assert play(Pace(2.0), ANSWER, monkeypatch) == [0.15, 0.1, 0.35]


def test_at_the_fastest_pace_a_notification_and_the_answer_after_it_are_still_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    burst = [("notification", 10.0, 0.0), ("notification", 10.0, 0.0), ("answer", 10.0, 0.0)]
    assert play(Pace(None), burst, monkeypatch) == [NOTIFICATION_PAUSE_S]
    assert play(Pace(1.0), burst, monkeypatch) == [NOTIFICATION_PAUSE_S]
    # After a server request (the client answered meanwhile) the answer needs no pause.
    assert play(Pace(None), [("call", 10.0, 0.0), ("answer", 10.0, 0.0)], monkeypatch) == []
