"""Check the tool's arguments and say, in one line, what is wrong with them.

The SDK's own validation answers a bad call with a pydantic dump (``1 validation
error for debug_scriptArguments ... For further information visit ...``) and no
``structuredContent``. These checks run on the raw ``arguments`` object instead,
so every mistake gets one sentence naming the argument, what was expected and
what came, as the tool's ordinary error result.

:func:`parse_arguments` is pure: plain values in, a :class:`DebugRequest` or a
:class:`DebugScriptError` out. :data:`INPUT_SCHEMA` is what ``tools/list``
advertises; the checks here enforce the same rules.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass
from typing import Any, Final

from mcptape.servers.debug_script.errors import DebugScriptError
from mcptape.servers.debug_script.transport import LONE_SURROGATE_KEY

DEFAULT_MAX_VALUE_LENGTH: Final = 10_000
DEFAULT_MAX_TOTAL_LENGTH: Final = 2_000_000
# V8 keeps line numbers in a signed 32-bit integer.
MAX_LINE: Final = 2**31 - 1
_REQUIRED: Final = ("command", "breakpoint", "expression", "timeout")
_OPTIONAL: Final = ("max_value_length", "max_total_length")
_EXAMPLE_COMMAND: Final = "node --inspect-brk=0 ./test.js"


@dataclass(frozen=True)
class DebugRequest:
    """The tool's arguments, checked: command, breakpoint file and 1-based line, expression, timeout in ms.

    ``max_value_length`` bounds one value's text (characters), ``max_total_length``
    all values of one response together; what goes past is cut and counted.
    """

    command: str
    file: str
    line: int
    expression: str
    timeout_ms: float
    max_value_length: int = DEFAULT_MAX_VALUE_LENGTH
    max_total_length: int = DEFAULT_MAX_TOTAL_LENGTH


INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "description": f"Command starting Node.js with --inspect-brk=<port>, e.g. {_EXAMPLE_COMMAND} "
            "(0 picks a free port; a plain `node script.js` gets --inspect-brk=0 added).",
        },
        "breakpoint": {
            "type": "object",
            "description": "Where to stop: {file, line}.",
            "properties": {
                "file": {
                    "type": "string",
                    "description": "Script or source file; relative paths are resolved against the "
                    "server's working directory.",
                },
                "line": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LINE,
                    "description": "1-based line number, as editors show it.",
                },
            },
            "required": ["file", "line"],
            "additionalProperties": False,
        },
        "expression": {
            "type": "string",
            "description": "JavaScript expression evaluated once in the paused frame at each hit.",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Time limit for the whole run, in milliseconds.",
        },
        "max_value_length": {
            "type": "integer",
            "minimum": 1,
            "default": DEFAULT_MAX_VALUE_LENGTH,
            "description": "Longest text kept of one value (a string, or an object's JSON), in characters; "
            "the rest is cut and the hit says how much in `truncated`.",
        },
        "max_total_length": {
            "type": "integer",
            "minimum": 1,
            "default": DEFAULT_MAX_TOTAL_LENGTH,
            "description": "Characters of value text one response carries in all; later values are cut.",
        },
    },
    "required": list(_REQUIRED),
    "additionalProperties": False,
}


def parse_arguments(arguments: Any) -> DebugRequest:
    """Check raw tool arguments and build the request; raise DebugScriptError with a one-line reason."""
    if not isinstance(arguments, dict):
        raise DebugScriptError(
            f"arguments must be an object with {', '.join(_REQUIRED)}; got {_kind(arguments)}."
        )
    if LONE_SURROGATE_KEY in arguments:
        raise DebugScriptError(_surrogate_message(str(arguments[LONE_SURROGATE_KEY])))
    unknown = sorted(key for key in arguments if key not in _REQUIRED + _OPTIONAL)
    if unknown:
        raise DebugScriptError(
            f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
            f"expected {', '.join(_REQUIRED)} (and optionally {', '.join(_OPTIONAL)})."
        )
    missing = [key for key in _REQUIRED if key not in arguments]
    if missing:
        raise DebugScriptError(
            f"missing required argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
            f'e.g. {{"command": "{_EXAMPLE_COMMAND}", "breakpoint": {{"file": "test.js", "line": 5}}, '
            '"expression": "i", "timeout": 5000}.'
        )
    _reject_lone_surrogates(arguments, "arguments")
    command = _string(arguments["command"], "command", f"the command line, e.g. {_EXAMPLE_COMMAND}")
    breakpoint = _breakpoint(arguments["breakpoint"])
    file = _string(breakpoint["file"], "breakpoint.file", "the script or source file, e.g. ./test.js")
    line = _whole(breakpoint["line"], "breakpoint.line", "1-based, as editors show lines", MAX_LINE)
    expression = _string(
        arguments["expression"], "expression", "the JavaScript expression to evaluate at each hit, e.g. i"
    )
    timeout = _timeout(arguments["timeout"])
    return DebugRequest(
        command,
        file,
        line,
        expression,
        timeout,
        _whole(arguments.get("max_value_length", DEFAULT_MAX_VALUE_LENGTH), "max_value_length", "characters"),
        _whole(arguments.get("max_total_length", DEFAULT_MAX_TOTAL_LENGTH), "max_total_length", "characters"),
    )


def _breakpoint(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        # Some clients send an object argument as JSON text; accept that form too.
        with contextlib.suppress(ValueError, RecursionError):
            value = json.loads(value)
    if not isinstance(value, dict):
        raise DebugScriptError(
            f'breakpoint must be an object {{"file": ..., "line": ...}}; got {_kind(value)}.'
        )
    unknown = sorted(key for key in value if key not in ("file", "line"))
    if unknown:
        raise DebugScriptError(
            f"breakpoint has unknown field {', '.join(map(repr, unknown))}: expected only file and line."
        )
    missing = [key for key in ("file", "line") if key not in value]
    if missing:
        raise DebugScriptError(
            f'breakpoint is missing {" and ".join(missing)}: expected {{"file": "test.js", "line": 5}}.'
        )
    return value


def _string(value: Any, name: str, expected: str) -> str:
    if not isinstance(value, str):
        extra = (
            " (one string, split like a shell would)" if name == "command" and isinstance(value, list) else ""
        )
        raise DebugScriptError(f"{name} must be a string{extra}: {expected}; got {_kind(value)}.")
    if not value.strip():
        raise DebugScriptError(f"{name} is empty: give {expected}.")
    return value


def _whole(value: Any, name: str, unit: str, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DebugScriptError(f"{name} must be a whole number ({unit}); got {_kind(value)}.")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise DebugScriptError(f"{name} must be a whole number ({unit}); got {value!r}.")
    number = int(value)
    if number < 1:
        raise DebugScriptError(f"{name} must be 1 or more ({unit}); got {number}.")
    if maximum is not None and number > maximum:
        raise DebugScriptError(f"{name} must be at most {maximum} ({unit}); got {number}.")
    return number


def _timeout(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DebugScriptError(f"timeout must be a number of milliseconds, e.g. 5000; got {_kind(value)}.")
    if not math.isfinite(value) or value <= 0:
        raise DebugScriptError(f"timeout must be a positive number of milliseconds, e.g. 5000; got {value}.")
    return float(value)


def _reject_lone_surrogates(value: Any, where: str) -> None:
    """A string holding half a UTF-16 pair can name no file and cannot be answered back in UTF-8."""
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise DebugScriptError(_surrogate_message(where)) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _reject_lone_surrogates(key, where)
            _reject_lone_surrogates(item, f"{where}.{key}" if where != "arguments" else str(key))
    elif isinstance(value, list):
        for item in value:
            _reject_lone_surrogates(item, where)


def _surrogate_message(where: str) -> str:
    return (
        f"{where} holds a lone UTF-16 surrogate (half of a pair, such as \\ud83d alone), which is not "
        "text; inside a JavaScript string literal write it as a \\u escape (\\\\ud83d in JSON) instead."
    )


def _kind(value: Any) -> str:
    """What a JSON value is, for messages: ``a list``, ``the number 4.5``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {json.dumps(value[:40])}{'...' if len(value) > 40 else ''}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
