"""pytest-gotchas: probe what a language model knows about program behaviour, one executed transcript per test.

PYTEST_DONT_REWRITE: the plugin holds no test assertions; without this marker every pytester run in a process
that already imported the plugin warns that it cannot be rewritten, and the warning lands in its outcomes.
"""

__version__ = "0.1.0"
