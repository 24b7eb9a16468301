"""The rules docs/architecture.md states, checked where a program can check them: results/ the floor, steps that
import only steps before them, settings/ (the options and the steps built from them) under plugin/ and cli/, the
roof; no import circle; which folders may import torch or pytest, and how; and modules and functions a reader can
hold. Each rule is stated per folder, so that a new module is covered the day it is written."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers import REPO

PACKAGE = REPO / "pytest_gotchas"

HEAVY = {"torch", "transformers", "vllm"}
PYTEST = {"pytest", "_pytest"}

# The page's last column, per folder: "no" imports neither, even inside a function; "torch, lazily" imports torch,
# transformers or vLLM only inside functions, so that importing the package stays light; "pytest; torch, lazily"
# adds pytest (the roof). Read from the page itself, so that the rule checked is the rule stated.
ARCHITECTURE = REPO / "docs" / "architecture.md"
RULES = {"no": (HEAVY | PYTEST, set()), "torch, lazily": (PYTEST, HEAVY), "pytest; torch, lazily": (set(), HEAVY)}


def folder_rules() -> dict[str, tuple[set[str], set[str]]]:
    """folder -> (what it never imports, what it imports only inside functions), from the floors' table."""
    rules = {}
    for row in re.findall(r"^\| \d+ \| (.+?) \| .+? \| (.+?) \|$", ARCHITECTURE.read_text(encoding="utf-8"), re.M):
        for folder in re.findall(r"`([\w.]+?)(?:/|\.py)`", row[0]):
            rules[folder] = RULES[row[1]]
    rules["__main__"] = rules["cli"]  # `python -m pytest_gotchas`, the command's other door
    return rules


# Inside the floors that may import torch, the modules that the pure tests and the type-only readers rely on: the
# cut's arithmetic, the alignment of two members, the text reading's tree, and the backend protocol with its
# registry.
PURE_IN_TORCH_FLOORS = ("scoring.cut", "scoring.align", "scoring.tree", "backends.protocol", "backends")

# pytest's private API, used in one module that runs under the oldest and the newest pytest CI knows.
PRIVATE_PYTEST_ONLY_IN = "plugin.compat"

# Lines of code: blank lines and lines that are only a comment are not counted (docs/architecture.md says so).
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


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
    """(modules of the package it imports, top-level names of everything else it imports, anywhere in the file)."""
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


def at_import(tree: ast.Module) -> set[str]:
    """Top-level names of what a module imports when it is imported: outside functions, and outside an
    `if TYPE_CHECKING:` block (which runs only under the type checker)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.add((node.module or "").split(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return names


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def test_the_page_states_a_rule_for_every_floor() -> None:
    assert set(folder_rules()) == set(FLOORS)


def test_each_folder_imports_torch_and_pytest_only_as_the_page_allows() -> None:
    rules = folder_rules()
    wrong = []
    for name, path in package_modules().items():
        if not name:
            continue
        never, only_lazily = rules[floor_of(name)]
        outer = GRAPH[name][1]
        wrong += [f"{name} imports {m} (its folder never may)" for m in sorted(outer & never)]
        eager = at_import(ast.parse(path.read_text(encoding="utf-8"))) & only_lazily
        wrong += [f"{name} imports {m} at import time (only inside a function)" for m in sorted(eager)]
    assert not wrong, wrong


def test_the_pure_modules_in_the_torch_floors_import_neither() -> None:
    for name in PURE_IN_TORCH_FLOORS:
        assert not GRAPH[name][1] & (HEAVY | PYTEST), name


def test_only_compat_uses_the_private_pytest_api() -> None:
    users = sorted(name for name, (_, outer) in GRAPH.items() if "_pytest" in outer)
    assert users == [PRIVATE_PYTEST_ONLY_IN]


def test_the_rules_see_a_new_module_in_any_folder() -> None:
    """The per-folder rule, not a list of modules: a module no test names is checked like the rest."""
    tree = ast.parse("import torch\n\ndef f():\n    import transformers\n")
    assert at_import(tree) == {"torch"}
    guarded = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n")
    assert at_import(guarded) == {"typing"}


def code_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def test_no_module_is_over_400_lines_of_code() -> None:
    long = [(path.name, n) for path in PACKAGE.rglob("*.py")
            if (n := code_lines(path.read_text(encoding="utf-8"))) > MAX_MODULE_LINES]
    assert not long, long


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
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{module_name(path)}:{node.name} ({length} lines)")
    assert not long, long
