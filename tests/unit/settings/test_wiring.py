"""settings/wiring.py: the three patching flags reach scoring as one PatchMode."""

from __future__ import annotations

import pytest

from pytest_gotchas.results.vocabulary import PatchMode
from pytest_gotchas.settings.options import Settings
from pytest_gotchas.settings.wiring import patch_mode


@pytest.mark.parametrize(("flags", "mode"), [
    ({}, None),
    ({"patch": True}, PatchMode.RESIDUAL),
    ({"patch_components": True}, PatchMode.COMPONENTS),
    ({"patch_screen": True}, PatchMode.SCREEN),
    ({"patch": True, "patch_screen": True}, PatchMode.SCREEN),
    ({"patch_components": True, "patch_screen": True}, PatchMode.COMPONENTS),  # the grid with the screen beside it
    ({"patch_edges": True}, PatchMode.RESIDUAL),  # the edges imply the residual grid
    ({"patch_edges": True, "patch_components": True}, PatchMode.COMPONENTS),
])
def test_the_patching_flags_are_one_mode(flags: dict[str, bool], mode: PatchMode | None) -> None:
    assert patch_mode(Settings(**flags)) == mode


def test_the_edges_settings_reach_scoring() -> None:
    from pytest_gotchas.results.effects import Floor
    from pytest_gotchas.scoring.pairedges import EdgeConfig
    from pytest_gotchas.settings.wiring import scoring_config

    config = scoring_config(Settings(patch_edges=True, patch_edges_steps=7, patch_edges_k=3, patch_floor_steps=2,
                                     patch_floor_logits=0.5), None)
    assert (config.patch, config.patch_edges, config.patch_floor) == (PatchMode.RESIDUAL, EdgeConfig(7, 3),
                                                                      Floor(2, 0.5))
    assert scoring_config(Settings(patch=True), None).patch_edges is None
