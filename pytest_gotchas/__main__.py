"""`python -m pytest_gotchas new ...`: the case-authoring command (see cli.py)."""

from .cli import main

raise SystemExit(main())
