"""A model split over devices, as device_map does it (accelerate's hooks move each module's inputs to its device): the
residual grid, the exact component grid and the screen keep each activation on its layer's device and find what the
tiny models were built to carry, with every exactness check. It needs a GPU beside the CPU (skipped without one): the
GPU box this project is lent has one GPU, so the split is GPU + CPU, in both orders."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

from pytest_gotchas.scoring import components as C  # noqa: E402
from pytest_gotchas.scoring import patching as P  # noqa: E402
from pytest_gotchas.scoring.screen import screen  # noqa: E402

from helpers.tinycomponents import component_model  # noqa: E402
from helpers.tinypatch import BOS, EQ, NO, YES, A, B, X, Y, Z, answer_model  # noqa: E402
from helpers.tinypatch import C as TC  # noqa: E402
from helpers.tinypatch import D as TD  # noqa: E402
from pytest_gotchas.results.vocabulary import Cell, ComponentKind, PatchMetric  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU to split a model over two devices")

SOURCE = (BOS, TC, X, A, Y, Z, EQ)  # answers YES
TARGET = (BOS, TD, X, B, Y, Z, EQ)  # answers NO
IDS = (NO, YES)
CUT = [0.0] * 5 + [1.0]
# Layer 1 on one device, layer 2 and the head on the other; the embedding with layer 1. main_device="cpu" keeps the
# CPU's modules computing on the CPU (otherwise accelerate offloads them: weights moved to the GPU for each pass).
ORDERS = {"gpu-then-cpu": (0, "cpu"), "cpu-then-gpu": ("cpu", 0)}


def split(model, first, second):
    from accelerate import dispatch_model

    device_map = {"model.embed_tokens": first, "model.rotary_emb": first, "model.layers.0": first,
                  "model.layers.1": second, "model.norm": second, "lm_head": second}
    model = dispatch_model(model, device_map=device_map, main_device="cpu")
    layers = model.model.layers
    assert {layers[0].mlp.down_proj.weight.device.type, layers[1].mlp.down_proj.weight.device.type} == {"cuda", "cpu"}
    return model


def fractions(unpatched, source_value, row):
    return [(cell - unpatched) / (source_value - unpatched) for cell in row]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("method", P.METHODS)
def test_the_residual_grid_over_two_devices_finds_the_key_token(order: str, method: str) -> None:
    model = split(answer_model(), *ORDERS[order])
    source, target = P.member_pass(model, SOURCE), P.member_pass(model, TARGET)
    result = P.patch(model, source, target, IDS, method)
    assert result.fractions == [[0.0, 0.0, 1.0, 0.0, 0.0, 0.0], [0.0] * 5 + [1.0]]
    assert result.cells[-1][-1] == result.source_value
    assert all(check.passed for check in result.checks)


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("metric", [PatchMetric.MODEL, PatchMetric.FLOAT32])
def test_the_component_grid_and_the_screen_over_two_devices_find_the_head_and_the_mlp(order: str, metric: str) -> None:
    model = split(component_model(), *ORDERS[order])
    source, target = C.component_pass(model, SOURCE), C.component_pass(model, TARGET)
    # Each kept activation is gathered on the logits' device, whichever device its layer ran on.
    assert source.attn.device == source.mlp.device == source.heads.device == source.member.logits.device
    result = C.patch_components(model, source, target, IDS, metric=metric)
    row = lambda cells: fractions(result.unpatched, result.source_value, cells)  # noqa: E731
    assert row(result.head[0][0]) == row(result.attn[0]) == row(result.mlp[1]) == CUT
    assert row(result.mlp[0]) == row(result.attn[1]) == [0.0] * 6
    assert [(c.name, c.passed) for c in result.checks] == [
        ("shared-prefix", True), ("self-patch", True), ("all-heads", True)]
    screened = screen(model, source, target, IDS, k=4, metric=metric)
    cut = len(result.positions) - 1
    assert {Cell(ComponentKind.HEAD, 1, 0, cut), Cell(ComponentKind.MLP, 2, 0, cut)} <= set(screened.top(4))
