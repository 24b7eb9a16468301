"""Unit tests of pytest_gotchas/results/: the verdicts, the schema the views read, the layers' lead."""
