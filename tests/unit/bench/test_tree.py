"""bench.tree's pure parts: how many readings moved and by how much, which verdicts moved, and a report's forward
calls against its runs and prompts, read from two hand-made JSON documents."""

from __future__ import annotations

import copy

from bench.tree import calls, reading_moves, verdict_moves


def reading(pc: float, pw: float, verdict: str) -> dict:
    return {"p_correct": pc, "p_wrong": pw, "verdict": verdict}


def report(text_b: dict, tree: bool) -> dict:
    runs = [{"prompt": ">>> a", "primer": None, "readings": {"text": reading(0.5, 0.25, "ok"),
                                                            "token": reading(0.5, 0.25, "ok")}},
            {"prompt": ">>> b", "primer": None, "readings": {"text": text_b, "token": reading(0.5, 0.25, "ok")}}]
    timings = {"forward_calls": 2, "forward_passes": 2, "incremental_steps": 5, "incremental_tokens": 6}
    if tree:
        timings.update(tree_calls=1, tree_contexts=5)
    return {"cases": [{"chapter": "sets", "id": "a", "verdict": "ok", "reading_verdicts": {"text": "ok"},
                       "runs": runs[:1]},
                      {"chapter": "sets", "id": "b", "verdict": text_b["verdict"],
                       "reading_verdicts": {"text": text_b["verdict"]}, "runs": runs[1:]}],
            "pairs": [{"chapter": "sets", "id": "ab", "passed": text_b["verdict"] == "ok"}],
            "run": {"timings": timings}}


def test_what_moved_and_what_the_calls_were() -> None:
    before = report(reading(0.5, 0.25, "ok"), tree=False)
    after = report(reading(0.375, 0.375, "tie"), tree=True)
    assert reading_moves(before, after) == {"text": (1, 0.125)}
    assert reading_moves(before, copy.deepcopy(before)) == {}
    assert verdict_moves(before, after) == ["run sets/b[0] text: ok -> tie", "case sets/b: ok -> tie",
                                            "case sets/b by text: ok -> tie", "pair sets/ab: True -> False"]
    assert calls(before) == ("2 runs, 2 distinct prompts: 7 forward calls = 2 full (2 passes) + 0 trees (0 contexts, "
                             "6 tokens fed) + 5 per-context steps; 5 contexts on a KV cache")
    assert calls(after).startswith("2 runs, 2 distinct prompts: 3 forward calls = 2 full (2 passes) + 1 trees (5 "
                                   "contexts, 6 tokens fed) + 0 per-context steps")
