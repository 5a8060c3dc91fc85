"""The suite's own shape: helpers in tests/helpers/, no test module importing another, tiers marked."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

TESTS = ROOT / "tests"
# What a test module may import from the suite: the helpers, and the servers it starts or reads.
SHARED = ("tests.helpers", "tests.servers")


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """Every module ``source`` (a module of ``package``) imports, relative imports made absolute."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *([base] if base else [])])
            found.append((node.lineno, base))
            # `from tests import test_x` imports the module tests.test_x.
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names if base == "tests"]
    return found


def package_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).parent.parts)


def test_no_test_module_imports_another_test_module_or_the_conftest() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted(TESTS.rglob("*.py"))
        if "npm" not in path.relative_to(TESTS).parts
        for line, name in imported_modules(path.read_text(encoding="utf-8"), package_of(path))
        if name.startswith("tests.") and not name.startswith(SHARED)
    ]
    assert offenders == [], "test modules import only tests.helpers and tests.servers:\n" + "\n".join(
        offenders
    )


def test_the_top_of_tests_holds_only_test_modules() -> None:
    loose = sorted(
        p.name
        for p in TESTS.glob("*.py")
        if not p.name.startswith("test_") and p.name not in {"conftest.py", "__init__.py"}
    )
    assert loose == [], f"shared helpers go in tests/helpers/: {loose}"


def test_the_check_sees_every_spelling_of_an_import_of_a_test_module() -> None:
    source = (
        "from tests.test_replay import DEMO\nimport tests.conftest\nfrom tests import test_x\n"
        "from .test_y import z\nfrom ..test_w import v\nfrom tests.helpers.db import query\n"
    )
    names = {name for _, name in imported_modules(source, "tests.sub")}
    assert {
        "tests.test_replay",
        "tests.conftest",
        "tests.test_x",
        "tests.sub.test_y",
        "tests.test_w",
    } <= names
    assert [n for n in names if n.startswith("tests.") and not n.startswith(SHARED)] != []
    assert "tests.helpers.db" in names


def test_the_guard_refuses_every_way_of_starting_a_process_and_remembers_it() -> None:
    import asyncio
    import os
    import subprocess
    import sys

    from tests.helpers.process_guard import ProcessGuard, ProcessInFastTier

    guard = ProcessGuard()
    original = subprocess.Popen._execute_child  # type: ignore[attr-defined]
    guard.install()
    try:
        with pytest.raises(ProcessInFastTier):
            subprocess.run([sys.executable, "-c", "pass"], check=False)

        async def spawn() -> None:
            await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")

        with pytest.raises(ProcessInFastTier):
            asyncio.run(spawn())
        with pytest.raises(ProcessInFastTier):
            os.system("true")
        with pytest.raises(ProcessInFastTier):
            os.fork()
    finally:
        guard.uninstall()
    assert len(guard.tried) == 4 and sys.executable in guard.tried[0]
    assert subprocess.Popen._execute_child is original  # type: ignore[attr-defined]


GUARDED_MODULE = """
import subprocess

import pytest


@pytest.fixture(scope="module")
def server():
    yield
    subprocess.run(["true"], check=True)  # a module's server, stopped by a process


@pytest.mark.slow
def test_uses_the_server(server):
    pass


def test_in_process_and_last(): # the module's fixture is torn down in its teardown
    pass
"""

SPAWNING_MODULE = """
import subprocess

import pytest


@pytest.fixture
def spawned():
    subprocess.run(["true"], check=False)


def test_spawns_in_its_setup(spawned):
    pass


def test_spawns_and_catches_the_error():
    try:
        subprocess.run(["true"], check=False)
    except Exception:
        pass
"""


@pytest.mark.slow
def test_the_guard_blames_a_test_for_its_own_processes_not_a_module_fixture_torn_down_after_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_runtest_call, pytest_runtest_makereport, pytest_runtest_setup  # noqa: F401\n"
    )
    (tmp_path / "test_a_guarded.py").write_text(GUARDED_MODULE)
    (tmp_path / "test_b_spawning.py").write_text(SPAWNING_MODULE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-rA",
            "-q",
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout
    assert "PASSED test_a_guarded.py::test_uses_the_server" in out
    assert "PASSED test_a_guarded.py::test_in_process_and_last" in out
    assert "ERROR test_b_spawning.py::test_spawns_in_its_setup" in out
    assert "FAILED test_b_spawning.py::test_spawns_and_catches_the_error" in out
    for blamed in ("test_spawns_in_its_setup", "test_spawns_and_catches_the_error"):
        assert f"test_b_spawning.py::{blamed} starts a process but is not marked slow" in out, out
    assert "test_a_guarded.py::test_in_process_and_last starts a process" not in out, out
