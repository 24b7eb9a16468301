"""Unit tests of pytest_gotchas/cases/: chapter files, reading their YAML, transcripts."""
