"""The layout design.md asks for: results/ the floor, steps that import only steps before them, settings/ (the
options and the steps built from them) under plugin/ and cli/, the roof; no import circle, a pure core, and modules
and functions a reader can hold."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import REPO

PACKAGE = REPO / "pytest_gotchas"

# Imports neither pytest nor torch nor transformers, even inside functions.
PURE = ("cases.transcript", "cases.chapter", "truth.check", "results.verdict", "results.schema", "results.rollup",
        "baseline.store", "baseline.compare", "scoring.cut", "settings.options", "results.report", "report.wording",
        "results.onepass", "scoring.align", "results.patching", "results.formats", "results.reading",
        "backends.protocol", "backends", "results.merging", "report.wording_merge")


# The floors, lowest first: a folder imports only folders below it. files.py (atomic writes, locks) is a shared
# utility under every floor; results/ (the schema and the pure rules) is the floor every step may import. backends/
# (one module per reading backend behind backends/protocol.py) stands on model/'s loading and under scoring, which
# calls only the protocol. settings/ (the options, and the steps wired from them) is read by both plugin/ and cli/,
# so it lies under both. docs/architecture.md says why each floor is where it is.
FLOORS = ("files", "results", "cases", "truth", "model", "backends", "scoring", "baseline", "report", "settings",
          "plugin", "cli", "__main__")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> tuple[set[str], set[str]]:
    """(modules of the package it imports, top-level names of everything else it imports)."""
    name = module_name(path)
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".") if name else []
    inner, outer = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1] if node.level > 1 else package
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                candidate = f"{target}.{alias.name}" if target else alias.name
                inner.add(candidate if (PACKAGE / Path(*candidate.split("."))).with_suffix(".py").exists()
                          or (PACKAGE / Path(*candidate.split("."))).is_dir() else target)
        elif isinstance(node, ast.ImportFrom):
            outer.add((node.module or "").split(".")[0])
        elif isinstance(node, ast.Import):
            outer.update(alias.name.split(".")[0] for alias in node.names)
    return {i for i in inner if i}, outer


GRAPH = {module_name(p): imports(p) for p in PACKAGE.rglob("*.py")}


def test_no_import_circle() -> None:
    def visit(name: str, path: list[str]) -> None:
        for target in sorted(GRAPH.get(name, (set(), set()))[0]):
            assert target not in path, " -> ".join([*path, target])
            visit(target, [*path, target])

    for name in GRAPH:
        visit(name, [name])


def test_the_pure_core_imports_no_pytest_and_no_torch() -> None:
    for name in PURE:
        _, outer = GRAPH[name]
        assert not outer & {"pytest", "torch", "transformers", "_pytest"}, name


def test_no_module_is_over_400_lines_of_code() -> None:
    for path in PACKAGE.rglob("*.py"):
        code = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
                and not line.strip().startswith("#")]
        assert len(code) <= 400, (path.name, len(code))


def floor_of(module: str) -> str:
    return module.split(".")[0] if module else ""


def test_each_folder_imports_only_the_floors_below_it() -> None:
    for name, (inner, _) in GRAPH.items():
        if not name:
            continue
        floor = FLOORS.index(floor_of(name))
        for target in inner:
            assert floor_of(target) == floor_of(name) or FLOORS.index(floor_of(target)) < floor, (name, target)


def test_the_floors_name_every_folder() -> None:
    assert {floor_of(name) for name in GRAPH if name} == set(FLOORS)


def test_no_function_is_over_60_lines() -> None:
    """Counted from the def to the last line of the body, docstring and comments included."""
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    long.append(f"{module_name(path)}:{node.name} ({length} lines)")
    assert not long, long
