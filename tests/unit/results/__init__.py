"""Unit tests of pytest_gotchas/results/: the verdicts and the schema the views read."""
