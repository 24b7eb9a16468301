"""Unit tests of pytest_gotchas/report/: the wording and the terminal, HTML and junit views."""
