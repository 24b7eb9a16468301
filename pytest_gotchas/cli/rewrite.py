"""Rewritings of a snippet that keep its meaning for a reader who understands it, pure: rename the names it binds
(consistently, with Python's own tokenizer: never inside strings, never builtins or attributes), shift its integer
literals, change its lower-case word strings, add an unrelated statement, or put its last expression in parentheses. Each rewriting also maps the misreading's text, so that the variant's
misreading is the original's, rewritten the same way."""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

# Names a rename draws from, one pool per variant: short ones, then words, then others.
POOLS = (("xs", "ys", "zs", "ws", "vs"), ("items", "others", "more", "rest", "extra"),
         ("data", "info", "vals", "refs", "keys_"), ("p", "q", "r", "s", "t"))
UNRELATED = "_unrelated = 0"
UNRELATED_IMPORT = "import math"


@dataclass(frozen=True)
class Rewrite:
    id: str  # the variant's id
    lines: tuple[str, ...]  # the snippet's REPL input, rewritten
    text: Callable[[str], str]  # maps a text the snippet printed (or a misreading of it) the same way
    keeps_values: bool = True  # False for integer and string changes: the program then computes other values


def bound_names(lines: tuple[str, ...]) -> list[str]:
    """The names the snippet binds (assignments, loops, comprehensions, functions, classes, parameters), in order of
    first appearance; dunders and builtins are left alone, and so are names bound in a class body: they are
    attributes, read as `obj.name`, which a rename must not touch."""
    try:
        tree = ast.parse("\n".join(lines) + "\n")
    except SyntaxError:
        return []
    found: list[str] = []
    attributes = {target.id for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for stmt in node.body
                  for target in _targets(stmt)}

    def add(name: str) -> None:
        if name not in found and not name.startswith("__") and not hasattr(builtins, name) and name not in attributes:
            found.append(name)

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name)
        elif isinstance(node, ast.arg):
            add(node.arg)
    order = {name: "\n".join(lines).find(name) for name in found}
    return sorted(found, key=lambda name: order[name])


