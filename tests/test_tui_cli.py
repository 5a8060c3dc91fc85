"""`mcptape tui`'s command line: what it refuses, in one line, before anything starts."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from mcptape.cli.main import cli


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["tui", *args])
    return result.exit_code, result.output


def test_without_the_extra_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "textual", None)  # as if `pip install mcptape` without [tui]
    code, output = _run("--upstream", "demo")
    assert (
        code == 2
        and output.strip() == "mcptape: error: mcptape tui needs Textual: pip install 'mcptape[tui]'"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ((), "no server: give --upstream NAME (with --config FILE), -- COMMAND, or --url URL"),
        (("--upstream", "no-such-entry"), "unknown upstream 'no-such-entry'"),
        (("--url", "ftp://x"), "is not an http:// or https:// URL"),
        (("--upstream", "demo", "--protocol-version", "1999-01-01"), "unknown protocol version '1999-01-01'"),
        (("--upstream", "demo", "--handle-sampling", "{nope"), "--handle-sampling"),
        (("--upstream", "demo", "--roots", "not a uri"), "is not a URI"),
        (("--upstream", "demo", "--", "sh"), "give one server"),
    ],
)
def test_a_bad_server_or_option_is_one_line(args: tuple[str, ...], said: str) -> None:
    code, output = _run(*args)
    lines = output.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("mcptape: error: ") and said in lines[0], (
        output
    )
