"""Which backend a model name chooses (model/ref.ModelRef, backends/), its short name, and what the vLLM backend
refuses from the capabilities it declares (backends/vllm.CAPABILITIES through settings/wiring.asked). Runs without vLLM
installed."""

from __future__ import annotations

import pytest

from pytest_gotchas.backends import names, run_refusals
from pytest_gotchas.backends.protocol import TRANSFORMERS
from pytest_gotchas.model.ref import DEFAULT, ModelRef, model_refs, short_ids
from pytest_gotchas.settings.options import Settings
from pytest_gotchas.settings.wiring import asked

VLLM = "vllm"


@pytest.mark.parametrize("name, expected", [
    ("vllm:gemma-3-270m", (VLLM, "gemma-3-270m")),
    ("vllm: google/gemma-3-270m ", (VLLM, "google/gemma-3-270m")),
    ("vllm:", (VLLM, None)),
    ("gemma-3-270m", (TRANSFORMERS, "gemma-3-270m")),
    (None, (TRANSFORMERS, None)),
    ("/models/vllm:odd", (TRANSFORMERS, "/models/vllm:odd")),  # only a leading vllm: chooses the backend
    ("C:\\models\\m.gguf", (TRANSFORMERS, "C:\\models\\m.gguf")),  # a drive letter is no backend
])
def test_parse(name: str | None, expected: tuple[str, str | None]) -> None:
    assert ModelRef.parse(name) == ModelRef(*expected)


def test_the_word_default_is_the_embedded_default_wherever_it_is_written() -> None:
    assert ModelRef.parse("default") == ModelRef() and ModelRef.parse("vllm:default") == ModelRef(VLLM)
    assert model_refs([]) == [ModelRef()] and ModelRef().written == DEFAULT


def test_a_vllm_model_is_a_model_of_its_own() -> None:
    assert ModelRef.parse("vllm:gemma-3-270m").short == "vllm-gemma-3-270m"
    assert ModelRef.parse("vllm:").short == f"vllm-{DEFAULT}"
    assert ModelRef.parse("vllm:org/Some-Model.gguf").short == f"vllm-{ModelRef.parse('org/Some-Model.gguf').short}"
    assert short_ids(model_refs(["gemma-3-270m", "vllm:gemma-3-270m"])) == ["gemma-3-270m", "vllm-gemma-3-270m"]


def refusals(settings: Settings, models: list[str | None], flag: str = "--gotchas-", workers: int = 0) -> list[str]:
    return run_refusals(model_refs(models), asked(settings, flag, workers), flag)


def settings(**values: object) -> Settings:
    return Settings(**values)  # type: ignore[arg-type]


def test_a_transformers_run_refuses_nothing() -> None:
    assert refusals(settings(layers=True, precision_check=True, device="mps"), ["gemma-3-270m", None], workers=2) == []


@pytest.mark.parametrize("setting, flag", [("layers", "--gotchas-layers"),
                                           ("precision_check", "--gotchas-precision-check"),
                                           ("patch", "--gotchas-patch"),
                                           ("patch_components", "--gotchas-patch-components"),
                                           ("patch_screen", "--gotchas-patch-screen"),
                                           ("patch_edges", "--gotchas-patch-edges"),
                                           ("one_pass_check", "--gotchas-one-pass-check")])
def test_each_unsupported_option_is_named_with_the_backend(setting: str, flag: str) -> None:
    (message,) = refusals(settings(**{setting: True}), ["gemma-3-270m", "vllm:gemma-3-270m"])
    assert message.startswith(f"{flag} cannot be used with the vllm backend (vllm:gemma-3-270m): ")


def test_the_screen_alone_is_refused_in_one_message() -> None:
    assert refusals(settings(patch_screen=True), ["vllm:gemma-3-270m"]) == [
        "--gotchas-patch-screen cannot be used with the vllm backend (vllm:gemma-3-270m): the screen takes gradients "
        "at attention and MLP outputs and verifies its top-k by replacing them inside the forward pass, and vLLM's "
        "engine exposes neither"]


def test_the_edges_are_refused_in_one_message() -> None:
    assert refusals(settings(patch_edges=True), ["vllm:gemma-3-270m"]) == [
        "--gotchas-patch-edges cannot be used with the vllm backend (vllm:gemma-3-270m): edge patching takes "
        "gradients at every head's and MLP's inputs and rewrites each input's residual stream inside the forward "
        "pass, and vLLM's engine exposes neither"]


def test_a_kernel_path_is_transformers_own() -> None:
    assert refusals(settings(kernels="plain"), ["vllm:x"]) == []
    assert refusals(settings(kernels="float32-matmul"), ["vllm:x"]) == [
        "--gotchas-kernels float32-matmul cannot be used with the vllm backend (vllm:x): the path replaces "
        "transformers' linear layers, and vLLM runs kernels of its own (leave it out)"]


def test_every_refusal_at_once_and_xdist_workers() -> None:
    messages = refusals(settings(layers=True, precision_check=True, device="auto"), ["vllm:x"], workers=2)
    assert [m.split(" cannot")[0] for m in messages] == ["--gotchas-layers", "--gotchas-precision-check",
                                                        "--gotchas-device auto", "-n 2"]


@pytest.mark.parametrize("device", [None, "cpu", "cuda"])
def test_a_device_vllm_can_place_itself_on_is_not_refused(device: str | None) -> None:
    assert refusals(settings(device=device), ["vllm:x"]) == []


def test_the_tools_spell_their_flags_without_gotchas() -> None:
    (message,) = refusals(settings(layers=True), ["vllm:x"], flag="--")
    assert message.startswith("--layers cannot be used with the vllm backend")


def test_nothing_imports_vllm_until_a_vllm_model_loads() -> None:
    """The backend's choice, the options and the scorer import no vLLM: a transformers run never does."""
    import subprocess
    import sys

    code = ("import sys; import pytest_gotchas.plugin.hooks, pytest_gotchas.settings.wiring, "
            "pytest_gotchas.scoring.scorer, pytest_gotchas.backends.vllm, pytest_gotchas.report.terminal; "
            "print('vllm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_backends_are_the_modules_of_the_folder() -> None:
    assert names() == ["transformers", "vllm"]


def test_a_prefix_that_names_no_backend_is_one_message() -> None:
    assert refusals(settings(), ["llamacpp:x"]) == [
        "there is no backend named 'llamacpp' (a model name's prefix before ':' names one): the backends are "
        "transformers, vllm"]
    assert refusals(settings(), ["protocol:x"])[0].startswith("there is no backend named 'protocol'")
