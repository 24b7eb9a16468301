"""A baseline records how the text reading's chains were computed (its header's `text_path`), and a comparison whose
only difference is that way names it as the cause: not other kernels, not a bug. A file of format 4 was written by
versions that stepped the chains (through vLLM: prompts of their own), and reads as such."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from helpers.baselines import HEADER, MODEL, infos, info
from helpers.results import make_case, make_run

from pytest_gotchas.baseline import compare as cmp
from pytest_gotchas.baseline import gate, store
from pytest_gotchas.report import wording_baseline
from pytest_gotchas.results.schema import CaseResult, Run
from pytest_gotchas.results.vocabulary import ReadingKind, ReadingName, TextPath

PATH = "baselines/tiny-bfloat16-cpu.yaml"
CHAPTERS = infos(info())
STEPPED = replace(HEADER, reading="text", bos="auto: <bos>", kernels="plain", text_path="steps")
# This run: the same model, machine and libraries; the chains as a tree, so the fingerprint (which probes it) moved.
TREE = replace(MODEL, bos="auto: <bos>", text_path=TextPath.TREE, attention="sdpa", numerics="1" * 16)


def text_run(p_correct: float, p_wrong: float) -> Run:
    token = make_run(p_correct, p_wrong)
    reading = replace(token.readings[ReadingName.TOKEN], kind=ReadingKind.TEXT)
    return replace(token, readings={ReadingName.TEXT: reading}, main=ReadingName.TEXT)


def results(b: tuple[float, float] = (0.75, 0.125)) -> list[CaseResult]:
    return [make_case(c, "sets", [text_run(*p)], model=MODEL.id)
            for c, p in (("a", (0.75, 0.125)), ("b", b), ("c", (0.75, 0.125)), ("d", (0.125, 0.75)))]


def format_4(tmp_path: Path, header: store.Header) -> Path:
    """A baseline as a version before the tree wrote it: format 4, no text_path."""
    baseline, _ = cmp.update(None, results(), CHAPTERS, header)
    text = store.dumps(baseline)
    assert "format: 5\n" in text and "text_path" not in text
    path = tmp_path / PATH
    path.parent.mkdir(parents=True)
    path.write_text(text.replace("format: 5\n", "format: 4\n"))
    return path


def lines(tmp_path: Path, now: list[CaseResult], loaded=TREE) -> list[str]:
    g = gate.make_gate(tmp_path, None, ["tiny"], "bfloat16", None, None, command="CMD", reading="text")
    return [text for text, _ in wording_baseline.outcome_lines(g.finish("tiny", now, loaded, CHAPTERS))]


def test_a_run_records_its_text_path_and_a_format_4_file_reads_as_stepped(tmp_path: Path) -> None:
    assert cmp.header_of(results()[0], TREE) == replace(STEPPED, text_path="tree", numerics="1" * 16)
    token = make_case("a", "sets", [make_run(0.75, 0.125)], model=MODEL.id)
    assert cmp.header_of(token, TREE).text_path == ""  # the path decides none of the token reading's numbers
    written = store.dumps(cmp.update(None, results(), CHAPTERS, cmp.header_of(results()[0], TREE))[0])
    assert "  text_path: tree\n" in written
    assert store.read(format_4(tmp_path, replace(STEPPED, text_path=""))).header == STEPPED
    (tmp_path / PATH).unlink()
    engine = replace(STEPPED, text_path="", backend="vllm")
    assert store.read(format_4(tmp_path / "vllm", engine)).header == replace(engine, text_path="contexts")
    token_header = replace(STEPPED, reading="token", text_path="")
    assert store.read(format_4(tmp_path / "token", token_header)).header == token_header


def test_a_comparison_that_differs_only_in_the_tree_names_it(tmp_path: Path) -> None:
    format_4(tmp_path, replace(STEPPED, text_path=""))
    said = lines(tmp_path, results(b=(0.5, 0.5)))  # sets/b moved, to a tie
    assert said[1:3] == [
        "  same model, the text reading's chains computed another way: as steps on the KV cache, one call per "
        "context when recorded, as one tree per prompt (every chain in one call on its KV cache) now, whose arithmetic "
        "rounds otherwise in the last bits (the numerics fingerprint probes that path, so it differs too: "
        "0000000000000000, now 1111111111111111): probabilities differ from the baseline's in 1 cases; 1 verdicts "
        "changed (sets/b)",
        "  verdicts changed by a margin bfloat16 cannot resolve (decided by rounding, not by the model): sets/b"]
    assert not any("other kernels" in line or "bug" in line for line in said)


def test_the_tree_and_other_hardware_are_both_named(tmp_path: Path) -> None:
    format_4(tmp_path, replace(STEPPED, text_path=""))
    said = lines(tmp_path, results(b=(0.75, 0.25)), replace(TREE, hardware="cpu AVX2"))
    at = next(n for n, line in enumerate(said) if "computed another way" in line)
    assert said[at + 1] == "  it was also recorded with hardware cpu AVX512 (now cpu AVX2): as likely a cause"


def test_the_same_path_and_the_same_numerics_compare_alike(tmp_path: Path) -> None:
    """Recorded with the tree, compared with the tree: nothing to put down to the path."""
    baseline, _ = cmp.update(None, results(), CHAPTERS, cmp.header_of(results()[0], TREE))
    store.write(tmp_path / PATH, baseline)
    said = lines(tmp_path, results())
    assert not any("computed another way" in line for line in said)
