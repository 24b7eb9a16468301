"""bench/components.py's FLOP counts: the component grid costs about (3 + heads) residual rows per position, one
layer more each; the screen is a few passes and k cells, whatever the grid's size."""

from __future__ import annotations

from bench.components import BIGGER, component_flops, residual_flops, screen_flops
from bench.patching import Shape

TOY = Shape("toy", 4, 8, 16, 2, 1, 4, 32)


def test_the_counts_follow_the_layers_each_row_runs() -> None:
    layer = 2 * TOY.layer_params
    assert residual_flops(TOY, 10, 3) == 3 * 6 * 10 * layer  # rows x (0+1+2+3) layer passes x tokens
    assert component_flops(TOY, 10, 2) == (2 * 5 + 6) * 10 * 10 * layer  # rows x (1+2+3+4) x tokens
    assert screen_flops(TOY, 10, 4, graddrop=False) == 3 * 4 * 10 * layer + 4 * 3 * 10 * layer
    assert screen_flops(TOY, 10, 4) - screen_flops(TOY, 10, 4, graddrop=False) == 3 * 2 * 4 * 10 * layer  # 3 drops


def test_the_projection_names_a_2b_a_9b_and_a_70b_model() -> None:
    assert [s.name for s in BIGGER] == ["gemma-2-2b", "gemma-2-9b", "Llama-3-70B"]
    assert screen_flops(BIGGER[2], 100, 20) < component_flops(BIGGER[2], 100, 10) / 100


def _direction(source: str, seconds: float, components: object) -> object:
    from pytest_gotchas.results.schema import Patching

    return Patching(source=source, target="a", primer=None, source_ids=[1, 5, 7, 9], target_ids=[1, 6, 7, 9],
                    candidate_ids=[3, 4], layers=[1, 2], positions=[[1, 1], [2, 2], [3, 3]], tokens=["x", "y", "="],
                    unpatched=2.0, source_value=0.0, cells=[], method="from-layer", seconds=seconds,
                    components=components)  # type: ignore[arg-type]


def _components(method: str, grid: float, screen: float, verify: float, k: int = 2) -> object:
    from pytest_gotchas.results.schema import Components, Screened

    cell = Screened(kind="mlp", layer=1, head=0, position=2, estimate=-1.0, exact=1.0)
    return Components(layers=[], heads=1, attn=[], mlp=[], head=[], post_norms=False, batched=False,
                      screened=[cell] * k, method=method, grid_seconds=grid, screen_seconds=screen,
                      verify_seconds=verify)


def test_the_recorded_costs_sit_side_by_side_with_their_totals_and_the_ratio_to_the_residual_grid() -> None:
    from bench.components import Recorded, recorded, recorded_table

    entries = [_direction("b", 6.0, _components("exact", 30.0, 0.5, 1.0)),
               _direction("c", 4.0, _components("screen", 0.0, 0.25, 0.25, k=3))]
    costs = recorded(entries)  # type: ignore[arg-type]
    assert costs == [Recorded("b -> a", 4, 3, "exact", 2, 6.0, 30.0, 0.5, 1.0),
                     Recorded("c -> a", 4, 3, "screen", 3, 4.0, 0.0, 0.25, 0.25)]
    assert recorded_table(costs) == [
        "| direction | T | positions | k | residual s | component grid s | screen s | verify s | "
        "(screen + verify) / residual |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| b -> a | 4 | 3 | 2 | 6.00 | 30.00 | 0.50 | 1.00 | 0.25 |",
        "| c -> a | 4 | 3 | 3 | 4.00 | not run | 0.25 | 0.25 | 0.12 |",
        "| all 2 directions | | | | 10.00 | 30.00 | 0.75 | 1.25 | 0.20 |",
        "",
        "(screen + verify) / residual over the report: 0.200 (aim: under 1/3)",
        "component grid / residual over the 1 directions that ran it: 5.000"]


def test_a_report_without_components_or_seconds_is_refused_with_why() -> None:
    import pytest

    from bench.components import NotRecorded, recorded

    with pytest.raises(NotRecorded, match="^b -> a has no components: run the report with --gotchas-patch-components"
                       " or --gotchas-patch-screen$"):
        recorded([_direction("b", 6.0, None)])  # type: ignore[list-item]
    with pytest.raises(NotRecorded, match="^b -> a records no seconds: the report was written before the costs were "
                       r"recorded \(run it again\)$"):
        recorded([_direction("b", 0.0, _components("exact", 0.0, 0.0, 0.0))])  # type: ignore[list-item]


def test_the_projection_counts_each_direction_s_own_k() -> None:
    from bench.components import projection

    entries = [_direction("b", 1.0, _components("screen", 0.0, 1.0, 1.0))]
    small, large = projection(entries, lambda e: 1), projection(entries, lambda e: 1000)  # type: ignore[arg-type]
    assert [line.split(" | ")[0] for line in small[2:]] == ["| gemma-2-2b", "| gemma-2-9b", "| Llama-3-70B"]
    assert [line.split(" | ")[1:3] for line in small[2:]] == [line.split(" | ")[1:3] for line in large[2:]]
    assert all(a.split(" | ")[3] != b.split(" | ")[3] for a, b in zip(small[2:], large[2:]))


def test_the_command_takes_one_report_one_way() -> None:
    import pytest

    from bench.components import main

    with pytest.raises(SystemExit):
        main([])
    with pytest.raises(SystemExit):
        main(["x.json", "--from-report", "y.json"])
