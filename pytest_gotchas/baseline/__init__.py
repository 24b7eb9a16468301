"""Baselines: the file (store), a run against it (compare), and one run's use of it (gate)."""
