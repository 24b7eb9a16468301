"""kernels.py and float32_matmul.py: the float32-matmul path computes a bfloat16 model's linear layers in float32
from the same values, is named in the numerics fingerprint, and is refused where it has nothing to do."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.numerics import RULES
from helpers.tinymodel import build_tiny_model

from pytest_gotchas.model import float32_matmul, kernels, numerics
from pytest_gotchas.model.load import ModelLoadError, ModelSpec, load_model


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def test_plain_is_refused_nowhere() -> None:
    assert kernels.refusal("plain", "float32") is None
    assert kernels.device_refusal("plain", "cuda:0", "m") is None
    assert kernels.refusal("float32-matmul", "bfloat16") is None
    assert kernels.device_refusal("float32-matmul", "cpu", "m") is None


def test_the_path_is_refused_where_it_has_nothing_to_replace() -> None:
    assert kernels.refusal("float32-matmul", "float16", flag="--") == (
        "--kernels float32-matmul computes bfloat16 models' matmuls in float32, and --dtype float16 has no bfloat16 "
        "matmul to replace: leave --kernels out, or run bfloat16")
    assert kernels.device_refusal("float32-matmul", "cuda:1", "m") == (
        "cannot load model 'm' with --gotchas-kernels float32-matmul on 'cuda:1': the path is for CPUs without "
        "native bfloat16 kernels, and a GPU computes bfloat16 natively; leave --gotchas-kernels out, or use "
        "--gotchas-device cpu")


def test_a_layer_on_the_path_is_its_float32_matmul_rounded_once() -> None:
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 32, bias=True).to(torch.bfloat16)
    weight, bias = layer.weight.detach().clone(), layer.bias.detach().clone()
    holder = torch.nn.Sequential(layer)
    holder.get_output_embeddings = lambda: None  # type: ignore[attr-defined]
    assert float32_matmul.apply(holder, "plain") == 0 and layer.weight.dtype == torch.bfloat16
    assert float32_matmul.apply(holder, "float32-matmul") == 1
    assert isinstance(layer, torch.nn.Linear) and layer.weight.dtype == torch.float32
    assert torch.equal(layer.weight.to(torch.bfloat16), weight)  # bfloat16 widens exactly: the same values
    x = torch.randn(7, 64).to(torch.bfloat16)
    out = layer(x)
    assert out.dtype == torch.bfloat16
    expected = torch.nn.functional.linear(x.float(), weight.float(), bias.float()).to(torch.bfloat16)
    assert torch.equal(out, expected)


def test_a_loaded_model_on_the_path_is_named_in_its_numerics(model: Path, tmp_path: Path) -> None:
    plain = load_model(ModelSpec(name=str(model), device="cpu"), tmp_path)
    fast = load_model(ModelSpec(name=str(model), device="cpu", kernels="float32-matmul"), tmp_path)
    head = fast.model.get_output_embeddings()
    linears = [m for m in fast.model.modules() if isinstance(m, torch.nn.Linear)]
    assert head.weight.dtype == torch.bfloat16 and fast.model.dtype == torch.bfloat16
    assert all(m.weight.dtype == torch.float32 for m in linears if m is not head)
    # The tiny model's sums are exact (one-hot embeddings, zero projections): both paths give the same bits, and
    # only the name tells the fingerprints apart.
    assert fast.info.numerics == f"float32-matmul:{plain.info.numerics}"
    assert numerics.named("0123", "plain") == "0123"
    assert fast.info.dtype == "bfloat16"


def test_loading_with_the_path_and_another_dtype_is_one_load_error(model: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError) as raised:
        load_model(ModelSpec(name=str(model), device="cpu", dtype="float32", kernels="float32-matmul"), tmp_path)
    assert str(raised.value) == (
        "--gotchas-kernels float32-matmul computes bfloat16 models' matmuls in float32, and --gotchas-dtype float32 "
        "has no bfloat16 matmul to replace: leave --gotchas-kernels out, or run bfloat16")
