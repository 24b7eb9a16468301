"""The cache of the tokenizer's answers at each cut (cutcache.py): plans read back exactly, an entry that is
damaged or of another shape is planned again, the key follows the tokenizer's files and not the weights, and a
lazily loaded tokenizer is loaded on first use and checked.

No timing is asserted here: the benchmark (python -m bench.run) measures. tests/plugin/test_cutcache.py checks that a
warm run gives the same numbers without loading the tokenizer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.cutcache import CUTS, RULES
from helpers.tinymodel import build_tiny_model

pytest.importorskip("transformers")

from pytest_gotchas.scoring.cutcache import CutCache, plan_from_dict, plan_to_dict  # noqa: E402
from pytest_gotchas.model.hashes import tokenizer_fingerprint  # noqa: E402
from pytest_gotchas.model.load import ModelSpec, load_model  # noqa: E402
from pytest_gotchas.scoring.cut import plan_cut  # noqa: E402
from pytest_gotchas.files import write_sealed  # noqa: E402


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


def test_plans_round_trip_exactly(tiny_folder: Path, tmp_path: Path) -> None:
    loaded = load_model(ModelSpec(name=str(tiny_folder), device="cpu"), tmp_path / "models")
    plans = [plan_cut(loaded.tokenizer, *texts) for texts in CUTS]
    assert [p.kind for p in plans] == ["plain", "healed", "chain"]
    cache = CutCache(tmp_path / "cuts", "key")
    for texts, plan in zip(CUTS, plans):
        assert plan_from_dict(json.loads(json.dumps(plan_to_dict(plan)))) == plan
        assert cache.get(*texts) is None
        cache.put(*texts, plan, {7: "x", 2: "<bos>"})
    for texts, plan in zip(CUTS, plans):
        assert cache.get(*texts) == (plan, {2: "<bos>", 7: "x"})
    assert (cache.hits, cache.misses) == (3, 3)
    assert CutCache(tmp_path / "cuts", "another tokenizer").get(*CUTS[0]) is None
    assert CutCache(None, "key").get(*CUTS[0]) is None
    for path in (tmp_path / "cuts").iterdir():
        path.write_text("{not json")
    assert cache.get(*CUTS[0]) is None  # damaged: asked again, never an error


def test_lazy_tokenizer_is_loaded_on_first_use_and_checked(tiny_folder: Path, tmp_path: Path) -> None:
    loaded = load_model(ModelSpec(name=str(tiny_folder), device="cpu"), tmp_path, lazy_tokenizer=True)
    assert not loaded.tokenizer_loaded and loaded.tokenizer_seconds == 0.0
    assert loaded.tokenizer_key == tokenizer_fingerprint(tiny_folder, tmp_path)
    assert loaded.tokenizer("x")["input_ids"][0] == loaded.tokenizer.bos_token_id
    assert loaded.tokenizer_loaded and loaded.tokenizer_seconds > 0
    eager = load_model(ModelSpec(name=str(tiny_folder), device="cpu"), tmp_path)
    assert eager.tokenizer_loaded and eager.tokenizer_key is None


def test_fingerprint_follows_the_tokenizer_files_not_the_weights(tiny_folder: Path, tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(tiny_folder, folder)
    before = tokenizer_fingerprint(folder, tmp_path)
    assert before == tokenizer_fingerprint(tiny_folder, tmp_path)  # content, not the path
    (folder / "model.safetensors").write_bytes(b"other weights")
    assert tokenizer_fingerprint(folder, tmp_path) == before
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 7}))
    assert tokenizer_fingerprint(folder, tmp_path) != before


def test_an_entry_of_another_shape_is_planned_again(tiny_folder: Path, tmp_path: Path) -> None:
    cache = CutCache(tmp_path / "cuts", "key")
    key = cache._key(CUTS[0])
    for payload in ({"plan": {"kind": "plain"}, "decoded": {}}, {"plan": None}, [1, 2], {"plan": {**dict.fromkeys(
            ("kind", "context_ids", "correct_ids", "wrong_ids", "correct_tokens", "wrong_tokens", "backed_off_chars",
             "plain_correct_id", "plain_wrong_id", "prompt_ids"), []), "kind": "plain"}, "decoded": {}}):
        write_sealed(cache._path(key), key, payload)
        assert cache.get(*CUTS[0]) is None


def test_a_first_run_loads_the_tokenizer_in_a_thread_beside_the_weights(tiny_folder: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from pytest_gotchas.model import tokenizer

    threads, asked = [], []
    real = tokenizer.load_tokenizer
    monkeypatch.setattr(tokenizer, "load_tokenizer",
                        lambda *a: threads.append(threading.current_thread().name) or real(*a))
    first = load_model(ModelSpec(name=str(tiny_folder), device="cpu"), tmp_path, lazy_tokenizer=True,
                       prefetch=lambda key: asked.append(key) or True)
    assert asked == [tokenizer_fingerprint(tiny_folder, tmp_path)] == [first.tokenizer_key]
    assert first.tokenizer("x")["input_ids"][0] == first.tokenizer.bos_token_id
    assert threads == ["gotchas-tokenizer"] and first.tokenizer_loaded
    warm = load_model(ModelSpec(name=str(tiny_folder), device="cpu"), tmp_path, lazy_tokenizer=True,
                      prefetch=lambda key: False)
    assert not warm.tokenizer_loaded and threads == ["gotchas-tokenizer"]  # not loaded, in no thread
    assert warm.tokenizer is not None and threads == ["gotchas-tokenizer", "MainThread"]


def test_a_tokenizer_that_fails_in_its_thread_fails_on_first_use_as_a_lazy_one_does(tiny_folder: Path,
                                                                                   tmp_path: Path) -> None:
    from pytest_gotchas.model.load import ModelLoadError

    folder = tmp_path / "broken"
    shutil.copytree(tiny_folder, folder)
    (folder / "tokenizer.json").write_text("{not json")
    messages = []
    for prefetch in (lambda key: True, None):
        loaded = load_model(ModelSpec(name=str(folder), device="cpu"), tmp_path, lazy_tokenizer=True,
                            prefetch=prefetch)
        with pytest.raises(ModelLoadError) as raised:
            loaded.tokenizer
        messages.append(str(raised.value))
    assert messages[0] == messages[1] and messages[0].startswith(
        f"cannot load the tokenizer of model {str(folder)!r} from {folder}: ")


def test_a_first_run_is_one_whose_text_reading_table_is_not_stored(tiny_folder: Path, tmp_path: Path) -> None:
    from pytest_gotchas.settings.options import Settings
    from pytest_gotchas.settings.wiring import first_run
    from pytest_gotchas.scoring.vocab import VocabCache

    assert first_run(Settings(), None) is None  # no cache folder: the tokenizer loads with the model
    assert first_run(Settings(reading="token"), tmp_path) is None
    asks = first_run(Settings(), tmp_path)
    assert asks is not None and asks("key")
    cache = VocabCache(tmp_path / "vocab", "key")
    cache.get(lambda: load_model(ModelSpec(name=str(tiny_folder), device="cpu"), tmp_path).tokenizer)
    assert cache.stored() and not asks("key") and asks("another tokenizer")
