"""The plugin driven through pytester, a module per topic: what a user of `pytest --gotchas` sees."""