def _targets(stmt: ast.stmt) -> list[ast.Name]:
    """The names a statement of a class body binds there (assignments and definitions)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [ast.Name(stmt.name)]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return [n for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]


def _tokens(lines: tuple[str, ...]) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))


def _replace(lines: tuple[str, ...], change: Callable[[tokenize.TokenInfo, tokenize.TokenInfo | None], str | None]
             ) -> tuple[str, ...]:
    """The lines with each token that `change` maps (given the token and the one before it) replaced."""
    edits: dict[int, list[tuple[int, int, str]]] = {}
    previous = None
    for token in _tokens(lines):
        new = change(token, previous)
        if new is not None and token.start[0] == token.end[0]:
            edits.setdefault(token.start[0] - 1, []).append((token.start[1], token.end[1], new))
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = token
    out = list(lines)
    for row, spans in edits.items():
        line = out[row]
        for start, end, new in sorted(spans, reverse=True):
            line = line[:start] + new + line[end:]
        out[row] = line
    return tuple(out)


def _words(mapping: dict[str, str]) -> Callable[[str], str]:
    if not mapping:
        return lambda text: text
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, sorted(mapping, key=len, reverse=True))) + r")\b")
    return lambda text: pattern.sub(lambda m: mapping[m.group(1)], text)


def rename(lines: tuple[str, ...], pool: tuple[str, ...]) -> Rewrite | None:
    names = bound_names(lines)
    taken = set(names) | {t.string for t in _tokens(lines) if t.type == tokenize.NAME}
    fresh = [n for n in pool if n not in taken and not keyword.iskeyword(n)]
    if not names or len(fresh) < len(names):
        return None
    mapping = dict(zip(names, fresh))

    def change(token: tokenize.TokenInfo, previous: tokenize.TokenInfo | None) -> str | None:
        attribute = previous is not None and previous.string == "."
        return mapping.get(token.string) if token.type == tokenize.NAME and not attribute else None

    return Rewrite(f"rename-{fresh[0]}", _replace(lines, change), _words(mapping))


def shift_integers(lines: tuple[str, ...], by: int) -> Rewrite | None:
    """Every decimal integer literal n >= 2 becomes n + by (0 and 1 often mean "none" and "one", not a value)."""
    values = sorted({int(t.string) for t in _tokens(lines) if t.type == tokenize.NUMBER and t.string.isdigit()
                     and int(t.string) >= 2}, reverse=True)
    if not values:
        return None
    mapping = {str(v): str(v + by) for v in values}

    def change(token: tokenize.TokenInfo, previous: tokenize.TokenInfo | None) -> str | None:
        return mapping.get(token.string) if token.type == tokenize.NUMBER else None

    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, mapping)) + r")(?![\w.])")
    return Rewrite(f"integers-plus-{by}", _replace(lines, change), lambda text: pattern.sub(
        lambda m: mapping[m.group(1)], text), keeps_values=False)


def change_strings(lines: tuple[str, ...]) -> Rewrite | None:
    """Every plain string literal that is one lower-case word gets each letter moved one on (`'key'` -> `'lfz'`);
    strings that spell anything else (format codes, numbers, names of things) are left alone."""
    words = sorted({t.string[1:-1] for t in _tokens(lines) if t.type == tokenize.STRING
                    and re.fullmatch(r"(['\"])[a-z]+\1", t.string)}, key=len, reverse=True)
    if not words:
        return None
    mapping = {w: "".join(chr((ord(c) - 97 + 1) % 26 + 97) for c in w) for w in words}

    def change(token: tokenize.TokenInfo, previous: tokenize.TokenInfo | None) -> str | None:
        if token.type == tokenize.STRING and token.string[1:-1] in mapping and token.string[0] == token.string[-1]:
            return token.string[0] + mapping[token.string[1:-1]] + token.string[-1]
        return None

    return Rewrite("strings-shifted", _replace(lines, change), _words(mapping), keeps_values=False)


def add_unrelated(lines: tuple[str, ...], statement: str = UNRELATED, variant_id: str = "unrelated-line") -> Rewrite:
    """A statement nothing reads, first: the REPL prints nothing for it."""
    return Rewrite(variant_id, (statement, *lines), lambda text: text)


def parenthesize(lines: tuple[str, ...]) -> Rewrite | None:
    """The last statement in parentheses, when it is one expression on the last line: the REPL echoes the same
    value, spelled otherwise."""
    try:
        tree = ast.parse("\n".join(lines) + "\n")
    except SyntaxError:
        return None
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr) or last.lineno != len(lines) or last.end_lineno != len(lines):
        return None
    line = lines[-1]
    start, end = len(line.encode()[:last.col_offset].decode()), len(line.encode()[:last.end_col_offset].decode())
    return Rewrite("parenthesized", (*lines[:-1], f"{line[:start]}({line[start:end]}){line[end:]}"),
                   lambda text: text)


# The kinds of rewriting, by the name `gotchas vary --kinds` takes. Renames, an unrelated statement and parentheses
# never change a value; integer and string changes do, and suit only snippets whose rule holds for any value.
KINDS = ("rename", "integers", "unrelated", "strings", "parenthesized", "import")


def rewrites(lines: tuple[str, ...], wanted: int, kinds: tuple[str, ...] = KINDS) -> list[Rewrite]:
    """Up to `wanted` rewritings of the given kinds, taken in turn: renames, integer shifts, the unrelated line,
    strings, then the spellings that fit any snippet (parentheses, an unrelated import)."""
    found: list[tuple[str, Rewrite | None]] = []
    for n, pool in enumerate(POOLS):
        found.append(("rename", rename(lines, pool)))
        if n < 2:
            found.append(("integers", shift_integers(lines, n + 1)))
        if n == 0:
            found += [("unrelated", add_unrelated(lines)), ("strings", change_strings(lines))]
    found += [("parenthesized", parenthesize(lines)),
              ("import", add_unrelated(lines, UNRELATED_IMPORT, "unrelated-import"))]
    return [r for kind, r in found if r is not None and kind in kinds][:wanted]
