"""yamlfile.py: a YAML file someone else wrote is read as UTF-8, bounded in size and in alias expansion, or
refused with one message naming the file (and the line where there is one); a key given twice is refused too."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers.chapters import ONE_CASE, chapter_text, line_of
from helpers.fifo import fifo, within
from helpers.hostile import CASE, latin1, refused

from pytest_gotchas.cases import yamlfile
from pytest_gotchas.cases.chapter import CaseFileError, load_chapter, looks_like_chapter
from pytest_gotchas.cases.yamlfile import MAX_DEPTH


def test_duplicate_key_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    text = chapter_text(ONE_CASE.replace("  wrong:", "  correct: \"4\"\n  wrong:"))
    path.write_text(text)
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    assert str(error.value) == f"a.yaml:{line_of(text, 'correct:', 2)}: duplicate key 'correct'"


def test_an_alias_bomb_is_refused_at_once(tmp_path) -> None:
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 9):
        bomb.append(f"{chr(97 + n)}: &{chr(97 + n)} [" + ", ".join([f"*{chr(96 + n)}"] * 10) + "]")
    text = chapter_text(CASE.rstrip("\n") + "\n  env:\n" + "".join(f"    {line}\n" for line in bomb))
    started = time.perf_counter()
    assert refused(tmp_path, text) == ("a.yaml: the file's aliases expand to more than 100000 values; write the "
                                       "values out instead")
    assert time.perf_counter() - started < 5


def test_a_file_too_large_to_be_a_chapter_is_refused(tmp_path) -> None:
    text = chapter_text(CASE) + "# " + "x" * (1 << 20) + "\n"
    assert refused(tmp_path, text) == f"a.yaml: {len(text.encode())} bytes is more than a chapter file may hold " \
                                      f"(1048576)"


# -- encodings -------------------------------------------------------------------------------------------------------


def test_a_latin1_chapter_is_an_error_naming_file_and_line(tmp_path) -> None:
    text = chapter_text(CASE.replace('"2"', '"2"\n  note: "café"'))
    path = tmp_path / "a.yaml"
    path.write_bytes(latin1(text))
    assert looks_like_chapter(path)
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    assert str(error.value) == (f"a.yaml:{line_of(text, 'café')}: the file is not UTF-8 (byte 0xe9); "
                                "save it as UTF-8")


def test_a_utf16_chapter_is_an_error(tmp_path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text(CASE), encoding="utf-16")
    assert looks_like_chapter(path)
    with pytest.raises(CaseFileError, match=r"^a\.yaml: the file is UTF-16; save it as UTF-8$"):
        load_chapter(path, "a.yaml")


def test_a_chapter_that_is_a_fifo_is_refused_by_its_kind_not_waited_on(tmp_path: Path) -> None:
    """Named on the command line, a FIFO was opened for reading and blocked collection for ever."""
    pipe = fifo(tmp_path / "a.yaml")

    def load() -> str:
        with pytest.raises(CaseFileError) as error:
            load_chapter(pipe, "a.yaml")
        return str(error.value)

    assert within(load, pipe) == "a.yaml: cannot read the file: it is a named pipe (FIFO), not a regular file"
    assert within(lambda: looks_like_chapter(pipe), pipe) is False


@pytest.mark.parametrize(("encoding", "name"), [
    ("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"),  # issue 50, item 12: no BOM, and not collected at all
    ("utf-32", "UTF-32"), ("utf-32-le", "UTF-32"), ("utf-32-be", "UTF-32"),  # with a BOM and without
])
def test_a_wide_chapter_with_or_without_a_bom_is_an_error(tmp_path, encoding: str, name: str) -> None:
    path = tmp_path / "a.yaml"
    path.write_text(chapter_text(CASE), encoding=encoding)
    assert looks_like_chapter(path)
    with pytest.raises(CaseFileError) as error:
        load_chapter(path, "a.yaml")
    assert str(error.value) == f"a.yaml: the file is {name}; save it as UTF-8"


@pytest.mark.parametrize("key", ["? [a, b]\n  : 1", "? {a: 1}\n  : 1", "? - a\n    - b\n  : 1", "[a]: 1"])
def test_a_key_that_is_a_list_or_a_mapping_names_its_line(tmp_path, key: str) -> None:
    """Issue 50, item 7: `? [a, b]` died with TypeError: unhashable type; int and null keys were already refused."""
    text = chapter_text(CASE.rstrip("\n") + "\n  " + key + "\n")
    kind = "mapping" if "{" in key else "list"
    assert refused(tmp_path, text) == (f"a.yaml:{ONE_LINE + 1}: a key is a {kind}, not a name; write keys as names "
                                       "such as `id`")


ONE_LINE = chapter_text(CASE).rstrip("\n").count("\n") + 1  # the last line of the one case


# -- deep nesting (hostile input round two) --------------------------------------------------------------------------


NOTE = chapter_text(CASE).count("\n") + 1  # the line a note added after the case is on


def too_deep(line: int) -> str:
    return f"a.yaml:{line}: the file nests more than 100 levels deep (a chapter needs 6); write the values out flat"


@pytest.mark.parametrize("value", [
    "[" * 10_000 + "]" * 10_000,  # flow sequences
    "{a: " * 10_000 + "1" + "}" * 10_000,  # flow mappings
    "- " * 10_000 + "x",  # block sequences, all on one line
])
def test_ten_thousand_levels_are_one_error(tmp_path, value: str) -> None:
    assert MAX_DEPTH == 100
    text = chapter_text(CASE) + "    note:\n      " + value + "\n" if value.startswith("-") else (
        chapter_text(CASE) + f"    note: {value}\n")
    assert refused(tmp_path, text) == too_deep(NOTE + (1 if value.startswith("-") else 0))


def test_depth_through_a_chain_of_aliases_counts(tmp_path) -> None:
    """Each anchor nests the one before: shallow as written, 2,000 levels once the aliases are followed."""
    chain = "".join(f"      k{n}: &a{n} [{'*a' + str(n - 1) if n else 'x'}]\n" for n in range(2_000))
    text = chapter_text(CASE) + "    env:\n" + chain
    # k0's list is 2 levels high (the list and x), k99's is 101: the first node past the limit, on line NOTE + 100
    assert refused(tmp_path, text) == too_deep(NOTE + 1 + 99)


def test_a_hundred_levels_are_read(tmp_path) -> None:
    """The limit refuses only what no chapter needs: a note nested to the limit is read (and refused as a list)."""
    depth = MAX_DEPTH - 4  # the chapter, `cases`, the case and the note's own level are 4 of them
    text = chapter_text(CASE) + "    note: " + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "\n"
    assert refused(tmp_path, text).startswith(f"a.yaml:{NOTE}: case 'one': `note` is a text, got a list: [[[")


def test_a_link_to_a_huge_file_is_refused_after_reading_one_mebibyte(tmp_path, monkeypatch) -> None:
    huge = tmp_path / "huge.img"
    with open(huge, "wb") as stream:  # 8 GiB, sparse: as large as it says, and nothing on disk
        stream.truncate(8 << 30)
    (tmp_path / "a.yaml").symlink_to(huge)
    asked: list[int] = []
    real_open = open

    class Counted:
        def __init__(self, stream) -> None:
            self.stream = stream

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self.stream.close()

        def read(self, size: int = -1) -> bytes:
            asked.append(size)
            return self.stream.read(size)

        def fileno(self) -> int:
            return self.stream.fileno()

    monkeypatch.setattr(yamlfile, "open", lambda path, mode: Counted(real_open(path, mode)), raising=False)
    with pytest.raises(CaseFileError) as error:
        load_chapter(tmp_path / "a.yaml", "a.yaml")
    assert str(error.value) == "a.yaml: 8589934592 bytes is more than a chapter file may hold (1048576)"
    assert asked == [(1 << 20) + 1]


def test_proc_kcore_named_as_a_chapter_is_refused_with_its_size(tmp_path) -> None:
    if not os.access("/proc/kcore", os.R_OK):
        pytest.skip("/proc/kcore cannot be read here (not root, or no such file)")
    (tmp_path / "a.yaml").symlink_to("/proc/kcore")
    with pytest.raises(CaseFileError) as error:
        load_chapter(tmp_path / "a.yaml", "a.yaml")
    assert str(error.value) == (f"a.yaml: {os.stat('/proc/kcore').st_size} bytes is more than a chapter file may "
                                "hold (1048576)")


def _tree(value: object) -> object:
    """A document as data with every line and style Map remembers."""
    if isinstance(value, yamlfile.Map):
        return (value.line, value.lines, value.value_lines, value.literal, value.plain_text,
                [(key, _tree(item)) for key, item in value.items()])
    if isinstance(value, list):
        return [_tree(item) for item in value]
    return (type(value).__name__, value)


@pytest.mark.skipif(not yamlfile.LIBYAML, reason="PyYAML without libyaml")
@pytest.mark.parametrize("chapter", sorted((Path(__file__).parents[3] / "cases").glob("*.yaml")), ids=lambda p: p.name)
def test_libyaml_events_give_the_pure_loaders_chapter(chapter: Path) -> None:
    text = chapter.read_text()
    assert yamlfile._FastLoader is not None
    fast = yamlfile._compose(yamlfile._FastLoader, text, chapter.name)
    assert _tree(fast) == _tree(yamlfile._compose(yamlfile._Loader, text, chapter.name))


@pytest.mark.skipif(not yamlfile.LIBYAML, reason="PyYAML without libyaml")
def test_a_file_libyaml_refuses_gets_pyyamls_message(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "a: 1\nb: [2\n"
    with pytest.raises(yamlfile.YamlFileError) as fast:
        yamlfile.load(text, "x.yaml")
    monkeypatch.setattr(yamlfile, "_FastLoader", None)
    with pytest.raises(yamlfile.YamlFileError) as pure:
        yamlfile.load(text, "x.yaml")
    assert str(fast.value) == str(pure.value) == "x.yaml:3: not valid YAML: expected ',' or ']', but got '<stream end>'"


def _typed(value: object) -> object:
    """Plain data with every value's type, so that 1 and 1.0 and "1" differ."""
    if isinstance(value, dict):
        return [(_typed(key), _typed(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


@pytest.mark.skipif(not yamlfile.LIBYAML, reason="PyYAML without libyaml")
@pytest.mark.parametrize("baseline", sorted((Path(__file__).parents[3] / "baselines").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_libyaml_events_give_the_safe_loaders_baseline(baseline: Path) -> None:
    import yaml

    text = baseline.read_text()
    assert yamlfile._FastSafeLoader is not None
    fast = yaml.load(text, Loader=yamlfile._FastSafeLoader)  # noqa: S506
    assert _typed(fast) == _typed(yaml.load(text, Loader=yamlfile.SafeLoader))  # noqa: S506
    assert _typed(yamlfile.safe_load(text)) == _typed(fast)


@pytest.mark.skipif(not yamlfile.LIBYAML, reason="PyYAML without libyaml")
@pytest.mark.parametrize("text", ["a: [1\n", "[" * 200 + "]" * 200])
def test_safe_load_raises_what_the_pure_loader_raises(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    import yaml

    with pytest.raises(yaml.YAMLError) as fast:
        yamlfile.safe_load(text)
    monkeypatch.setattr(yamlfile, "_FastSafeLoader", None)
    with pytest.raises(yaml.YAMLError) as pure:
        yamlfile.safe_load(text)
    assert type(fast.value) is type(pure.value) and str(fast.value) == str(pure.value)
