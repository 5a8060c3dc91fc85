"""Protocol facts live in one module (mcptape.wire.protocol), in step with the installed SDK."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcptape.wire import protocol

PACKAGE = Path(protocol.__file__).resolve().parent.parent


def test_the_revisions_are_the_installed_sdks_in_its_order() -> None:
    from mcp_types import version

    assert protocol.REVISIONS == version.KNOWN_PROTOCOL_VERSIONS
    assert protocol.HANDSHAKE_REVISIONS == version.HANDSHAKE_PROTOCOL_VERSIONS
    assert protocol.MODERN_REVISIONS == version.MODERN_PROTOCOL_VERSIONS


@pytest.mark.parametrize(
    ("version", "minimum", "expected"),
    [
        ("2025-11-25", "2025-11-25", True),
        ("2026-07-28", "2025-11-25", True),
        ("2025-06-18", "2025-11-25", False),
        ("zzz", "2024-11-05", False),  # unknown is treated as oldest, never as newest by string order
        ("2025-11-26", "2024-11-05", False),
    ],
)
def test_revisions_compare_by_their_order_not_as_strings(version: str, minimum: str, expected: bool) -> None:
    assert protocol.at_least(version, minimum) is expected


def test_an_unknown_minimum_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown minimum"):
        protocol.at_least("2025-11-25", "2025-13-01")


def test_method_names_are_spelt_only_in_the_protocol_module() -> None:
    """A method name compared or sent in code comes from wire/protocol.py (docs and the
    built-in servers, which speak through the SDK, may spell them)."""
    names = [
        protocol.INITIALIZE,
        protocol.INITIALIZED,
        protocol.DISCOVER,
        protocol.CANCELLED,
        protocol.PROGRESS,
        protocol.SAMPLING,
        protocol.ELICITATION,
        protocol.ROOTS_LIST,
    ]
    pattern = re.compile("|".join(f'"{re.escape(n)}"' for n in names))
    spelt = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == "wire/protocol.py" or relative.startswith(("servers/", "migrations/")):
            continue
        in_doc = False
        for number, line in enumerate(path.read_text().splitlines(), 1):
            stripped = line.strip()
            if stripped.count('"""') == 1:
                in_doc = not in_doc
                continue
            if in_doc or stripped.startswith("#"):
                continue
            if pattern.search(line.split("  # ")[0]):
                spelt.append(f"{relative}:{number}: {stripped}")
    assert spelt == []
