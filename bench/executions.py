"""The executions of a cold run's ground truth: every interpreter the cases name is wrapped by a script that logs
each execution, and a cold run is made serially and under `-n 2`. From the logs: how many executions, of how many
distinct (snippet, seed, env) keys, how many at once, and whether -n 2 executed exactly what the serial run did."""

from __future__ import annotations

import collections
from pathlib import Path

from pytest_gotchas.truth.interpreters import Finder, Interpreter

from .child import log
from .figures import ExecCheck, Executions
from .measure import Context, run_scenario
from .scenarios import COLD, Scenario

RUNS_PER_SNIPPET = 3  # the plugin's default --gotchas-runs: a pinned PYTHONHASHSEED is executed this many times
LABELS = {"serial": ("-p", "no:xdist"), "-n 2": ("-n", "2")}
Execution = tuple[float, float, tuple[str, ...]]  # start, end, key

# Logs each execution of a snippet (not the Finder's version probe), then mirrors the interpreter's exit: a signal
# kills the wrapper with the same signal, so the plugin still sees a crash as a crash. The shell's own
# "Segmentation fault" line goes to /dev/null, never into the transcript.
WRAPPER = r'''#!/bin/bash
exec 3>&2 2>/dev/null
case "$*" in *platform.python_implementation*) exec "@REAL@" "$@" 2>&3;; esac
input=-
tmp=
case " $* " in *" -i "*) tmp=$(mktemp); cat > "$tmp"; input=$(sha256sum < "$tmp" | cut -c1-16);; esac
envkey=$(env | grep -v -E '^(HOME|PATH|PWD|OLDPWD|SHLVL|_|PYTHONSTARTUP|PYTHONPATH)=' | sort | sha256sum | cut -c1-16)
args=$(printf '%s' "$*" | sha256sum | cut -c1-16)
start=$(date +%s.%N)
if [ -n "$tmp" ]; then "@REAL@" "$@" < "$tmp" 2>&3; else "@REAL@" "$@" 2>&3; fi
rc=$?
end=$(date +%s.%N)
[ -n "$tmp" ] && rm -f "$tmp"
echo "$start $end @NAME@ ${PYTHONHASHSEED:--} $input $envkey $args" >> "@LOG@"
if [ $rc -gt 128 ]; then kill -$((rc - 128)) $$; fi
exit $rc
'''


def write_wrappers(root: Path, log_file: Path) -> tuple[str, ...]:
    """One logging wrapper per interpreter the cases name; returns --gotchas-python options."""
    finder, options = Finder(), []
    root.mkdir(parents=True, exist_ok=True)
    for version in ("3.11", "3.12", "3.13"):
        found = finder.find(version)
        if not isinstance(found, Interpreter):
            continue
        wrapper = root / f"python{version}"
        wrapper.write_text(WRAPPER.replace("@REAL@", found.path).replace("@LOG@", str(log_file))
                           .replace("@NAME@", f"python{version}"))
        wrapper.chmod(0o755)
        options += ["--gotchas-python", f"{version}={wrapper}"]
    return tuple(options)


def read_executions(log_file: Path) -> list[Execution]:
    runs = []
    for line in log_file.read_text().splitlines() if log_file.exists() else []:
        start, end, *key = line.split()
        runs.append((float(start), float(end), tuple(key)))
    return runs


def max_overlap(runs: list[Execution]) -> int:
    """The most executions running at one moment."""
    events = sorted([(s, 1) for s, _, _ in runs] + [(e, -1) for _, e, _ in runs])
    now = best = 0
    for _, delta in events:
        now += delta
        best = max(best, now)
    return best


def check(ctx: Context) -> ExecCheck:
    found, counts = {}, {}
    for label, options in LABELS.items():
        slug = label.replace(" ", "")
        log_file = ctx.root / f"exec-{slug}.log"
        wrappers = write_wrappers(ctx.root / f"wrappers-{slug}", log_file)
        log(f"cold run with logged executions ({label})")
        child = run_scenario(ctx, Scenario(f"exec {slug}", (*wrappers, *options), cache=COLD))
        executions = read_executions(log_file)
        counts[label] = collections.Counter(key for _, _, key in executions)
        # Under xdist the controller collects nothing: the workers' collections ran side by side.
        collection = max((w.seconds.get("collection", 0.0) for w in child.workers.values()),
                         default=child.seconds("collection"))
        found[label] = Executions(label, len(executions), len(counts[label]), max(counts[label].values(), default=0),
                                  max_overlap(executions), sum(e - s for s, e, _ in executions), collection,
                                  child.wall)
    return ExecCheck(found["serial"], found["-n 2"], counts["serial"] == counts["-n 2"], RUNS_PER_SNIPPET)
