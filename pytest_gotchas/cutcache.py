"""The tokenizer's answers at each cut, on disk, so that a warm run never loads the tokenizer.

For gemma-3-270m the tokenizer (262,144 entries, 514,906 merges) takes 1-3 s and about 400 MB to load: more than
everything else a warm run adds to the forward passes. What a run asks of it is a pure function of the tokenizer
files and the text: the CutPlan of (prompt, correct, wrong) (cut.plan_cut) and the text of the top-k token ids
(tokenizer.decode). Both are kept here, one JSON file per cut, keyed by

- the tokenizer's fingerprint (model.tokenizer_fingerprint: the sha256 of the model folder's non-weight files and
  the transformers and tokenizers versions),
- the sha256 of cut.py itself, so that any change to how cuts are planned makes new keys,
- the texts, which are also stored and compared on reading.

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
from .files import write_atomic
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
    values = {f.name: data[f.name] for f in fields(CutPlan)}
    return CutPlan(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


class CutCache:
    """Plans and decoded token texts of one tokenizer. A None directory or key: nothing is cached."""

    def __init__(self, directory: Path | None, tokenizer_key: str | None) -> None:
        self.directory = directory if tokenizer_key else None
        self.tokenizer_key = tokenizer_key
        self.hits = self.misses = 0

    def _path(self, texts: tuple[str, str, str]) -> Path:
        assert self.directory is not None
        payload = json.dumps([FORMAT_VERSION, self.tokenizer_key, _cut_digest(), *texts])
        return self.directory / f"{hashlib.sha256(payload.encode()).hexdigest()}.json"

    def get(self, prompt: str, correct: str, wrong: str) -> tuple[CutPlan, dict[int, str]] | None:
        """The plan and the decoded texts stored for this cut, or None."""
        if self.directory is None:
            return None
        texts = (prompt, correct, wrong)
        try:
            data = json.loads(self._path(texts).read_text(encoding="utf-8"))
            if (data["prompt"], data["correct"], data["wrong"]) != texts:
                raise ValueError("another cut under this key")
            entry = plan_from_dict(data["plan"]), {int(k): v for k, v in data["decoded"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            self.misses += 1  # missing or damaged: the tokenizer answers again
            return None
        self.hits += 1
        return entry

    def put(self, prompt: str, correct: str, wrong: str, plan: CutPlan, decoded: dict[int, str]) -> None:
        if self.directory is None:
            return
        path = self._path((prompt, correct, wrong))
        data = {"prompt": prompt, "correct": correct, "wrong": wrong, "plan": plan_to_dict(plan),
                "decoded": {str(k): v for k, v in sorted(decoded.items())}}
        try:
            write_atomic(path, json.dumps(data))
        except OSError:
            pass  # a cache that cannot be written only costs the tokenizer next time
