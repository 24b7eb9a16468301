"""Unit tests of pytest_gotchas/cli/: the `gotchas` commands run in-process (`main([...])`)."""
