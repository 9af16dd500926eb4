"""The exporter's import graph (every import statement, function-level ones too): no module imports one that
imports it back, and the exporter never imports the instrumentation (DESIGN "Package layout")."""

from __future__ import annotations

import ast
from pathlib import Path

import spanfold

SRC = Path(spanfold.__file__).parent


def _graph() -> dict[str, set[str]]:
    mods: dict[str, Path] = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        mods[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                # ``from pkg import sub`` imports pkg.sub; ``from pkg import name`` imports pkg
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for target in targets:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


def test_no_exporter_module_imports_one_that_imports_it_back() -> None:
    graph = _graph()
    exporter = sorted(m for m in graph if m.startswith("spanfold.exporter."))
    assert "spanfold.exporter.steps" in exporter and "spanfold.exporter.worker" in exporter
    cycles = [m for m in exporter if m in _reaches(graph, m)]
    assert cycles == []


def test_the_exporter_never_imports_the_instrumentation() -> None:
    graph = _graph()
    edges = [
        (m, t)
        for m in graph
        if m.startswith("spanfold.exporter")
        for t in graph[m]
        if t.startswith("spanfold.instrumentation")
    ]
    assert edges == []
