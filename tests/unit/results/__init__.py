"""Unit tests of results/: the layers' lead."""
