"""Unit tests of pytest_gotchas/backends/: the protocol, each backend against it, the refusals."""
