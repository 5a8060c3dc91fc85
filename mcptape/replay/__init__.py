"""Replay: recordings turned into regression tests and mock servers.

- ``tape`` reads a recording (a session of the store, or an export) into steps and exchanges;
- ``normalise``, ``matchers``, ``book`` and ``compare`` are pure: what to leave out, how two
  messages differ, which recorded answer fits a request, and the reports (text, JSON, JUnit);
- ``player`` is the client-facing link that re-drives a live server (``mcptape replay``,
  assembled in ``run``); ``mock`` is the server-facing link that plays a recording's server
  side to a live client (``mcptape serve``, assembled in ``serving``);
- ``pytest_plugin`` offers both as fixtures; ``schema_diff`` and ``answer_diff`` compare two
  recordings (``mcptape diff``).
"""
