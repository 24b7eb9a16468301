"""pytest-gotchas: probe what a language model knows about program behaviour, one executed transcript per test."""

__version__ = "0.1.0"
