"""Whether a pause belongs to the requested line, and where each hit was.

V8 places a breakpoint at the first breakable position at or after the requested
line, and that position can be far away: a line in a function V8 has not compiled
resolves into the next function that has code (``neverCalled``'s body line 2 ends
up in ``called`` on line 5), a line after the last statement ends up at the end of
the module. Counting such pauses returns plausible values from the wrong place.

The rule here: a pause counts when it is on the requested line, or on a later
line reached only across lines without code of their own (blank, comment-only,
or bare brackets such as ``}``), which is how V8 and editors slide a breakpoint.
Every line in between that holds code means the breakpoint left the requested
line's code, and the pause is refused.

Everything here is pure: source text and positions in, verdicts out. Lines are
0-based inside, 1-based in what the caller sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

# Lines made only of these are no statement V8 could stop at on their own.
_BRACKETS: Final = frozenset("{}()[];,")
# Comments, string and template literals (unterminated ones run to the end), runs of
# whitespace and brackets, runs of anything else, and a lone slash (division, regex).
_TOKEN: Final = re.compile(
    r"//[^\n]*"
    r"|/\*[\s\S]*?(?:\*/|$)"
    r"|\"(?:\\[\s\S]|[^\"\\\n])*\"?"
    r"|'(?:\\[\s\S]|[^'\\\n])*'?"
    r"|`(?:\\[\s\S]|[^`\\])*`?"
    r"|[\s{}()\[\];,]+"
    r"|[^\s{}()\[\];,/'\"`]+"
    r"|/"
)


def code_lines(text: str) -> list[bool]:
    """For each 0-based line of JavaScript or TypeScript source: whether it holds code.

    Comments (``//`` and ``/* */``, across lines too) and bracket-only lines are not
    code; every line a string or template literal touches is.
    """
    result = [False] * (text.count("\n") + 1)
    line = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        newlines = token.count("\n")
        if first in "'\"`":
            for covered in range(line, line + newlines + 1):
                result[covered] = True
        elif not token.startswith(("//", "/*")) and not (first.isspace() or first in _BRACKETS):
            result[line] = True
        line += newlines
    return result


def slide_allowed(code: list[bool] | None, requested: int, landed: int) -> bool:
    """Whether a pause on 0-based line ``landed`` stands for a breakpoint on ``requested``.

    The same line always does; a later one only across lines without code. With
    no source text (``code`` None) only the same line does.
    """
    if landed == requested:
        return True
    if landed < requested or code is None:
        return False
    return not any(code[line] for line in range(requested, min(landed, len(code))))


@dataclass(frozen=True, slots=True)
class HitLocation:
    """Where a hit paused, in the breakpoint file's terms: 1-based line and column, function name.

    ``function`` is V8's name for the paused function: empty for top-level code and
    anonymous functions.
    """

    line: int
    column: int
    function: str

    def as_json(self) -> dict[str, Any]:
        """The ``line``, ``column`` and ``function`` fields beside a hit's value."""
        return {"line": self.line, "column": self.column, "function": self.function}

    def describe(self) -> str:
        """``line 5, column 13, in called()`` for messages."""
        where = f"in {self.function}()" if self.function else "in top-level code or an anonymous function"
        return f"line {self.line}, column {self.column}, {where}"


def refusal_note(requested: int, landed: HitLocation, code: list[bool] | None) -> str:
    """Why pauses at ``landed`` were not counted for the 1-based ``requested`` line."""
    skipped = [
        line + 1
        for line in range(requested - 1, min(landed.line - 1, len(code or [])))
        if code and code[line]
    ]
    if landed.line < requested:
        past = f"before line {requested}"
    elif skipped:
        past = f"past the code on line {skipped[0]}" + (
            f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        )
    else:
        past = f"away from line {requested}"
    return (
        f"V8 placed the breakpoint for line {requested} at {landed.describe()}, {past}, so it is not line "
        f"{requested}'s code (a function that never runs, or code after the last statement?): "
        "those pauses were not counted."
    )


def slide_note(requested: int, landed: int) -> str:
    """That a breakpoint on a line without code stops at the next line that has some."""
    return f"Line {requested} holds no code; the breakpoint stops at line {landed}, the next line with code."


def no_code_note(requested: int, landed: int | None) -> str:
    """A TypeScript line that compiled to no JavaScript (an interface, a type): nothing to stop at."""
    after = f"; the next line with code is {landed}" if landed is not None else ""
    return (
        f"Line {requested} compiles to no JavaScript (a type-only line such as an interface or type "
        f"declaration), so there is nothing to stop at{after}."
    )
