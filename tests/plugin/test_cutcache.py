"""The cut cache through the plugin: a warm run gives the same numbers without loading the tokenizer, an edited
entry is not trusted, and the runs without the cache provider, under xdist and with --gotchas-device auto.

No timing is asserted here: the benchmark (python -m bench.run) measures; these tests check what is cached, when it is
used, and that nothing it gives differs from asking the tokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cutcache import CHAPTER, RULES
from helpers.tinymodel import build_tiny_model
from helpers.results import read_report

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", RULES)


@pytest.fixture
def run(pytester: pytest.Pytester, tiny_folder: Path):
    (pytester.path / "demo.yaml").write_text(CHAPTER)

    def go(*args: str) -> tuple[pytest.RunResult, dict]:
        # --rootdir: else pytest takes the common folder of the paths among the arguments (the model's, shared by
        # the module's tests) as the rootdir, and its .pytest_cache, the cut cache, with it.
        result = pytester.runpytest_subprocess("--gotchas", "--gotchas-model", str(tiny_folder), "--gotchas-cache-dir",
                                               str(pytester.path / "models"), "--gotchas-json", "out.json",
                                               "--rootdir", str(pytester.path), *args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        return result, read_report(pytester.path / "out.json")

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
    assert set(again["seconds"]) == {"collection", "model_load", "tokenizer_load", "cuts", "forward", "layers", "patching",
                                     "report", "ahead"}
    # one full pass per prompt, and one for the healed cut's back-off (the token reading reads no earlier position)
    assert again["forward_passes"] == 3 == sum(r["forward_passes"] for c in warm["cases"] for r in c["runs"])
    assert again["forward_calls"] == 3  # batch size 1: one call per pass


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


def test_without_the_cache_provider_the_tokenizer_is_loaded_with_the_model(run) -> None:
    _, data = run("-p", "no:cacheprovider")
    timings = data["run"]["timings"]
    assert timings["tokenizer_loaded"] and timings["cut_cache"] == {"hits": 0, "misses": 0}


def test_xdist_reports_each_workers_timings(run) -> None:
    _, serial = run("-p", "no:xdist")
    _, parallel = run("-n", "2")
    assert parallel["cases"] == serial["cases"]
    workers = parallel["run"]["workers"]
    assert set(workers) <= {"gw0", "gw1"} and workers
    assert sum(w["forward_passes"] for w in workers.values()) == 3


def test_device_auto_loads_with_a_device_map(run) -> None:
    _, default = run()
    _, auto = run("--gotchas-device", "auto")
    assert auto["models"][0]["device"] == "auto:cpu"
    assert auto["cases"] == default["cases"]
