"""bench/families.py's count: the paired instances a setting draws, and every case id the run must list."""

from __future__ import annotations

from pathlib import Path

from bench.families import expected
from helpers.families import FAMILY_CHAPTER


def test_the_count_is_the_pairs_drawn_and_the_ids_every_case(tmp_path: Path) -> None:
    (tmp_path / "fam.yaml").write_text(FAMILY_CHAPTER, encoding="utf-8")
    families, pairs, ids = expected(tmp_path, 4)
    assert (families, pairs, len(ids)) == (1, 4, 2 + 8)
    assert {"cases/fam.yaml::list-first", "cases/fam.yaml::set-first"} <= ids
    assert expected(tmp_path, 0) == (1, 0, {"cases/fam.yaml::list-first", "cases/fam.yaml::set-first"})
