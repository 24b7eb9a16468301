"""Unit tests of pytest_gotchas/baseline/: the file, the comparison and the gate, on results built by hand."""
