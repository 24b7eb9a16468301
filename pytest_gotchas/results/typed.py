"""pydantic's dataclass, each class's schema built where it is first validated or written, not where the class is
made (`defer_build`): a run that writes no report (`--collect-only`, a run without results) builds none of the
report's schemas, which cost about 0.1 s of a process's start on this project's CPUs (bench/RESULTS.md, #52)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass as _dataclass

DEFERRED = ConfigDict(defer_build=True)
T = TypeVar("T")


@overload
def dataclass(cls: type[T], /) -> type[T]: ...


@overload
def dataclass(*, frozen: bool = False, order: bool = False, kw_only: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, Field))
def dataclass(cls: Any = None, /, **options: Any) -> Any:
    options.setdefault("config", DEFERRED)
    return _dataclass(cls, **options) if cls is not None else _dataclass(**options)
