"""Unit tests of pytest_gotchas/scoring/: the cut and its cache, the readings, the vocabulary, the lens."""
