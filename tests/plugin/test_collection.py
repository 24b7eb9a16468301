"""What `pytest --gotchas` collects: nothing without the option, chapter files (.yaml or .yml) and no other YAML,
with or without the cache provider, and chapters selected by name with -k.

Nothing here loads a model: every run is --collect-only, or runs cases that skip.
"""

from __future__ import annotations

import pytest
from helpers.chapters import HEADER, MISSING, ONE_CASE, TWO_CASES


def test_inert_without_gotchas(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING)
    result = pytester.runpytest("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "a.yaml" not in result.stdout.str()


def test_ini_option_turns_it_on(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING)
    pytester.makeini("[pytest]\ngotchas = true\n")
    result = pytester.runpytest("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert "a.yaml::nowhere" in result.outlines


def test_yaml_that_is_not_a_chapter_is_ignored(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("workflow.yaml").write_text("name: CI\non: push\njobs:\n  test:\n    runs-on: ubuntu\n")
    # `cases:` that is not a top-level key does not make a chapter either
    pytester.path.joinpath("nested.yml").write_text("suite:\n  cases:\n    - id: a\n")
    pytester.path.joinpath("broken.yaml").write_text("key: [unclosed\n")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout.str()
    assert "error" not in result.stdout.str().lower()


def test_yml_extension_is_a_chapter_too(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING, name="a.yml")
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert "a.yml::nowhere" in result.outlines


def test_runs_without_the_cache_provider(pytester: pytest.Pytester, write_chapter) -> None:
    # `config.cache` does not exist under `-p no:cacheprovider`: the plugin runs without a transcript cache.
    write_chapter(MISSING)
    result = pytester.runpytest("--gotchas", "-p", "no:cacheprovider", "--collect-only", "-q")
    crashed = "AttributeError: 'Config' object has no attribute 'cache'" in result.stderr.str()
    assert not crashed, "--gotchas with -p no:cacheprovider crashes in plugin.pytest_configure (config.cache is missing)"
    assert "a.yaml::nowhere" in result.outlines


# -- selection -------------------------------------------------------------------------------------------------------


def test_k_selects_one_chapter_by_its_name(pytester: pytest.Pytester, write_chapter) -> None:
    write_chapter(MISSING, name="a.yaml", header=HEADER.replace("chapter: demo", "chapter: sets"))
    write_chapter(MISSING + MISSING.replace("nowhere", "elsewhere"), name="b.yaml",
                  header=HEADER.replace("chapter: demo", "chapter: floats"))
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "-k", "sets")
    assert [ln for ln in result.outlines if "::" in ln] == ["a.yaml::nowhere"]
    assert "1/3 tests collected (2 deselected)" in result.stdout.str()


# -- only the selected cases are executed (issue 51, item 4) ---------------------------------------------------------

# `bad`'s candidates are not what Python prints: executed, ground truth refuses it.
REFUSED = """
- id: bad
  transcript: |-
    >>> 2 + 2
    █
  correct: "5"
  wrong: "3"
"""


def _executed(pytester: pytest.Pytester) -> int:
    """Snippets the run executed: one transcript-cache entry each (a cold cache)."""
    return len(list((pytester.path / ".pytest_cache" / "d" / "gotchas" / "transcripts").glob("*.json")))


def _sets_and_more(write_chapter) -> None:
    write_chapter(ONE_CASE, name="1-sets.yaml", header=HEADER.replace("chapter: demo", "chapter: sets"))
    write_chapter(TWO_CASES, name="2-multisets.yaml", header=HEADER.replace("chapter: demo", "chapter: multisets"))
    write_chapter(REFUSED, name="3-other.yaml", header=HEADER.replace("chapter: demo", "chapter: other"))


def test_k_executes_the_selected_cases_only(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _sets_and_more(write_chapter)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "-k", "plus")
    # the refused case of 3-other.yaml is not selected: never executed, so nothing refuses it
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert [ln for ln in result.outlines if "::" in ln] == ["1-sets.yaml::plus"]
    assert _executed(pytester) == 1


def test_a_selected_refused_case_still_fails_collection(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _sets_and_more(write_chapter)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q", "-k", "bad")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert [ln for ln in result.outlines if "::" in ln] == ["3-other.yaml::bad"]
    assert any("gotchas: ground truth refuses these cases" in line for line in result.outlines)
    assert _executed(pytester) == 1


def test_m_selects_one_chapter_exactly_under_strict_markers(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _sets_and_more(write_chapter)
    by_k = pytester.runpytest("--gotchas", "--collect-only", "-q", "-k", "sets")
    assert [ln for ln in by_k.outlines if "::" in ln] == ["1-sets.yaml::plus", "2-multisets.yaml::one",
                                                          "2-multisets.yaml::two"]  # a substring of "multisets"
    by_m = pytester.runpytest("--gotchas", "--collect-only", "-q", "--strict-markers", "-m", "gotchas_sets")
    assert by_m.ret == pytest.ExitCode.OK, by_m.stdout.str()
    assert [ln for ln in by_m.outlines if "::" in ln] == ["1-sets.yaml::plus"]


def test_a_full_collection_executes_every_case(pytester: pytest.Pytester, write_chapter, py312) -> None:
    _sets_and_more(write_chapter)
    result = pytester.runpytest("--gotchas", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # 3-other.yaml's refused case
    assert _executed(pytester) == 4
