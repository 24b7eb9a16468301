"""What several test modules share, imported as `helpers` (`from helpers.chapters import line_of`): pyproject.toml's
`pythonpath = ["tests"]` puts tests/ on sys.path once, so a test module at any depth imports them alike.

Fixtures are not here: they live in the conftest.py files (tests/conftest.py for those every folder uses).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the checkout: tests/helpers/__init__.py is two folders below it
CASES_DIR = REPO / "cases"

# The write-up's own chapters: its 36 cases (35 scored), beside which the project adds chapters of its own.
SPEC_CHAPTERS = ("0-pep289.yaml", "1-floats.yaml", "2-sets.yaml", "3-bound-methods.yaml", "4-versions.yaml")
