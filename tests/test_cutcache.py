"""The cache of the tokenizer's answers at each cut: a warm run gives the same numbers without loading the tokenizer.

No timing is asserted here: the benchmark (bench/run.py) measures; these tests check what is cached, when it is
used, and that nothing it gives differs from asking the tokenizer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tinymodel import build_tiny_model

pytest.importorskip("transformers")

from pytest_gotchas.scoring.cutcache import CutCache, plan_from_dict, plan_to_dict  # noqa: E402
from pytest_gotchas.model.hashes import tokenizer_fingerprint  # noqa: E402
from pytest_gotchas.model.load import ModelSpec, load_model  # noqa: E402
from pytest_gotchas.scoring.cut import plan_cut  # noqa: E402
from pytest_gotchas.files import write_sealed  # noqa: E402

RULES = {"a": {"7": 2.0, "8": 1.0}, "6": {"),": 2.0, ")]": 1.0}, "[": {"'": 1.0, "'.": 1.0}}
CUTS = [("a", "7", "8"), ("[(5, 6)", ",", "]"), ("[{'", "k", ".")]  # plain, healed, chain

CHAPTER = """\
chapter: demo
title: "cached cuts"
interpreter: "3.11"
env: {PYTHONHASHSEED: "0"}
cases:
  - id: plain
    transcript: |-
      >>> print("a7")
      a█
    correct: "7"
    wrong: "8"
  - id: healed
    transcript: |-
      >>> [(5, 6), (7, 8)]
      [(5, 6)█
    correct: ","
    wrong: "]"
"""


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


@pytest.fixture
def run(pytester: pytest.Pytester, tiny_folder: Path):
    (pytester.path / "demo.yaml").write_text(CHAPTER)

    def go(*args: str) -> tuple[pytest.RunResult, dict]:
        result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(tiny_folder), "--gotchas-cache-dir",
                                               str(pytester.path / "models"), "--gotchas-json", "out.json", *args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        return result, json.loads((pytester.path / "out.json").read_text())

    return go


def test_a_warm_run_gives_the_same_numbers_without_the_tokenizer(run) -> None:
    _, cold = run()
    _, warm = run()
    assert warm["cases"] == cold["cases"]
    first, again = cold["run"]["timings"], warm["run"]["timings"]
    assert first["tokenizer_loaded"] and first["cut_cache"] == {"hits": 0, "misses": 2}
    assert not again["tokenizer_loaded"] and again["cut_cache"] == {"hits": 2, "misses": 0}
    assert again["seconds"]["tokenizer_load"] == 0.0
    assert again["transcript_cache"] == {"hits": 2, "misses": 0}
    assert set(again["seconds"]) == {"collection", "model_load", "tokenizer_load", "cuts", "forward", "layers", "report"}
    # one full pass per prompt: the healed cut's back-off is its prompt's pass one position earlier
    assert again["forward_passes"] == 2 == sum(r["forward_passes"] for c in warm["cases"] for r in c["runs"])
    assert again["forward_calls"] == 2  # batch size 1: one call per prompt


def test_an_edited_entry_is_not_trusted(run, pytester: pytest.Pytester) -> None:
    """Swapping the candidates' token ids in a cached plan would swap P(correct) and P(wrong): a MISS read as ok.
    The entry's checksum no longer matches, so the cut is planned again and the numbers stay right."""
    cache = ("-o", f"cache_dir={pytester.path / 'cache'}")
    _, cold = run(*cache)
    entries = list((pytester.path / "cache" / "d" / "gotchas" / "cuts").glob("*.json"))
    assert len(entries) == 2
    for path in entries:
        data = json.loads(path.read_text())
        plan = data["payload"]["plan"]
        plan["correct_ids"], plan["wrong_ids"] = plan["wrong_ids"], plan["correct_ids"]
        path.write_text(json.dumps(data))
    _, again = run(*cache)
    assert again["cases"] == cold["cases"]
    assert again["run"]["timings"]["cut_cache"] == {"hits": 0, "misses": 2}
    _, third = run(*cache)
    assert third["run"]["timings"]["cut_cache"] == {"hits": 2, "misses": 0}  # rewritten, trusted again


def test_an_entry_of_another_shape_is_planned_again(tiny_folder: Path, tmp_path: Path) -> None:
    cache = CutCache(tmp_path / "cuts", "key")
    key = cache._key(CUTS[0])
    for payload in ({"plan": {"kind": "plain"}, "decoded": {}}, {"plan": None}, [1, 2], {"plan": {**dict.fromkeys(
            ("kind", "context_ids", "correct_ids", "wrong_ids", "correct_tokens", "wrong_tokens", "backed_off_chars",
             "plain_correct_id", "plain_wrong_id", "prompt_ids"), []), "kind": "plain"}, "decoded": {}}):
        write_sealed(cache._path(key), key, payload)
        assert cache.get(*CUTS[0]) is None


def test_without_the_cache_provider_the_tokenizer_is_loaded_with_the_model(run) -> None:
    _, data = run("-p", "no:cacheprovider")
    timings = data["run"]["timings"]
    assert timings["tokenizer_loaded"] and timings["cut_cache"] == {"hits": 0, "misses": 0}


def test_xdist_reports_each_workers_timings(run) -> None:
    _, serial = run("-p", "no:xdist")
    _, parallel = run("-n", "2")
    assert parallel["cases"] == serial["cases"]
    workers = parallel["run"]["timings"]["workers"]
    assert set(workers) <= {"gw0", "gw1"} and workers
    assert sum(w["forward_passes"] for w in workers.values()) == 2


def test_device_auto_loads_with_a_device_map(run) -> None:
    _, default = run()
    _, auto = run("--gotchas-device", "auto")
    assert auto["model"]["device"] == "auto:cpu"
    assert auto["cases"] == default["cases"]
