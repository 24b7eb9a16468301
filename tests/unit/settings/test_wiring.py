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
])
def test_the_patching_flags_are_one_mode(flags: dict[str, bool], mode: PatchMode | None) -> None:
    assert patch_mode(Settings(**flags)) == mode
