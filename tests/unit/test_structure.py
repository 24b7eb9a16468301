"""The rules docs/architecture.md states, checked where a program can check them, read from the page itself so that
the rule checked is the rule stated: the floors and their order (its table), a folder that imports only the floors
below it and nothing of another folder of its own floor, no import circle; which folders may import torch or pytest,
and how (the table's last column, per folder), and the modules of the torch floors that import neither; the one
module of pytest's private API; a closed set's attribute compared with its members, never with a bare string; and
modules and functions a reader can hold. Each rule is stated per folder, so that a new module is covered the day it
is written."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers import REPO

PACKAGE = REPO / "pytest_gotchas"
ARCHITECTURE = REPO / "docs" / "architecture.md"
PAGE = ARCHITECTURE.read_text(encoding="utf-8")

HEAVY = {"torch", "transformers", "vllm"}
PYTEST = {"pytest", "_pytest"}

# The page's last column: "no" imports neither, even inside a function; "torch, lazily" imports torch, transformers or
# vLLM only inside functions, so that importing the package stays light, never pytest; "pytest" imports pytest, never
# torch; "pytest; torch, lazily" adds torch inside functions (the roof). (what it never imports, only inside functions)
RULES = {"no": (HEAVY | PYTEST, set()), "torch, lazily": (PYTEST, HEAVY), "pytest; torch, lazily": (set(), HEAVY),
         "pytest": (HEAVY, set())}
COMMAND = ("__main__", "cli")  # `python -m pytest_gotchas`, the command's other door, is the command's folder

# Lines of code: blank lines and lines that are only a comment are not counted (docs/architecture.md says so).
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def floor_table() -> dict[str, tuple[int, str]]:
    """folder (or top-level module) -> (its floor, its last column), from the page's table of floors."""
    table = {}
    for level, folders, rule in re.findall(r"^\| (\d+) \| (.+?) \| .+? \| (.+?) \|$", PAGE, re.M):
        for folder in re.findall(r"`([\w.]+?)(?:/|\.py)`", folders):
            table[folder] = (int(level), rule)
    return table


FLOORS = floor_table()


def stated(pattern: str) -> list[str]:
    """The modules (package paths written as `folder/module.py`) that one sentence of the page's rules names."""
    found = re.search(pattern, PAGE, re.S)
    assert found is not None, pattern
    return [path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            for path in re.findall(r"`([\w/]+\.py)`", found[0])]


# Inside the floors that may import torch, the modules the pure tests and the type-only readers rely on (the page:
# "... import neither").
PURE_IN_TORCH_FLOORS = stated(r"never pytest; (.*?) import neither")
# pytest's private API, in one module that runs under the oldest and the newest pytest CI knows.
PRIVATE_PYTEST_ONLY_IN = stated(r"The only private pytest API is used in `[\w/.]+`")


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


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}
GRAPH = {name: imports(path) for name, path in MODULES.items()}


def folder_of(module: str) -> str:
    """The folder (or top-level module) a module of the package is in, as the page's table names it."""
    top = module.split(".")[0] if module else ""
    return COMMAND[1] if top == COMMAND[0] else top


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


def test_the_table_names_every_folder_once_with_a_rule_the_test_knows() -> None:
    assert {folder_of(name) for name in GRAPH if name} == set(FLOORS)
    assert {rule for _, rule in FLOORS.values()} <= set(RULES)
    assert FLOORS["files"][0] == 0 and FLOORS["results"][0] == 1  # the ground floor and the schema's


def test_each_folder_imports_only_the_floors_below_it() -> None:
    """Nothing upward, and nothing of another folder of its own floor (plugin/ and cli/ are the roof's two faces)."""
    wrong = []
    for name, (inner, _) in GRAPH.items():
        if not name:
            continue
        folder = folder_of(name)
        for target in inner:
            other = folder_of(target)
            if other != folder and FLOORS[other][0] >= FLOORS[folder][0]:
                wrong.append(f"{name} (floor {FLOORS[folder][0]}) imports {target} (floor {FLOORS[other][0]})")
    assert not wrong, wrong


def test_each_folder_imports_torch_and_pytest_only_as_the_page_allows() -> None:
    wrong = []
    for name in MODULES:
        if not name:
            continue
        never, only_lazily = RULES[FLOORS[folder_of(name)][1]]
        wrong += [f"{name} imports {m} (its folder never may)" for m in sorted(GRAPH[name][1] & never)]
        eager = at_import(TREES[name]) & only_lazily
        wrong += [f"{name} imports {m} at import time (only inside a function)" for m in sorted(eager)]
    assert not wrong, wrong


