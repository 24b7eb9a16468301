"""The xdist worker's role: it collects and scores like a serial run, and at its end sends what only it knows (the
chapters it collected, the models it loaded, its timings) to the controller once, through `workeroutput`, as
syrupy's xdist support sends its snapshot report. Each case's result travels with its own test report."""

from __future__ import annotations

from dataclasses import field
from typing import Any

import pytest
from pydantic import TypeAdapter

from ..results.schema import ChapterInfo, ModelInfo, Timings
from ..results.typed import dataclass
from .session import GotchasSession

KEY = "gotchas"  # in config.workeroutput


@dataclass
class WorkerData:
    chapters: list[ChapterInfo] = field(default_factory=list)
    models: list[ModelInfo] = field(default_factory=list)
    timings: Timings | None = None
    notes: dict[str, list[str]] = field(default_factory=dict)  # model -> its notes (GotchasSession.keep_notes)


_DATA = TypeAdapter(WorkerData)


def local_data(gotchas: GotchasSession) -> WorkerData:
    return WorkerData(list(gotchas.chapters), gotchas.model_infos(), gotchas.timings(), dict(gotchas.notes))


def send(data: WorkerData) -> dict[str, Any]:
    return _DATA.dump_python(data, mode="json")


def receive(node: Any) -> WorkerData | None:
    """What a finished worker node sent, or None (a worker that crashed sends nothing)."""
    output = getattr(node, "workeroutput", None) or {}
    return _DATA.validate_python(output[KEY]) if KEY in output else None


class Worker:
    def __init__(self, gotchas: GotchasSession) -> None:
        self.gotchas = gotchas

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        session.config.workeroutput[KEY] = send(local_data(self.gotchas))  # type: ignore[attr-defined]
