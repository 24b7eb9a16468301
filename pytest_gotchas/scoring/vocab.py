"""What each token of a vocabulary writes, as bytes, and the lookups the text reading needs (tokenizer only).

The text reading (readings.py) asks which tokens write a text that starts with a given string, and which tokens write a
proper prefix of it. Both are answered from the bytes of every token: by the tokenizer's decoder rules (a byte-level
BPE maps characters back to bytes; a SentencePiece-style BPE writes "▁" as a space and "<0xNN>" as one byte), checked
against the tokenizer's own decode on a sample, so that a tokenizer whose tokens cannot be read this way is an error
rather than a wrong number. Special tokens (BOS, EOS, padding, control tokens) write no text.

The table is kept on disk per tokenizer fingerprint, so that a warm run needs neither the tokenizer nor this work.
"""

from __future__ import annotations

import base64
import bisect
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..files import read_sealed, write_sealed

FORMAT_VERSION = 1
_BYTE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
SAMPLE = 400  # tokens whose bytes are checked against the tokenizer's own decode


class VocabError(Exception):
    """The tokens of this tokenizer cannot be read as text; the message says why."""


@dataclass
class Vocab:
    texts: list[bytes]  # by token id; b"" for tokens that write no text
    _extending: dict[bytes, list[int]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def _sorted(self) -> tuple[list[bytes], list[int]]:
        # By text, equal texts by id (a stable sort of the ids in order), without a tuple per token.
        texts = self.texts
        ids = sorted((i for i, t in enumerate(texts) if t), key=texts.__getitem__)
        return [texts[i] for i in ids], ids

    @cached_property
    def _exact(self) -> dict[bytes, list[int]]:
        exact: dict[bytes, list[int]] = {}
        for i, text in enumerate(self.texts):
            if text:
                exact.setdefault(text, []).append(i)
        return exact

    def extending(self, text: bytes) -> list[int]:
        """Ids of the tokens whose text starts with `text` (itself included). Kept per text: a case's readings ask
        again for the same texts in each round of shared heads (heads.py)."""
        found = self._extending.get(text)
        if found is None:
            keys, ids = self._sorted
            start = bisect.bisect_left(keys, text)
            end = start
            while end < len(keys) and keys[end].startswith(text):
                end += 1
            found = self._extending[text] = ids[start:end]
        return found

    def prepare(self) -> None:
        """Build the lookups' tables now, not at the first lookup (a load ahead does it beside collection)."""
        _ = self._sorted, self._exact

    def proper_prefixes(self, text: bytes) -> list[tuple[int, int]]:
        """(id, length) of the tokens whose text is a non-empty proper prefix of `text`."""
        return [(i, n) for n in range(1, len(text)) for i in self._exact.get(text[:n], [])]


@dataclass
class VocabCache:
    """The table of one tokenizer, on disk; None directory: nothing is kept."""

    directory: Path | None
    tokenizer_key: str | None
    loaded: dict[str, Vocab] = field(default_factory=dict)

    def _key(self) -> str:
        return f"vocab-{FORMAT_VERSION}-{self.tokenizer_key}"

    def _path(self, key: str) -> Path | None:
        return self.directory / f"{key}.json" if self.directory and self.tokenizer_key else None

    def stored(self) -> bool:
        """Whether the table is on disk: when it is not, this is the tokenizer's first run with this cache folder,
        and the text reading will need the tokenizer."""
        path = self._path(self._key())
        return path is not None and path.is_file()

    def get(self, tokenizer: Any) -> Vocab:
        """The table, read from disk or built from the tokenizer (``tokenizer`` is called only when needed)."""
        key = self._key()
        if key in self.loaded:
            return self.loaded[key]
        path = self._path(key)
        stored = read_sealed(path, key) if path else None
        if isinstance(stored, list) and all(isinstance(t, str) for t in stored):
            vocab = Vocab([base64.b64decode(t) for t in stored])
        else:
            vocab = build(tokenizer())
            if path is not None:
                try:
                    write_sealed(path, key, [base64.b64encode(t).decode() for t in vocab.texts])
                except OSError:
                    pass  # only costs building it again
        self.loaded[key] = vocab
        return vocab


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte <-> printable character table (what byte-level BPE vocabularies are written in)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1))
    codes = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + n)
            n += 1
    return dict(zip(printable, map(chr, codes)))


def _decoders(tokenizer: Any) -> list[dict[str, Any]]:
    # The decoder's own state, not the whole tokenizer's JSON (gemma-3-270m's is 33 MB: writing and parsing it took
    # 1.4 s of a first run for these few bytes); tokenizers gives the same dict either way.
    component = tokenizer.backend_tokenizer.decoder
    decoder = json.loads(component.__getstate__()) if component is not None else {}
    return decoder.get("decoders", [decoder]) if decoder.get("type") == "Sequence" else [decoder]


def build(tokenizer: Any) -> Vocab:
    """Every token's bytes, by the tokenizer's decoder rules, checked against its own decode."""
    decoders = _decoders(tokenizer)
    kinds = {d.get("type") for d in decoders}
    special = set(tokenizer.all_special_ids) | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    texts: list[bytes] = []
    if "ByteLevel" in kinds:
        inverse = {c: b for b, c in _bytes_to_unicode().items()}
        for i, piece in enumerate(pieces):
            added = i in tokenizer.added_tokens_decoder
            if i in special or piece is None:
                texts.append(b"")
            elif added or any(c not in inverse for c in piece):
                texts.append(piece.encode())
            else:
                texts.append(bytes(inverse[c] for c in piece))
    else:
        known = {"Replace", "ByteFallback", "Fuse", "Strip"}
        if kinds - known - {None}:
            raise VocabError(f"cannot read the text of its tokens: its decoder uses {sorted(str(k) for k in kinds - known - {None})}")
        replaces = [(d["pattern"].get("String"), d["content"]) for d in decoders if d.get("type") == "Replace"]
        if any(pattern is None for pattern, _ in replaces):
            raise VocabError("cannot read the text of its tokens: its decoder replaces by a regular expression")
        fallback = "ByteFallback" in kinds
        for i, piece in enumerate(pieces):
            if i in special or piece is None:
                texts.append(b"")
                continue
            match = _BYTE.match(piece) if fallback else None
            if match:
                texts.append(bytes([int(match[1], 16)]))
                continue
            for pattern, content in replaces:
                piece = piece.replace(pattern, content)
            texts.append(piece.encode())
    _check(tokenizer, texts)
    return Vocab(texts)


def _check(tokenizer: Any, texts: list[bytes]) -> None:
    """The bytes agree with the tokenizer's own decode after an anchor token, on a sample of whole-text tokens."""
    anchor = next((i for i, t in enumerate(texts) if t == b"a"), None)
    if anchor is None:
        return
    base = tokenizer.decode([anchor], skip_special_tokens=False, clean_up_tokenization_spaces=False)
    step = max(1, len(texts) // SAMPLE)
    for i in range(0, len(texts), step):
        try:
            text = texts[i].decode("utf-8")
        except UnicodeDecodeError:
            continue  # a piece of a character: the decoder would show a replacement character
        if not text:
            continue
        shown = tokenizer.decode([anchor, i], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if shown != base + text:
            raise VocabError(f"cannot read the text of its tokens: token {i} ({tokenizer.convert_ids_to_tokens(i)!r}) "
                             f"decodes to {shown[len(base):]!r}, not {text!r}")