def test_the_pure_modules_in_the_torch_floors_import_neither() -> None:
    assert PURE_IN_TORCH_FLOORS == ["scoring.cut", "scoring.align", "scoring.tree", "backends.protocol", "backends"]
    for name in PURE_IN_TORCH_FLOORS:
        assert not GRAPH[name][1] & (HEAVY | PYTEST), name


def test_only_compat_uses_the_private_pytest_api() -> None:
    users = sorted(name for name, (_, outer) in GRAPH.items() if "_pytest" in outer)
    assert users == PRIVATE_PYTEST_ONLY_IN == ["compat"]


def test_the_rules_see_a_new_module_in_any_folder() -> None:
    """The per-folder rule, not a list of modules: a module no test names is checked like the rest."""
    tree = ast.parse("import torch\n\ndef f():\n    import transformers\n")
    assert at_import(tree) == {"torch"}
    guarded = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n")
    assert at_import(guarded) == {"typing"}
    assert folder_of("newfolder.module") == "newfolder" and folder_of("__main__") == "cli"


# -- closed sets ---------------------------------------------------------------------------------------------------


def closed_sets() -> set[str]:
    """The package's enums (results/vocabulary.py's, results/verdict.py's, and those that live with their rules)."""
    return {node.name for tree in TREES.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and any(ast.unparse(base).split(".")[-1] in ("StrEnum", "Enum") for base in node.bases)}


def closed_set_attributes(trees: list[ast.Module], enums: set[str]) -> set[str]:
    """The names of attributes that hold one member of a closed set: a class's field or property annotated with it
    (alone, or with None), anywhere in the package. A name is the closed set's wherever it is read."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    name, annotation = item.target.id, item.annotation
                elif isinstance(item, ast.FunctionDef) and item.returns is not None and any(
                        ast.unparse(d).endswith("property") for d in item.decorator_list):
                    name, annotation = item.name, item.returns
                else:
                    continue
                text = annotation.value if isinstance(annotation, ast.Constant) else ast.unparse(annotation)
                dotted = [part.split(".") for part in re.findall(r"[\w.]+", str(text))]  # Role.MODULE: Role's
                parts = {part[0] if part[0] in enums else part[-1] for part in dotted}
                if parts & enums and parts <= enums | {"None", "Literal", "Optional"}:
                    names.add(name)
    return names


def bare_comparisons(tree: ast.Module, attributes: set[str]) -> list[str]:
    """Each comparison of such an attribute (`x.kind == "head"`, `x.status in ("crash", "timeout")`) with a string
    literal: the literal compiles whatever the set holds, where a member is checked by the type checker."""
    def literal(node: ast.expr) -> bool:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return bool(items) and all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = [s.attr for s in sides if isinstance(s, ast.Attribute) and s.attr in attributes]
            if named and any(literal(side) for side in sides):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_a_closed_sets_attribute_is_compared_with_its_members_never_with_a_string() -> None:
    attributes = closed_set_attributes(list(TREES.values()), closed_sets())
    assert {"kind", "verdict", "status", "method"} <= attributes
    wrong = [f"{name}: {found}" for name, tree in TREES.items() for found in bare_comparisons(tree, attributes)]
    assert not wrong, wrong


def test_the_closed_set_rule_sees_a_literal_and_lets_a_member_pass() -> None:
    declared = ast.parse("class Cell:\n    kind: ComponentKind\n    label: str\n    old: 'Verdict | None'\n"
                         "    role: Literal[Role.MODULE] = Role.MODULE\n    cells: list[ComponentKind]\n")
    attributes = closed_set_attributes([declared], {"ComponentKind", "Verdict", "Role"})
    assert attributes == {"kind", "old", "role"}
    used = ast.parse('a = c.kind == "head"\nb = c.kind in ("attn", "mlp")\nc = c.kind == ComponentKind.HEAD\n'
                     'd = c.label == "head"\ne = x.old != "ok"\n')
    assert bare_comparisons(used, attributes) == ["line 1: c.kind == 'head'", "line 2: c.kind in ('attn', 'mlp')",
                                                  "line 5: x.old != 'ok'"]


# -- size ----------------------------------------------------------------------------------------------------------


def code_lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def test_no_module_is_over_400_lines_of_code() -> None:
    long = [(name, n) for name, path in MODULES.items()
            if (n := code_lines(path.read_text(encoding="utf-8"))) > MAX_MODULE_LINES]
    assert not long, long


def test_no_function_is_over_60_lines() -> None:
    """Counted from the def to the last line of the body, docstring and comments included."""
    long = []
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{name}:{node.name} ({length} lines)")
    assert not long, long
