"""A proxy against the server behind it (``--direct``): the scenarios whose verdicts differ.

A difference *breaks* when the proxy does worse: it fails where the direct connection
did not, or a feature that passes directly is not offered (or fails) through it (a
proxy that does not pass the client's capabilities on hides sampling, for one). The
other differences are listed too: a proxy that passes what the direct connection cannot
(DELETE through an HTTP proxy in front of a stdio server) breaks nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcptape.probe.context import FAIL, PASS
from mcptape.probe.runner import ProbeReport, Result


@dataclass(frozen=True)
class Difference:
    """One scenario with different verdicts through the proxy and directly."""

    proxy: Result
    direct: Result

    @property
    def breaks(self) -> bool:
        return breaks(self.proxy.status, self.direct.status)

    @property
    def detail(self) -> str:
        """Why, in the words of the side that did worse."""
        return self.direct.detail if self.proxy.status == PASS else self.proxy.detail


def breaks(proxy: str, direct: str) -> bool:
    """Whether a scenario that is ``direct`` without the proxy and ``proxy`` through it is the proxy's fault."""
    if proxy == direct:
        return False
    return (proxy == FAIL) or (direct == PASS)


def differences(proxy: ProbeReport, direct: ProbeReport) -> list[Difference]:
    """The scenarios of both reports whose verdicts differ, in the proxy report's order."""
    theirs = direct.by_id()
    out = []
    for mine in proxy.results:
        other = theirs.get(mine.scenario.id)
        if other is not None and other.status != mine.status:
            out.append(Difference(mine, other))
    return out
