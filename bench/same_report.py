"""Two JSON reports of the same run, field by field, ignoring what differs between any two runs (timings, date,
host facts) and the fields the second may add: `python -m bench.same_report BEFORE.json AFTER.json [NEW_FIELD ...]`.
Prints every path where they differ and exits 1 if any does. Used for issue 51 (bench/RESULTS.md, "What -k costs")."""

from __future__ import annotations

import json
import sys
from typing import Any

# What two runs of the same cases always differ in: when and where they ran, what they cost.
IGNORED = {"format", "timings", "workers", "date", "command", "seconds", "grid_seconds", "screen_seconds",
           "verify_seconds", "source", "hardware"}


def differences(old: Any, new: Any, added: set[str], where: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = [k for k in dict.fromkeys([*old, *new]) if k not in IGNORED and not (k not in old and k in added)]
        return [d for k in keys for d in (differences(old[k], new[k], added, f"{where}.{k}")
                                           if k in old and k in new else [f"{where}.{k}: only in one"])]
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} vs {len(new)} items"]
        return [d for n, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, added, f"{where}[{n}]")]
    return [] if old == new else [f"{where}: {old!r} vs {new!r}"]


def main(argv: list[str]) -> int:
    before, after = (json.loads(open(path, encoding="utf-8").read()) for path in argv[:2])
    found = differences(before, after, set(argv[2:]))
    for line in found:
        print(line)
    print(f"{len(found)} differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
