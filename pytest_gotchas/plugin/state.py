"""Where the plugin keeps its state on the pytest config, and how it is made: light, so that a pytest run without
--gotchas imports nothing of the steps (no pydantic, torch or transformers) and touches nothing on disk."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ..settings.options import OPTIONS, OptionError, Settings, settings

if TYPE_CHECKING:
    from .session import GotchasSession

MODEL_FIXTURE = "gotchas_model"
SETTINGS = pytest.StashKey[Settings]()
SESSION = pytest.StashKey["GotchasSession"]()
RECORDED = pytest.StashKey[list[Any]]()  # on an item: the CaseResults its Python test recorded


def read_settings(config: pytest.Config) -> Settings:
    """The command line wins over the ini file; ini values are validated as command-line values are."""
    if SETTINGS in config.stash:
        return config.stash[SETTINGS]
    values = {}
    for option in OPTIONS:
        given = config.getoption(option.ini)  # already validated by argparse
        if given is not None:
            values[option.name] = given
            continue
        raw = config.getini(option.ini)
        if raw in (None, "", []):
            continue
        try:
            values[option.name] = option.convert(raw)
        except OptionError as error:
            raise pytest.UsageError(f"ini option {option.ini} {error}") from None
    config.stash[SETTINGS] = settings(values)
    return config.stash[SETTINGS]


def ensure(config: pytest.Config) -> GotchasSession:
    """The run's state, made on first need: at configure with --gotchas, else when a test asks for a fixture of
    the plugin. Its role (the controller, or an xdist worker) is registered with it."""
    if SESSION not in config.stash:
        from .controller import Controller
        from .session import GotchasSession
        from .worker import Worker

        gotchas = GotchasSession(config, read_settings(config))
        config.stash[SESSION] = gotchas
        role = Worker(gotchas) if gotchas.worker_id is not None else Controller(gotchas)
        config.pluginmanager.register(role, "gotchas-role")
    return config.stash[SESSION]
