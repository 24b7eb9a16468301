"""Where a model is read from: an embedded model's converted folder, a .gguf file converted once, a transformers
model folder, or a hub id that transformers resolves; and how reports name it. Whichever backend reads the model
(backends/), its files are found here."""

from __future__ import annotations

import os
from pathlib import Path

from .convert import ConversionError, Log, convert_gguf, converted_folder
from .embedded import MODELS, EmbeddedMissing
from .hashes import file_sha256
from .ref import DEFAULT
from .spec import ModelLoadError


def shown_name(name: str | None) -> str:
    """How reports name a model: what the user named, or an embedded model's label."""
    embedded = MODELS.get(name or DEFAULT)
    return embedded.label if embedded is not None and (name is None or not looks_like_path(name)) else str(name)


def looks_like_path(name: str) -> bool:
    # A hub id is "org/model" or "model"; anything else with separators is a path.
    return (
        name.startswith((".", "~", os.sep))
        or os.path.isabs(name)
        or name.count("/") > 1
        or (os.altsep is not None and os.altsep in name)
        or "\\" in name
    )


# The files a transformers tokenizer loads from (any one is enough): without one, AutoTokenizer may still build
# one from config.json whose vocabulary has none of the model's tokens, and every cut reads as unrepresentable.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt", "spiece.model",
                   "sentencepiece.bpe.model")


def resolve_source(name: str | None, cache_dir: Path, log: Log, flag: str) -> Path | str:
    """A local folder to load from, or a hub id (which transformers resolves)."""
    embedded = MODELS.get(name or DEFAULT)
    if embedded is not None and (name is None or not looks_like_path(name)):
        try:
            return embedded.folder(cache_dir, log)
        except EmbeddedMissing as error:
            raise ModelLoadError(f"{error}, or name another model with {flag}model.") from error
        except ConversionError as error:
            raise ModelLoadError(str(error)) from error
    assert name is not None
    path = Path(name).expanduser()
    if name.endswith(".gguf"):
        if not path.is_file():
            raise ModelLoadError(_missing(name, path, flag))
        digest = file_sha256(path, cache_dir)
        out = converted_folder(cache_dir, path.stem, digest)
        try:
            return convert_gguf(lambda folder: path.absolute(), out, name, log)
        except ConversionError as error:
            raise ModelLoadError(str(error)) from error
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(
                f"cannot load model {name!r}: {path.absolute()} has no config.json, so it is not a transformers "
                f"model folder. Point {flag}model at a folder written by save_pretrained, a .gguf file or a hub id."
            )
        if not any((path / file).is_file() for file in TOKENIZER_FILES):
            raise ModelLoadError(
                f"cannot load model {name!r}: {path.absolute()} has no tokenizer (none of "
                f"{', '.join(TOKENIZER_FILES)}); model.save_pretrained() writes only the weights and config. Save the "
                "tokenizer into the same folder too (tokenizer.save_pretrained(folder)): see docs/models.md."
            )
        return path.absolute()
    if path.exists():
        raise ModelLoadError(
            f"cannot load model {name!r}: {path.absolute()} is a file, not a model folder. "
            f"Point {flag}model at a folder written by save_pretrained, a .gguf file or a hub id."
        )
    if looks_like_path(name):
        raise ModelLoadError(_missing(name, path, flag))
    return name


def _missing(name: str, path: Path, flag: str) -> str:
    return (
        f"cannot load model {name!r}: {path.absolute()} does not exist. "
        f"Point {flag}model at a model folder, a .gguf file or a hub id (hub ids need network access)."
    )
