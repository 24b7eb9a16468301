"""A model's transformers tokenizer, whichever backend reads the model: loaded (in a thread of its own beside the
weights where the run will need it), and checked as a converted model's must pass (fast, and the round trip)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..heap import frozen
from .convert import allowed_unfaithful, one_line, round_trip, unfaithful_folder
from .hashes import tokenizer_fingerprint
from .spec import ModelLoadError, ModelSpec


class Prefetched:
    """A load running in a thread of its own; `result` waits for it and returns its value or raises its error.
    A thread suffices: gemma's tokenizer parses in C and Rust for much of its 3-4 s, and the weights' load and
    probes mostly run in torch, which releases the GIL."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = load()
            except BaseException as error:  # re-raised where the value is asked for, as a lazy load would raise it
                self._error = error

        self._thread = threading.Thread(target=run, name="gotchas-tokenizer", daemon=True)
        self._thread.start()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def tokenizer_loader(shown: str, source: Path | str, cache_dir: Path, prefetch: Callable[[str], bool] | None,
                      check: Callable[[Any], None]) -> Callable[[], Any]:
    """What loads and checks the tokenizer: already running in a thread when `prefetch` says the run will need it.
    A hub id's folder is known only once its weights are downloaded, so its tokenizer is never prefetched."""
    def load() -> Any:
        with frozen():  # it lives as long as the run; parsing its files makes a million objects (heap.py)
            tokenizer = load_tokenizer(shown, source)
        check(tokenizer)
        return tokenizer

    if prefetch is not None and isinstance(source, Path) and prefetch(tokenizer_fingerprint(source, cache_dir)):
        return Prefetched(load).result
    return load


def load_tokenizer(shown: str, source: Path | str) -> Any:
    """The transformers tokenizer of a model folder or hub id, whichever backend reads the model; raises
    ModelLoadError."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(source)
    except Exception as error:
        raise ModelLoadError(
            f"cannot load the tokenizer of model {shown!r} from {source}: {one_line(error)}"
        ) from error


def check_tokenizer(tokenizer: Any, shown: str, spec: ModelSpec) -> list[str]:
    """Offsets need a fast tokenizer. Special tokens (BOS) follow the tokenizer's own convention, see cut.py. Any
    folder's tokenizer takes the round trip a converted model's must pass (convert.py): a tokenizer that misreads
    the vocabulary would cut every prompt into other tokens than the model's own, and its cases would be scored
    all the same. Refused, or, as the spec allows, a note to say once."""
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"cannot use model {shown!r}: its tokenizer ({type(tokenizer).__name__}) is not a fast tokenizer, "
            "and character offsets are needed to check the cut. Save the model with a tokenizer.json."
        )
    checked = round_trip(tokenizer)
    if checked.faithful:
        return []
    if not spec.allow_unfaithful_tokenizer:
        raise ModelLoadError(unfaithful_folder(shown, checked, spec.flag))
    return [allowed_unfaithful(shown, checked, spec.flag)]
