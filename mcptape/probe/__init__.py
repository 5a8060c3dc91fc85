"""``mcptape probe``: does a server, or a proxy in front of it, carry every feature of MCP?

A built-in set of scenarios (:mod:`mcptape.probe.scenarios`), each a few steps of the
client core that ``call`` uses (:class:`~mcptape.client.session.CallSession`) on a fresh,
recorded session, ends in a verdict: pass, fail, or not offered (the server has no
capability or no tool for it). :mod:`mcptape.probe.runner` runs them,
:mod:`mcptape.probe.compare` keeps what differs between a proxy and the server behind
it, :mod:`mcptape.probe.report` writes the table, JSON, JUnit and SARIF.
"""
