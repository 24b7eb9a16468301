"""The tokenizer's answers at each cut, on disk, so that a warm run never loads the tokenizer.

For gemma-3-270m the tokenizer (262,144 entries, 514,906 merges) takes 1-3 s and about 400 MB to load: more than
everything else a warm run adds to the forward passes. What a run asks of it is a pure function of the tokenizer
files and the text: the CutPlan of (prompt, correct, wrong) (cut.plan_cut) and the text of the top-k token ids
(tokenizer.decode). Both are kept here, one JSON file per cut, keyed by

- the tokenizer's fingerprint (model.tokenizer_fingerprint: the sha256 of the model folder's non-weight files and
  the transformers and tokenizers versions),
- the sha256 of cut.py itself, so that any change to how cuts are planned makes new keys,
- the BOS policy (--gotchas-bos),
- the texts.

Each entry is sealed with a checksum over its key and its content (files.write_sealed): an entry of the wrong shape,
stored under another key, or edited by hand is not trusted; the tokenizer answers again and the entry is rewritten.

An entry is written only after the tokenizer loaded and passed model.check_tokenizer, so a hit stands for that check
too. Files are replaced atomically; concurrent xdist workers write the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from . import cut
from ..files import read_sealed, write_sealed
from .cut import CutPlan

FORMAT_VERSION = 1
_CUT_DIGEST: list[str] = []


def _cut_digest() -> str:
    if not _CUT_DIGEST:
        _CUT_DIGEST.append(hashlib.sha256(Path(cut.__file__).read_bytes()).hexdigest())
    return _CUT_DIGEST[0]


def plan_to_dict(plan: CutPlan) -> dict[str, Any]:
    return asdict(plan)


def plan_from_dict(data: dict[str, Any]) -> CutPlan:
    """Raises ValueError, KeyError or TypeError for anything that is not a plan as plan_to_dict writes it."""
    if set(data) != {f.name for f in fields(CutPlan)}:
        raise ValueError(f"not a cut plan: {sorted(data)}")
    values: dict[str, Any] = {f.name: tuple(v) if isinstance(v, list) else v for f in fields(CutPlan) for v in [data[f.name]]}
    for name in ("context_ids", "correct_ids", "wrong_ids", "prompt_ids"):
        if not values[name] or not all(isinstance(i, int) and not isinstance(i, bool) for i in values[name]):
            raise ValueError(f"{name} is not a list of token ids")
    return CutPlan(**values)


class CutCache:
    """Plans and decoded token texts of one tokenizer. A None directory or key: nothing is cached."""

    def __init__(self, directory: Path | None, tokenizer_key: str | None, bos: str = "auto") -> None:
        self.directory = directory if tokenizer_key else None
        self.tokenizer_key, self.bos = tokenizer_key, bos
        self.hits = self.misses = 0

    def _key(self, texts: tuple[str, str, str]) -> str:
        payload = json.dumps([FORMAT_VERSION, self.tokenizer_key, _cut_digest(), self.bos, *texts])
        return hashlib.sha256(payload.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        assert self.directory is not None
        return self.directory / f"{key}.json"

    def get(self, prompt: str, correct: str, wrong: str) -> tuple[CutPlan, dict[int, str]] | None:
        """The plan and the decoded texts stored for this cut, or None (missing, damaged or edited: the
        tokenizer answers again, and the entry is rewritten)."""
        if self.directory is None:
            return None
        key = self._key((prompt, correct, wrong))
        data = read_sealed(self._path(key), key)
        try:
            entry = plan_from_dict(data["plan"]), {int(k): str(v) for k, v in data["decoded"].items()}
        except (ValueError, KeyError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def put(self, prompt: str, correct: str, wrong: str, plan: CutPlan, decoded: dict[int, str]) -> None:
        if self.directory is None:
            return
        key = self._key((prompt, correct, wrong))
        data = {"plan": plan_to_dict(plan), "decoded": {str(k): v for k, v in sorted(decoded.items())}}
        try:
            write_sealed(self._path(key), key, data)
        except OSError:
            pass  # a cache that cannot be written only costs the tokenizer next time
