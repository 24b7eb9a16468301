"""GGUF files converted once into a safetensors folder that transformers reloads in well under a second.

transformers reads a GGUF file (with the gguf and accelerate packages) in about a minute and cannot save the result
as loaded; dequantized into bfloat16 and saved with save_pretrained, it is an ordinary model folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONVERTED_DTYPE = "bfloat16"  # what the project measured with: dequantized GGUF weights in bfloat16

Log = Callable[[str], None]
Steps = Callable[[str, int, int], None]  # (what is being done, how many done, of how many; 0 of 0: uncounted)

# Where the caller shows the conversion's steps (the plugin: a terminal's progress line). The conversion runs three
# calls below whoever loads the model (load_model -> embedded folder -> convert_gguf); a context variable carries the
# sink there for the one call that wants it, without widening every signature on the way.
STEPS: ContextVar[Steps | None] = ContextVar("gotchas_conversion_steps", default=None)


def _step(what: str, done: int = 0, total: int = 0) -> None:
    sink = STEPS.get()
    if sink is not None:
        sink(what, done, total)


class ConversionError(Exception):
    """A GGUF file that transformers could not read or save; the message says which and why."""


# A GGUF file carries its tokenizer as a vocabulary with scores, and transformers rebuilds the tokenizer from them.
# Some versions rebuild it wrongly and say nothing: transformers 5.17.0 made gemma-3-270m's a Unigram model without
# merges that cuts ' False' into three tokens and 'print' into two (a lent GPU box's image had it; every prompt was
# cut into other tokens than the model's own, and its readings moved with them). A faithful tokenizer gives most
# of its own tokens back as themselves: measured on gemma-3-270m, 2996 of 2998 sampled tokens with transformers
# 5.18.0 to 5.25.0, 1015 of 2998 with 5.16.1 and 5.17.0; FAITHFUL sits far from both.
SAMPLED_TOKENS = 3000
FAITHFUL = 0.95


@dataclass(frozen=True)
class RoundTrip:
    """How many of the sampled vocabulary tokens tokenize back to themselves alone."""

    themselves: int
    sampled: int

    @property
    def faithful(self) -> bool:
        return self.sampled == 0 or self.themselves >= FAITHFUL * self.sampled


def round_trip(tokenizer: Any, sample: int = SAMPLED_TOKENS) -> RoundTrip:
    """Every (size // sample)-th token of the vocabulary whose text stands alone (not special, not empty, no partial
    UTF-8 byte), decoded and tokenized again (in one batch: it runs on every load of a model's tokenizer)."""
    special = set(tokenizer.all_special_ids)
    tokens, texts = [], []
    for token in range(0, len(tokenizer), max(1, len(tokenizer) // sample)):
        text = tokenizer.decode([token])
        if token in special or not text or "\ufffd" in text:
            continue
        tokens.append(token)
        texts.append(text)
    again = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    return RoundTrip(sum(ids == [token] for token, ids in zip(tokens, again)), len(tokens))


def _misread(checked: RoundTrip) -> str:
    return (f"only {checked.themselves} of {checked.sampled} sampled vocabulary tokens tokenize back to themselves (a "
            "faithful tokenizer: nearly all), so every prompt would be cut into other tokens than the model's own")


def unfaithful(shown: str, checked: RoundTrip, version: str) -> str:
    return (f"cannot convert model {shown!r}: transformers {version} rebuilt its tokenizer from the GGUF file "
            f"unfaithfully: {_misread(checked)}. Install transformers 5.18.0 or later (5.16.1 and 5.17.0 rebuild "
            "gemma-3-270m's unfaithfully, 5.18.0 to 5.25.0 faithfully) and run again; nothing was written to the "
            "model cache")


def unfaithful_folder(shown: str, checked: RoundTrip, flag: str) -> str:
    """The converter's round trip, failed by the tokenizer of a model folder (model/tokenizer.py checks every one)."""
    return (f"cannot use model {shown!r}: its tokenizer fails the round trip a converted model's must pass: "
            f"{_misread(checked)}. Give the folder the tokenizer the model was trained with; or, to score it as it "
            f"is, run with {flag}allow-unfaithful-tokenizer (the report names the setting)")


def allowed_unfaithful(shown: str, checked: RoundTrip, flag: str) -> str:
    """The same, let through by the setting: said once per run, as a load's other notes are."""
    return (f"model {shown!r}: its tokenizer fails the round trip a converted model's must pass ({checked.themselves} "
            f"of {checked.sampled} sampled vocabulary tokens tokenize back to themselves); scored anyway, as "
            f"{flag}allow-unfaithful-tokenizer asks: its prompts may be cut into other tokens than the model's own")


def one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else 'no message'}"


@contextmanager
def no_progress_bars() -> Iterator[None]:
    # transformers draws tqdm bars on stderr for every load; pytest's output is not the place.
    from transformers.utils import logging

    was_enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            logging.enable_progress_bar()


# The conversion's own version, in the folder's name: 2 checks the tokenizer (round_trip), so a folder converted
# before that check, possibly with an unfaithful tokenizer, is not used again.
CONVERSION = 2


def converted_folder(cache_dir: Path, stem: str, digest: str) -> Path:
    """Where the conversion of a GGUF file (its name's stem and its sha256) lives in the model cache."""
    return cache_dir / "models" / f"{stem}-{digest[:12]}-c{CONVERSION}"


def convert_gguf(get_gguf: Callable[[Path], Path], out: Path, shown: str, log: Log) -> Path:
    """Dequantize a GGUF model into a safetensors folder at ``out``, once.

    ``get_gguf(scratch)`` returns the .gguf path; it may write it into the scratch folder,
    which is deleted afterwards. A file lock makes parallel pytest-xdist workers wait for
    one conversion, and the folder appears by an atomic rename, so it is complete or absent:
    a folder that is there is complete, and is used without the lock (a read-only cache of
    converted models loads; taking the lock would need to write).
    """
    from filelock import FileLock

    if out.is_dir():
        return out
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(out) + ".lock")
        lock.acquire()
    except OSError as error:
        raise ConversionError(f"cannot convert model {shown!r}: the model cache {out.parent} cannot be written "
                              f"({error.strerror or error}); point --gotchas-cache-dir at a folder that can "
                              "be") from None
    with lock:
        if out.is_dir():
            return out
        log(f"pytest-gotchas: converting {shown} into {out} (once; about a minute)")
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            gguf = get_gguf(scratch)
            converted = scratch / "converted"
            _dequantize(gguf, converted, shown)
            os.rename(converted, out)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return out


def _dequantize(gguf: Path, out: Path, shown: str) -> None:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with no_progress_bars(), _parse_gguf_once():
            _step(f"converting {shown}: reading the GGUF file")
            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent,
                gguf_file=gguf.name,
                dtype=getattr(torch, CONVERTED_DTYPE),
                quantization_config=transformers.GgufConfig(dequantize=True),
            )
            _step(f"converting {shown}: reading its tokenizer")
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            _step(f"converting {shown}: checking its tokenizer")
            checked = round_trip(tokenizer)
            if not checked.faithful:
                raise ConversionError(unfaithful(shown, checked, transformers.__version__))
            _step(f"converting {shown}: saving the model folder")
            model.save_pretrained(out)
            tokenizer.save_pretrained(out)
    except ConversionError:
        raise
    except Exception as error:
        raise ConversionError(
            f"cannot convert model {shown!r} from {gguf}: {one_line(error)}. "
            "GGUF loading needs the gguf and accelerate packages and an architecture transformers can read from GGUF."
        ) from error


