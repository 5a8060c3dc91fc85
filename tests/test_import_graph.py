"""No import circle in the package: each module's imports, read from its source, form no cycle.

Every import counts, also one inside a function or under ``TYPE_CHECKING``: a circle
there still says two modules are one piece split in two files (the architecture issue
found ``gateway.py`` and ``sse_server.py`` so). A circle is reported with the names
each module takes from the next, to show what to move.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers.paths import ROOT

PACKAGE = ROOT / "mcptape"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py") if "migrations" not in path.parts}


def imports(path: Path, known: dict[str, Path]) -> dict[str, set[str]]:
    """The package's modules ``path`` imports, each with the names it takes from it."""
    found: dict[str, set[str]] = {}
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    found.setdefault(alias.name, set())
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in known:  # `from mcptape.view import api`: the module api
                    found.setdefault(submodule, set())
                elif base in known:
                    found.setdefault(base, set()).add(alias.name)
    return found


def circles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_circle() -> None:
    known = modules()
    graph = {}
    for name, path in known.items():
        taken = imports(path, known)
        taken.pop(name, None)
        # A package's face imports its own modules; a module naming its package's face is
        # the same dependency read backwards, not a circle of the code.
        graph[name] = {
            target: names
            for target, names in taken.items()
            if not (path.name == "__init__.py" and target.startswith(name + "."))
            and not name.startswith(target + ".")
        }
    found = circles(graph)
    described = [
        " -> ".join(
            f"{a} ({', '.join(sorted(graph[a].get(b, ()))) or 'module'})"
            for a, b in zip(c, [*c[1:], c[0]], strict=True)
        )
        for c in found
    ]
    assert found == [], "\n".join(described)


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b": {"x"}}, "b": {"c": set()}, "c": {"a": {"y"}}, "d": {"a": set()}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b": set()}, "b": {}}) == []


def test_the_command_line_sits_on_top_nothing_below_imports_it() -> None:
    """``mcptape.cli`` turns arguments into calls of the layers below; a module down there
    that reaches back up for a helper (the table writer, a safe-text function) means the
    helper lives in the wrong place (it belongs in :mod:`mcptape.terminal` or its layer).
    Entry points (``__main__`` modules: ``python -m mcptape.servers.recordings``) run a
    command, and sit on top with it."""
    known = modules()
    upward = sorted(
        f"{name} imports {target}"
        for name, path in known.items()
        if not (name == "mcptape.cli" or name.startswith("mcptape.cli.") or name.endswith("__main__"))
        for target in imports(path, known)
        if target == "mcptape.cli" or target.startswith("mcptape.cli.")
    )
    assert upward == []
