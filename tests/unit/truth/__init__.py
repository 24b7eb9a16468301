"""Unit tests of pytest_gotchas/truth/: executing sessions, the sandbox, the true-prefix check."""
