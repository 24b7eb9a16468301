"""A family's slots and templates, pure: what each kind of slot draws, the expressions a template and a `where` write
over the drawn values, and a template written out with one draw's values (docs/cases.md, "Families").

Every slot is a finite, numbered set of values (`size`, `value(i)`), so that a family's draws can be enumerated
where they are few and drawn by index where they are many, with the same numbering on every machine. Expressions are
evaluated here by a small interpreter of a few node kinds, never by eval(): a chapter's snippets run in the sandbox,
and nothing from the file runs in the collecting process.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..results.vocabulary import SlotKind
from .transcript import CURSOR, PS1

# The pools of a slot written as its kind alone (`x: name`): identifiers that are no keyword or builtin, short
# lower-case words, and statements that print nothing (the empty one leaves the line out).
NAMES = ("x", "y", "z", "n", "i", "j", "k", "v", "w", "a", "b", "c", "p", "q", "r", "s", "t", "u", "xs", "ys",
         "items", "values", "data", "nums", "vals", "elems", "seq", "acc", "total", "count", "key", "val", "item",
         "obj", "thing", "node", "rest", "tmp", "foo", "bar", "baz", "alpha", "beta", "gamma", "delta", "first")
WORDS = ("apple", "pear", "plum", "fig", "kiwi", "lime", "cherry", "mango", "grape", "lemon", "melon", "peach",
         "berry", "olive", "date", "guava")
STATEMENTS = ("", "_unrelated = 0", "import math", "_seen = []", "_flag = True", "import string", "_total = 0")
KIND_KEYS = tuple(str(kind) for kind in SlotKind)
MAX_REPEAT = 10_000  # the longest string or list `*` may make in an expression
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SlotError(Exception):
    """A slot, an expression or a template that cannot be used; the caller adds the file and line."""


class Text(str):
    """A text slot's string: written into a transcript as its literal (`'apple'`), where any other string (a name,
    a choice, a statement, an expression's result) is written as it is."""

    def __repr__(self) -> str:
        return str.__repr__(str(self))


