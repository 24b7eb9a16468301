"""results/screening.py: the screen judged as AtP* judges it, by hand-made orders and grids."""

from __future__ import annotations

import pytest

from pytest_gotchas.results.screening import area, exact_top, found_at, found_within, screen_score, screen_sum
from pytest_gotchas.results.vocabulary import Cell, ComponentKind

A, M, H = ComponentKind.ATTN, ComponentKind.MLP, ComponentKind.HEAD
CELLS = [Cell(A, 1, 0, 0), Cell(M, 1, 0, 0), Cell(H, 1, 0, 0), Cell(A, 2, 0, 0), Cell(M, 2, 0, 0), Cell(H, 2, 0, 0)]
CHANGES = dict(zip(CELLS, [0.5, -3.0, 0.0, 2.0, 1.0, -0.25]))  # exact cell - unpatched, in logits


def test_the_exact_top_k_are_the_largest_changes_either_way_among_cells_that_move() -> None:
    assert exact_top(CHANGES, 3) == [CELLS[1], CELLS[3], CELLS[4]]
    assert exact_top(CHANGES, 10) == [CELLS[1], CELLS[3], CELLS[4], CELLS[0], CELLS[5]]  # not the cell that is 0


def test_a_screen_that_ranks_the_exact_top_first_scores_its_best() -> None:
    order = [CELLS[3], CELLS[1], CELLS[4], CELLS[0], CELLS[5], CELLS[2]]
    score = screen_score(order, order, CHANGES, 3)
    assert score is not None
    assert (score.k, score.cells, score.overlap, score.mass, score.top_mass) == (3, 6, 3, 1.0, 6.0)
    assert score.found_at == [2, 1, 3]
    assert score.area == pytest.approx((6 + 5 + 4) / 18)  # the best any order of 6 cells can do for 3


def test_a_screen_that_misses_counts_overlap_mass_and_the_verifications_it_costs() -> None:
    order = [CELLS[0], CELLS[2], CELLS[1], CELLS[5], CELLS[4], CELLS[3]]  # the largest two found late
    plain = list(reversed(order))
    score = screen_score(order, plain, CHANGES, 3)
    assert score is not None
    assert score.overlap == 1 and score.mass == pytest.approx((0.5 + 0.0 + 3.0) / 6.0)
    assert score.found_at == [3, 6, 5]
    assert [found_within(score, n) for n in (1, 3, 5, 6)] == [0, 1, 2, 3]
    assert score.area == pytest.approx(area([3, 6, 5], 6)) == pytest.approx((4 + 1 + 2) / 18)
    assert score.area_plain == pytest.approx(area(found_at(plain, exact_top(CHANGES, 3)), 6))
    assert score.area_plain > score.area


def test_nothing_to_find_is_no_score() -> None:
    assert screen_score(CELLS, CELLS, dict.fromkeys(CELLS, 0.0), 3) is None


def test_a_chapter_sums_counts_adds_curves_and_takes_the_mass_as_a_ratio_of_sums() -> None:
    good = screen_score([CELLS[3], CELLS[1], CELLS[4], CELLS[0], CELLS[5], CELLS[2]], CELLS, CHANGES, 3)
    bad = screen_score([CELLS[0], CELLS[2], CELLS[1], CELLS[5], CELLS[4], CELLS[3]], CELLS, CHANGES, 3)
    assert good is not None and bad is not None
    total = screen_sum([good, bad])
    assert total is not None
    assert (total.directions, total.k, total.overlap, total.all_found) == (2, 6, 4, 3 + 6)
    assert total.mass == pytest.approx((6.0 + 3.5) / 12.0)
    assert total.curve == [[1, 3 + 1], [2, 3 + 3], [5, 6], [10, 6]]  # found within k, 2k, 5k, 10k verifications
    assert total.area == pytest.approx((good.area + bad.area) / 2)
    assert screen_sum([]) is None


def test_the_exact_top_k_holds_only_cells_above_the_floor() -> None:
    """A cell a step or two of the metric from unpatched is tied with many others: which of them a top-k holds is
    the rounding's choice, so the exact top-k holds only cells that move the metric by the floor's least change."""
    assert exact_top(CHANGES, 10, least=1.0) == [CELLS[1], CELLS[3], CELLS[4]]
    order = [CELLS[0], CELLS[1], CELLS[3], CELLS[4], CELLS[5], CELLS[2]]
    score = screen_score(order, order, CHANGES, 5, least=1.0)
    assert score is not None and (score.k, score.found_at, score.least) == (3, [2, 3, 4], 1.0)
    assert screen_score(order, order, CHANGES, 5, least=5.0) is None


def test_the_least_change_the_floor_lets_count() -> None:
    from pytest_gotchas.results.effects import Floor, least, under_floor

    floor = Floor(steps=3, logits=0.3)
    assert least(20.0, "bfloat16", floor) == 0.3 and least(10.0, "bfloat16", floor) == 0.1875
    assert all(under_floor(x, 10.0, "bfloat16", floor) == (abs(x) < 0.1875) for x in (0.125, 0.1875, 0.25, -0.0625))
