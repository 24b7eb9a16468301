"""Unit tests of pytest_gotchas/model/: loading, converting, hashing and the numerics, on tiny models."""
