"""Reading a YAML file someone else wrote: UTF-8 or a clear error, bounded in size, in alias expansion and in
nesting depth, and every mapping remembering the line of each of its keys (so that every error can name file:line).
The depth bound (DepthLimit) serves every YAML file the project reads: chapters here, baselines in baseline/store.py.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from ..files import open_regular

try:  # libyaml's scanner and parser, where PyYAML was built with it (its wheels are)
    from yaml.cyaml import CParser as _CParser  # type: ignore[attr-defined]

    LIBYAML = True
except ImportError:  # a PyYAML without libyaml: the pure-Python loader reads everything
    LIBYAML = False

MAX_BYTES = 1 << 20  # a chapter of 150 cases is about 40 kB
MAX_NODES = 100_000  # after expanding aliases: a "billion laughs" file is refused before it is built
# Nesting levels, aliases followed: a chapter needs 6 (chapter, cases, case, variants, variant, value) and a baseline
# 5. PyYAML composes and constructs recursively, so 10,000 levels would end in a RecursionError.
MAX_DEPTH = 100


class YamlFileError(Exception):
    """The file cannot be read as YAML; the message names the file (and the line where there is one)."""


def read_bytes(path: Path, most: int = MAX_BYTES) -> tuple[bytes, int]:
    """(at most `most` + 1 bytes of the file, its size as far as known): a link to an 8 GiB file, or to
    /proc/kcore, costs one read of `most` bytes, never the whole file; a FIFO or a device is refused by its kind
    (files.NotARegularFile), not read."""
    with open(open_regular(path), "rb") as stream:
        data = stream.read(most + 1)
        return data, max(len(data), os.fstat(stream.fileno()).st_size)


# YAML's own encoding detection (YAML 1.2, section 5.2): a BOM, or the NULs of an ASCII first character, name the
# encoding; UTF-32's patterns first, as its little-endian BOM starts with UTF-16's.
_WIDE = (
    (codecs.BOM_UTF32_BE, "UTF-32", "utf-32"), (codecs.BOM_UTF32_LE, "UTF-32", "utf-32"),
    (b"\x00\x00\x00", "UTF-32", "utf-32-be"),
    (codecs.BOM_UTF16_BE, "UTF-16", "utf-16"), (codecs.BOM_UTF16_LE, "UTF-16", "utf-16"),
    (b"\x00", "UTF-16", "utf-16-be"),
)


def _wide(data: bytes) -> tuple[str, str] | None:
    """(the encoding's name, its codec) for a file in UTF-16 or UTF-32, with or without a BOM; None otherwise."""
    if data[1:4] == b"\x00\x00\x00" and data[:1] != b"\x00":
        return "UTF-32", "utf-32-le"
    for start, name, codec in _WIDE:
        if data.startswith(start):
            return name, codec
    if data[1:2] == b"\x00":
        return "UTF-16", "utf-16-le"
    return None


def read_text(path: Path, where: str) -> str:
    try:
        data, size = read_bytes(path)
    except OSError as error:
        raise YamlFileError(f"{where}: cannot read the file: {error.strerror or error}") from None
    if len(data) > MAX_BYTES:
        raise YamlFileError(f"{where}: {size} bytes is more than a chapter file may hold ({MAX_BYTES})")
    wide = _wide(data)
    if wide is not None:
        raise YamlFileError(f"{where}: the file is {wide[0]}; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise YamlFileError(f"{where}:{line}: the file is not UTF-8 (byte 0x{data[error.start]:02x}); "
                            "save it as UTF-8") from None


def sniff(path: Path) -> str:
    """The file's text however it is encoded, for deciding whether it is meant as a chapter; '' if unreadable."""
    try:
        data = read_bytes(path)[0][:MAX_BYTES]
    except OSError:
        return ""
    wide = _wide(data)
    if wide is not None:
        return data.decode(wide[1], errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # never fails: every byte is a character


class Map(dict):  # type: ignore[type-arg]
    """A mapping with the line of itself, of each key and of each value."""

    line = 0

    def __init__(self) -> None:
        super().__init__()
        self.lines: dict[str, int] = {}
        self.value_lines: dict[str, int] = {}
        self.literal: dict[str, bool] = {}  # a `|` block: its lines are the file's lines
        self.plain_text: dict[str, str] = {}  # unquoted scalars as written

    def text(self, key: str) -> object:
        """The value, but a number as it is written: YAML reads `3.10` as 3.1 and `0.10` as 0.1."""
        value = self.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key in self.plain_text:
            return self.plain_text[key]
        return value


class TooDeep(yaml.YAMLError):
    """The document nests more than MAX_DEPTH levels; `line` is where the level too many starts (1-based)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"line {line}: nests more than {MAX_DEPTH} levels deep")
        self.line = line


class DepthLimit:
    """A YAML loader mixin that refuses a document deeper than MAX_DEPTH levels while composing it, before PyYAML's
    recursive composer or constructor can overflow the stack. Depth through aliases counts too: a chain of anchors,
    each nesting the one before, is as deep as it would be written out."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        depth = self.__dict__.get("_depth", 0)
        if depth >= MAX_DEPTH:
            raise TooDeep(self.peek_event().start_mark.line + 1)  # type: ignore[attr-defined]
        self._depth = depth + 1
        try:
            node = super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth = depth
        heights = self.__dict__.setdefault("_heights", {})
        if id(node) not in heights:  # an alias is the node it names, whose height is known (or being found)
            if isinstance(node, yaml.SequenceNode):
                children = list(node.value)
            elif isinstance(node, yaml.MappingNode):
                children = [child for pair in node.value for child in pair]
            else:
                children = []
            heights[id(node)] = 1 + max((heights.get(id(child), 0) for child in children), default=0)
            if heights[id(node)] > MAX_DEPTH:
                raise TooDeep(node.start_mark.line + 1)
        return node


class SafeLoader(DepthLimit, yaml.SafeLoader):
    """yaml.SafeLoader with the depth bound."""


class _Loader(DepthLimit, yaml.SafeLoader):
    """Keeps the line of every mapping and of each of its keys."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> Map:
    loader.flatten_mapping(node)
    result = Map()
    result.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, (list, dict)):  # `? [a, b]`: no name, and unhashable (a TypeError in `in` below)
            kind = "list" if isinstance(key, list) else "mapping"
            raise YamlFileError(f"{{where}}:{key_node.start_mark.line + 1}: a key is a {kind}, not a name; write "
                                "keys as names such as `id`")
        if key in result:
            raise YamlFileError(f"{{where}}:{key_node.start_mark.line + 1}: duplicate key {key!r}")
        result[key] = loader.construct_object(value_node, deep=True)
        result.lines[key] = key_node.start_mark.line + 1
        style = getattr(value_node, "style", None)
        # A literal block's text starts on the line after its indicator.
        result.value_lines[key] = value_node.start_mark.line + 1 + (1 if style in ("|", ">") else 0)
        result.literal[key] = style == "|"
        if isinstance(value_node, yaml.ScalarNode) and style is None:
            result.plain_text[key] = value_node.value  # `3.10` as written, not the float 3.1
    return result


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _PlainNone:
    """libyaml names a plain scalar's style '' where PyYAML's parser names it None, which _construct_mapping reads."""

    def compose_scalar_node(self, anchor: str | None) -> yaml.ScalarNode:
        node: yaml.ScalarNode = super().compose_scalar_node(anchor)  # type: ignore[misc]
        if node.style == "":
            node.style = None
        return node


_FastLoader: type | None = None
if LIBYAML:
    class _CEvents(DepthLimit, _PlainNone, Composer, _CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """_Loader's nodes from libyaml's events. Composing, and so the depth bound, stays PyYAML's Python code
        (libyaml's own composer cannot be bounded); scanning and parsing, most of a chapter's reading time (0.7 of
        0.9 s for the library's 34 chapters), move to C. A document libyaml refuses is read again by _Loader, so
        that a message is the same with or without libyaml."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    _CEvents.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    _FastLoader = _CEvents

_FastSafeLoader: type | None = None
if LIBYAML:
    class _CSafe(DepthLimit, Composer, _CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """SafeLoader's plain values from libyaml's events, composed by PyYAML with the depth bound (as _CEvents)."""

        def __init__(self, stream: str) -> None:
            _CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    _FastSafeLoader = _CSafe


def safe_load(text: str) -> object:
    """`yaml.load(text, Loader=SafeLoader)` (plain values, the depth bound), scanned and parsed by libyaml where
    PyYAML has it: a baseline reads in less than half the time. A document libyaml refuses is read again by
    SafeLoader, so that an error (TooDeep too) is the one PyYAML's own parser raises."""
    if _FastSafeLoader is not None:
        try:
            return yaml.load(text, Loader=_FastSafeLoader)  # noqa: S506  (a safe constructor)
        except yaml.YAMLError:
            pass
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many nodes the document holds once every alias is expanded (an alias is the node it names)."""
    if id(node) in sizes:
        return sizes[id(node)]
    sizes[id(node)] = 1  # a recursive alias counts once
    if isinstance(node, yaml.SequenceNode):
        total = 1 + sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        total = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    else:
        total = 1
    sizes[id(node)] = total
    return total


def _compose(loader_class: type, text: str, where: str) -> object:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node, {}) > MAX_NODES:
            raise YamlFileError(f"{where}: the file's aliases expand to more than {MAX_NODES} values; "
                                "write the values out instead")
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def load(text: str, where: str) -> object:
    """The document, with Map for every mapping. Raises YamlFileError with file:line."""
    try:
        if _FastLoader is not None:
            try:
                return _compose(_FastLoader, text, where)
            except yaml.YAMLError:
                pass  # PyYAML's own parser says what is wrong, as it does without libyaml
        return _compose(_Loader, text, where)
    except YamlFileError as error:
        raise YamlFileError(str(error).replace("{where}", where)) from None
    except TooDeep as error:
        raise YamlFileError(f"{where}:{error.line}: the file nests more than {MAX_DEPTH} levels deep (a chapter "
                            "needs 6); write the values out flat") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise YamlFileError(f"{where}{line}: not valid YAML: {problem}") from None
