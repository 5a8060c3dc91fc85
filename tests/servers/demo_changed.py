"""The built-in demo server with one regression, for replay tests: ``weather`` reports humidity 1 higher.

Everything else is the demo server itself (``mcptape.servers.demo``), so a replay of a
demo recording against this server differs in exactly one field:
``/result/structuredContent/humidity_percent`` (and the same number in the text content).
Run: ``python tests/servers/demo_changed.py`` (stdio).
"""

from __future__ import annotations

from mcptape.servers import demo


def weather(city: str) -> demo.Forecast:
    """A made-up forecast for a city, one humidity point off the demo's."""
    forecast = demo.weather(city)
    forecast["humidity_percent"] += 1
    return forecast


# The same description as the demo's: tools/list must not change.
weather.__doc__ = demo.weather.__doc__

# Re-register in the demo's order (tools/list must not change): weather, then those after it.
for name in ("weather", "countdown", "fail"):
    demo.server.remove_tool(name)
demo.server.tool(name="weather")(weather)
demo.server.tool()(demo.countdown)
demo.server.tool()(demo.fail)

if __name__ == "__main__":
    demo.main()
