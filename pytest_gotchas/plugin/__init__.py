"""The pytest face: hooks, collection nodes, fixtures and options. Registered through the `pytest11` entry point
`pytest_gotchas.plugin.hooks`."""
