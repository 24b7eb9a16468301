"""Unit tests of pytest_gotchas/plugin/: the option declarations."""