def written(value: Any) -> str:
    """A value as a transcript shows it: a number as digits, a text slot's string as its literal, any other string
    as it is, a list as its items written so, separated by commas (the contents of a container)."""
    if isinstance(value, Text):
        return repr(value)
    if isinstance(value, (str, bool, int)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(written(item) for item in value)
    raise SlotError(f"cannot write a {type(value).__name__} into a transcript")


# -- slots --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """One slot: `pool` for names, strings, choices, statements and an order's fragments; `low`..`high` for
    integers; `element`, `sizes` and `distinct` for container contents."""

    name: str
    kind: SlotKind
    pool: tuple[Any, ...] = ()
    low: int = 0
    high: int = 0
    element: Slot | None = None
    sizes: tuple[int, int] = (0, 0)
    distinct: bool = True

    def size(self) -> int:
        """How many values the slot has."""
        if self.kind == SlotKind.INT:
            return self.high - self.low + 1
        if self.kind == SlotKind.ORDER:
            return math.factorial(len(self.pool))
        if self.kind == SlotKind.ITEMS:
            assert self.element is not None
            m = self.element.size()
            return sum(_arrangements(m, k, self.distinct) for k in range(self.sizes[0], self.sizes[1] + 1))
        return len(self.pool)

    def value(self, index: int) -> Any:
        """The `index`-th value, 0 <= index < size()."""
        if self.kind == SlotKind.INT:
            return self.low + index
        if self.kind == SlotKind.ORDER:
            return [self.pool[i] for i in _arrangement(len(self.pool), len(self.pool), True, index)]
        if self.kind == SlotKind.ITEMS:
            assert self.element is not None
            m = self.element.size()
            for k in range(self.sizes[0], self.sizes[1] + 1):
                count = _arrangements(m, k, self.distinct)
                if index < count:
                    return [self.element.value(i) for i in _arrangement(m, k, self.distinct, index)]
                index -= count
            raise IndexError(index)
        if self.kind == SlotKind.TEXT:
            return Text(self.pool[index])
        return self.pool[index]


def _arrangements(m: int, k: int, distinct: bool) -> int:
    """Sequences of k of m things: without repeats (distinct) or with."""
    return math.perm(m, k) if distinct else m ** k


def _arrangement(m: int, k: int, distinct: bool, index: int) -> list[int]:
    """The `index`-th sequence of k of m things (a Lehmer code without repeats, base-m digits with)."""
    left = list(range(m))
    chosen: list[int] = []
    for position in range(k):
        block = _arrangements(len(left) - 1, k - position - 1, True) if distinct else m ** (k - position - 1)
        digit, index = divmod(index, block)
        chosen.append(left.pop(digit) if distinct else digit)
    return chosen


def slot_from(name: str, raw: Any) -> Slot:
    """A slot from its YAML: its kind alone (`name`, `text`, `statement`: the default pools) or a mapping of its kind
    to its values, with `size` and `distinct` for container contents."""
    if not _IDENTIFIER.fullmatch(name) or keyword.iskeyword(name):
        raise SlotError(f"slot name {name!r} must be an identifier (it is written `${{{name}}}` in templates)")
    if isinstance(raw, str):
        defaults = {"name": NAMES, "text": WORDS, "statement": STATEMENTS}
        if raw not in defaults:
            raise SlotError(f"slot {name!r}: {raw!r} alone is not a slot; write `name`, `text` or `statement` (their "
                            f"default pools), or a mapping such as `{{int: [1, 9]}}`")
        return _checked(Slot(name, SlotKind(raw), pool=defaults[raw]))
    if not isinstance(raw, dict):
        raise SlotError(f"slot {name!r} is a kind (`name`) or a mapping of its kind to its values (`{{int: [1, 9]}}`)")
    kinds = [key for key in raw if key in KIND_KEYS]
    extra = [key for key in raw if key not in KIND_KEYS and key not in ("size", "distinct")]
    if len(kinds) != 1 or extra:
        raise SlotError(f"slot {name!r} names one kind of {', '.join(KIND_KEYS)} (with `size` and `distinct` for "
                        f"items); got {', '.join(map(str, raw))}")
    kind = SlotKind(kinds[0])
    if kind != SlotKind.ITEMS and ("size" in raw or "distinct" in raw):
        raise SlotError(f"slot {name!r}: `size` and `distinct` belong to items")
    return _checked(_slot(name, kind, raw[kind], raw))


def _slot(name: str, kind: SlotKind, values: Any, raw: dict[str, Any]) -> Slot:
    if kind == SlotKind.INT:
        if (not isinstance(values, list) or len(values) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in values) or values[0] > values[1]):
            raise SlotError(f"slot {name!r}: `int` is a range [low, high] of two integers, low <= high")
        return Slot(name, kind, low=values[0], high=values[1])
    if kind == SlotKind.ITEMS:
        element = slot_from(f"{name}_item", values) if isinstance(values, dict) else None
        if element is None or element.kind not in (SlotKind.INT, SlotKind.TEXT, SlotKind.CHOICE):
            raise SlotError(f"slot {name!r}: `items` is what each item is: `{{int: [0, 9]}}`, `{{text: [...]}}` or "
                            "`{choice: [...]}`")
        size = raw.get("size", 3)
        sizes = (size, size) if isinstance(size, int) and not isinstance(size, bool) else tuple(size) if isinstance(
            size, list) and len(size) == 2 and all(isinstance(s, int) for s in size) else None
        if sizes is None or not 0 <= sizes[0] <= sizes[1] <= 12:
            raise SlotError(f"slot {name!r}: `size` is a number of items or a range [fewest, most], at most 12")
        distinct = raw.get("distinct", True)
        if not isinstance(distinct, bool):
            raise SlotError(f"slot {name!r}: `distinct` is true or false")
        if distinct and element.size() < sizes[1]:
            raise SlotError(f"slot {name!r}: {sizes[1]} distinct items from {element.size()} values")
        return Slot(name, kind, element=element, sizes=(sizes[0], sizes[1]), distinct=distinct)
    if not isinstance(values, list) or not values or not all(isinstance(v, (str, int)) and not isinstance(v, bool)
                                                            for v in values):
        raise SlotError(f"slot {name!r}: `{kind}` is a non-empty list of values")
    if kind == SlotKind.ORDER and len(values) < 2:
        raise SlotError(f"slot {name!r}: an order needs two fragments or more")
    return Slot(name, kind, pool=tuple(str(v) for v in values))


def _checked(slot: Slot) -> Slot:
    for value in slot.pool:
        if "\n" in value or CURSOR in value:
            raise SlotError(f"slot {slot.name!r}: the value {value!r} holds a line break or the cursor")
        if slot.kind == SlotKind.NAME and (not _IDENTIFIER.fullmatch(value) or keyword.iskeyword(value)
                                           or hasattr(builtins, value)):
            raise SlotError(f"slot {slot.name!r}: {value!r} is not a name a program may bind (an identifier, not a "
                            "keyword or a builtin)")
    if len(set(slot.pool)) != len(slot.pool):
        raise SlotError(f"slot {slot.name!r}: a value is listed twice")
    return slot


# -- expressions --------------------------------------------------------------------------------------------------

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
FUNCTIONS: dict[str, Callable[..., Any]] = {"len": len, "abs": abs, "min": min, "max": max, "sum": sum,
                                            "sorted": sorted, "str": str, "repr": repr, "int": int, "list": list,
                                            "tuple": tuple, "zip": zip, "reversed": reversed}


@dataclass(frozen=True)
class Expr:
    """An expression over slot values: numbers, strings, + - * // % **, comparisons, and/or/not, `a if c else b`,
    indexing and slices, list displays and the functions in FUNCTIONS."""

    text: str
    tree: ast.expr
    names: frozenset[str]

    def evaluate(self, values: dict[str, Any]) -> Any:
        try:
            return _evaluate(self.tree, values)
        except SlotError:
            raise
        except (ArithmeticError, IndexError, TypeError, ValueError) as error:
            raise SlotError(f"`{self.text}`: {type(error).__name__}: {error}") from None


def expression(text: str, slots: set[str]) -> Expr:
    """An expression, checked for what it may name and do; SlotError says what it may not."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as error:
        raise SlotError(f"`{text}` is not an expression: {error.msg}") from None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id not in slots and node.id not in FUNCTIONS:
                raise SlotError(f"`{text}` names {node.id!r}, which is no slot of the family (slots: "
                                f"{', '.join(sorted(slots)) or 'none'})")
            names.add(node.id)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise SlotError(f"`{text}` may call only {', '.join(FUNCTIONS)}, with plain arguments")
        elif not isinstance(node, _ALLOWED) or _unknown_operator(node):
            what = type(getattr(node, "op", node)).__name__
            raise SlotError(f"`{text}`: {what} is not allowed in a family's expression")
        elif isinstance(node, ast.Constant) and (not isinstance(node.value, (int, str)) or node.value is True
                                                 or node.value is False):
            raise SlotError(f"`{text}`: only whole numbers and strings may be written in a family's expression")
    return Expr(text.strip(), tree, frozenset(names & slots))


def _unknown_operator(node: ast.AST) -> bool:
    if isinstance(node, ast.BinOp):
        return type(node.op) not in _BINARY
    if isinstance(node, ast.UnaryOp):
        return not isinstance(node.op, (ast.USub, ast.UAdd, ast.Not))
    return isinstance(node, ast.Compare) and any(type(op) not in _COMPARE for op in node.ops)


_ALLOWED = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
            ast.Subscript, ast.Slice, ast.List, ast.Tuple, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
            ast.expr_context)