def _counted(iterable: Any, **_: Any) -> Iterator[Any]:
    """What the GGUF reader's tqdm bar counted (its tensors), as steps for the caller's progress line instead. Not
    counted as units to estimate from: the first tensor (the embeddings: gemma's 262k-token vocabulary) is most of
    the work, and an estimate from it said 36 minutes for a one-minute conversion."""
    items = list(iterable)
    for done, item in enumerate(items):
        _step(f"converting the GGUF file: dequantizing tensor {done + 1} of {len(items)}")
        yield item


@contextmanager
def _parse_gguf_once() -> Iterator[None]:
    # transformers parses the GGUF three times (config, weights, tokenizer): about 10 s each
    # for gemma's 262k-token vocabulary. One read-only reader per file serves all three.
    import gguf

    original = gguf.GGUFReader
    readers: dict[tuple[str, str], Any] = {}

    def shared(path: Any, mode: str = "r") -> Any:
        key = (os.path.abspath(path), mode)
        if key not in readers:
            readers[key] = original(path, mode)  # type: ignore[arg-type]
        return readers[key]

    # The GGUF reader of transformers draws its own tqdm bar, outside transformers' progress-bar switch.
    from transformers import modeling_gguf_pytorch_utils as reader

    bar = getattr(reader, "tqdm", None)
    gguf.GGUFReader = shared  # type: ignore[misc,assignment]
    reader.tqdm = _counted
    try:
        yield
    finally:
        gguf.GGUFReader = original  # type: ignore[misc]
        if bar is not None:
            reader.tqdm = bar


