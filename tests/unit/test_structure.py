"""The layout design.md asks for: steps that import only steps before them, and a pure core."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import REPO

PACKAGE = REPO / "pytest_gotchas"

# Imports neither pytest nor torch nor transformers, even inside functions.
PURE = ("cases.transcript", "cases.chapter", "truth.check", "results.verdict", "results.schema", "results.rollup",
        "baseline.store", "baseline.compare", "scoring.cut", "plugin.options", "results.report", "report.wording")


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


def test_no_module_is_over_450_lines_of_code() -> None:
    for path in PACKAGE.rglob("*.py"):
        code = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
                and not line.strip().startswith("#")]
        assert len(code) <= 450, (path.name, len(code))