def _evaluate(node: ast.expr, values: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id] if node.id in values else FUNCTIONS[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_evaluate(item, values) for item in node.elts]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, values), _evaluate(node.right, values)
        _bounded(node.op, left, right)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, values)
        return not operand if isinstance(node.op, ast.Not) else -operand if isinstance(node.op, ast.USub) else +operand
    if isinstance(node, ast.BoolOp):
        result = _evaluate(node.values[0], values)
        for item in node.values[1:]:
            if bool(result) != isinstance(node.op, ast.And):
                return result
            result = _evaluate(item, values)
        return result
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, values)
        for op, right_node in zip(node.ops, node.comparators):
            right = _evaluate(right_node, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _evaluate(node.body if _evaluate(node.test, values) else node.orelse, values)
    if isinstance(node, ast.Call):
        return _evaluate(node.func, values)(*[_evaluate(arg, values) for arg in node.args])
    if isinstance(node, ast.Subscript):
        part = node.slice
        index = slice(*(None if n is None else _evaluate(n, values) for n in (part.lower, part.upper, part.step))) if (
            isinstance(part, ast.Slice)) else _evaluate(part, values)
        return _evaluate(node.value, values)[index]
    raise SlotError(f"{type(node).__name__} is not allowed in a family's expression")


def _bounded(op: ast.operator, left: Any, right: Any) -> None:
    """No expression makes a huge number, string or list: the collecting process evaluates it."""
    if isinstance(op, ast.Pow) and (not isinstance(right, int) or abs(right) > 64 or abs(left) > 2 ** 64):
        raise SlotError(f"{left!r} ** {right!r} is larger than a family may compute")
    if isinstance(op, ast.Mult) and any(isinstance(a, (str, list)) and isinstance(b, int) and b > MAX_REPEAT
                                        for a, b in ((left, right), (right, left))):
        raise SlotError(f"a string or list repeated more than {MAX_REPEAT} times")


# -- templates ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """Text with `${expression}` placeholders (`$${` writes `${`), line by line: a line that is only `>>> ${s}`
    and writes an empty statement is left out."""

    lines: tuple[tuple[str | Expr, ...], ...]
    names: frozenset[str]
    identifiers: frozenset[str]  # every identifier the template writes outside its placeholders

    def render(self, values: dict[str, Any]) -> str:
        out = []
        for parts in self.lines:
            line = "".join(part if isinstance(part, str) else written(part.evaluate(values)) for part in parts)
            if line == PS1 and len(parts) == 2 and isinstance(parts[1], Expr) and parts[0] == PS1:
                continue  # an empty statement: the line is left out, not typed empty
            out.append(line)
        return "\n".join(out)


def template(text: str, slots: set[str]) -> Template:
    """A template; a LineError names the line (1-based) of a placeholder it cannot read."""
    lines: list[tuple[str | Expr, ...]] = []
    names: set[str] = set()
    identifiers: set[str] = set()
    for number, line in enumerate(text.split("\n"), start=1):
        try:
            parts = _parts(line, slots)
        except SlotError as error:
            raise LineError(str(error), number) from None
        for part in parts:
            if isinstance(part, Expr):
                names.update(part.names)
            else:
                identifiers.update(_IDENTIFIER.findall(part))
        lines.append(tuple(part for part in parts if part != ""))
    return Template(tuple(lines), frozenset(names), frozenset(identifiers))


def _parts(line: str, slots: set[str]) -> list[str | Expr]:
    """A line's literal text and placeholders. A placeholder ends at the first `}` after which its text is an
    expression, so that `${'{}[' + key + ']'}` holds braces of its own."""
    parts: list[str | Expr] = []
    literal, at = "", 0
    while (start := line.find("$", at)) != -1:
        if line.startswith("$${", start):
            literal, at = literal + line[at:start] + "${", start + 3
            continue
        if not line.startswith("${", start):
            literal, at = literal + line[at:start + 1], start + 1
            continue
        ends = [n for n in range(start + 2, len(line)) if line[n] == "}"]
        text = next((line[start + 2:end] for end in ends if _parses(line[start + 2:end])), None)
        if text is None:
            if not ends:
                raise SlotError("a `${` is never closed by `}` on its line")
            expression(line[start + 2:ends[-1]], slots)  # says what is wrong with the longest
        assert text is not None
        parts += [literal + line[at:start], expression(text, slots)]
        literal, at = "", start + 3 + len(text)
    return parts + [literal + line[at:]]


def _parses(text: str) -> bool:
    try:
        ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return False
    return True


class LineError(SlotError):
    """A template's error at one of its lines (1-based within the template)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line
