"""The floors of docs/architecture.md, checked on the source: the ground floor imports neither half;
instrumentation/ and exporter/ never import each other, and inside each the folders stack in one order; ``ui`` sits
below the commands; no folder is crowded; no module imports one that imports it back."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "spanfold"
GROUND = ("spanfold.semconv", "spanfold.trace", "spanfold.config", "spanfold.content", "spanfold.counters",
          "spanfold.version", "spanfold.codecs", "spanfold.stitching", "spanfold.host_check",
          "spanfold.text", "spanfold.pricing", "spanfold.sampling",
          # the public API's modules that import neither half (spanfold.agent opens a context)
          "spanfold.api.context", "spanfold.api.processor", "spanfold.api.baggage")  # fmt: skip
HALVES = ("spanfold.instrumentation", "spanfold.exporter")
ABOVE = ("spanfold.setup", "spanfold.zero_code", "spanfold.bootstrap", "spanfold.demo", "spanfold.commands",
         "spanfold.cli", "spanfold.checks", "spanfold.ui", "spanfold.run_report",
         # the public API's decorators, over the instrumentation's tool spans; spanfold.score, over the file writers
         "spanfold.api.tool", "spanfold.api.agent", "spanfold.api.score")  # fmt: skip
#: The source's stitching state (the process's conversations, the tool calls its runs asked): the exporter folds spans
#: from any process and must never read this one's.
SOURCE_STATE = ("spanfold.stitching.conversations", "spanfold.stitching.asked")
#: Each half's floors, lowest first: a floor imports only the floors below it (and modules of its own).
INSTRUMENTATION_FLOORS = (
    ("spanfold.instrumentation.toolkit",),
    ("spanfold.instrumentation.invocations",),
    ("spanfold.instrumentation.providers", "spanfold.instrumentation.frameworks", "spanfold.instrumentation.stores"),
    ("spanfold.instrumentation.registry", "spanfold.instrumentation.threads"),
)
EXPORTER_FLOORS = (
    ("spanfold.exporter.records", "spanfold.exporter.steps", "spanfold.exporter.forks"),
    ("spanfold.exporter.dialects",),
    ("spanfold.exporter.runs",),
    ("spanfold.exporter.fold",),
    ("spanfold.exporter.otlp",),
    ("spanfold.exporter.files",),
    ("spanfold.exporter.pipeline",),
)
#: A folder of more modules than this no longer says what is inside it.
MAX_MODULES_PER_FOLDER = 13


def _name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """The spanfold modules ``path`` imports (all of them, or only those imported when it is imported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    nodes = ast.walk(tree) if not top_level_only else _top_level(tree.body)
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            for alias in node.names:  # ``from pkg import submodule`` depends on the submodule, not on pkg's body
                full = f"{base}.{alias.name}"
                out.add(full if full in MODULE_NAMES else base)
    return {name for name in out if name.startswith("spanfold")}


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements run at import: the module body, and the bodies of its top-level try/if blocks (not functions)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.Try):
            out += _top_level(stmt.body) + [s for h in stmt.handlers for s in _top_level(h.body)]
        elif isinstance(stmt, ast.If) and not (isinstance(stmt.test, ast.Name) and stmt.test.id == "TYPE_CHECKING"):
            out += _top_level(stmt.body) + _top_level(stmt.orelse)
    return out


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}
MODULE_NAMES = frozenset(MODULES)


def _resolve(name: str) -> str | None:
    """The module an imported name lives in (``spanfold.semconv.parts.text`` -> ``spanfold.semconv.parts``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_floors() -> None:
    setup = {_resolve(n) for n in _imports(MODULES["spanfold.setup"], top_level_only=False)}
    assert {
        "spanfold.exporter.pipeline.processor",
        "spanfold.instrumentation.registry",
    } <= setup  # the checker sees imports
    problems = []
    for module, path in MODULES.items():
        targets = {t for t in (_resolve(n) for n in _imports(path, top_level_only=False)) if t}
        for target in targets:
            if _under(module, GROUND) and _under(target, HALVES + ABOVE):
                problems.append(f"{module} (ground floor) imports {target}")
            if _under(module, ("spanfold.instrumentation",)) and _under(target, ("spanfold.exporter", *ABOVE)):
                problems.append(f"{module} imports {target}")
            if _under(module, ("spanfold.exporter",)) and _under(target, ("spanfold.instrumentation", *ABOVE)):
                problems.append(f"{module} imports {target}")
            if _under(module, ("spanfold.exporter",)) and _under(target, SOURCE_STATE):
                problems.append(f"{module} reads the source's stitching state {target}")
    assert problems == []


def _floor(module: str, floors: tuple[tuple[str, ...], ...]) -> int | None:
    return next((i for i, floor in enumerate(floors) if _under(module, floor)), None)


def test_floors_inside_each_half() -> None:
    """The toolkit imports no provider or framework, providers and frameworks not each other, the registry them only by
    name; records/steps -> dialects -> runs -> fold -> otlp codecs -> files -> pipeline, each importing only what is
    below."""
    problems = []
    for floors in (INSTRUMENTATION_FLOORS, EXPORTER_FLOORS):
        for module, path in MODULES.items():
            here = _floor(module, floors)
            if here is None:
                continue
            for target in {t for t in (_resolve(n) for n in _imports(path, top_level_only=False)) if t}:
                there = _floor(target, floors)
                if there is None:
                    continue
                if there > here or (there == here and _package(module, floors) != _package(target, floors)):
                    problems.append(f"{module} imports {target}")
    assert problems == []


def _package(module: str, floors: tuple[tuple[str, ...], ...]) -> str:
    """The package of its floor a module is in (providers and frameworks share a floor and import neither other)."""
    return next(p for floor in floors for p in floor if _under(module, (p,)))


def test_every_module_has_a_floor() -> None:
    """A new module lands in a folder the floors name, so the checks above cover it."""
    homeless = [
        m
        for m in MODULES
        if _under(m, HALVES)
        and m not in HALVES
        and _floor(m, INSTRUMENTATION_FLOORS) is None
        and _floor(m, EXPORTER_FLOORS) is None
    ]
    assert homeless == []


def test_ui_sits_below_the_commands() -> None:
    """``spanfold ui`` is one of the commands: ``commands/ui.py`` imports the ``ui`` package, never the other way."""
    problems = [
        f"{module} imports {target}"
        for module, path in MODULES.items()
        if _under(module, ("spanfold.ui",))
        for target in {t for t in (_resolve(n) for n in _imports(path, top_level_only=False)) if t}
        if _under(target, ("spanfold.commands", "spanfold.cli"))
    ]
    assert problems == []


def test_no_folder_holds_more_than_about_a_dozen_modules() -> None:
    folders: dict[Path, int] = {}
    for path in MODULES.values():
        if path.name != "__init__.py":
            folders[path.parent] = folders.get(path.parent, 0) + 1
    crowded = {str(p.relative_to(SRC)): n for p, n in folders.items() if n > MAX_MODULES_PER_FOLDER}
    assert crowded == {}


def test_no_module_imports_one_that_imports_it_back() -> None:
    graph = {
        module: {t for t in (_resolve(n) for n in _imports(path, top_level_only=True)) if t and t != module}
        for module, path in MODULES.items()
    }
    # a package's __init__ importing its own submodules is how packages re-export: not a cycle of modules
    cycles = []
    for module, targets in graph.items():
        for target in targets:
            if module in _reach(graph, target) and not (
                module.startswith(target + ".") or target.startswith(module + ".")
            ):
                cycles.append(f"{module} -> {target}")
    assert cycles == []


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        node = stack.pop()
        for nxt in graph.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
