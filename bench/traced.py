"""`pytest ARGS` with every second of the process put in a phase: run as
`python -c "$(cat bench/traced.py)" OUT.json ARGS...` (as -c: a script's folder first on sys.path would make
bench/kernels.py the `kernels` package transformers imports), it writes OUT.json with each phase's seconds.

The phases, in order: interpreter start (from the process's start, as /proc/self/stat and /proc/uptime date it, to
this script's first line), `import pytest`, the plugin's import (pytest_gotchas.plugin.hooks, imported here before
pytest imports it through its entry point), pytest's start-up (options, ini, plugins: up to pytest_configure's
end), collection, the test loop (the plugin's own timings split it further: bench/floor.py), the session's end
(pytest_sessionfinish: the terminal summary, the plugin's reports), pytest_unconfigure, and after pytest.main
returns, the interpreter's exit: measured by the bench as the process's wall time less the rest.
"""

import json
import os
import sys
import time

T0 = time.perf_counter()


def process_age() -> float:
    """Seconds since this process started (Linux; 0.0 elsewhere)."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


STARTED = process_age()
import pytest  # noqa: E402  (timed)

T1 = time.perf_counter()
import pytest_gotchas.plugin.hooks  # noqa: E402, F401  (timed: what the entry point imports)

T2 = time.perf_counter()
marks: dict[str, float] = {}


class Tracer:
    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        marks["configured"] = time.perf_counter()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session):
        marks["collection start"] = time.perf_counter()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        marks["collection end"] = time.perf_counter()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session):
        marks["loop start"] = time.perf_counter()
        try:
            return (yield)
        finally:
            marks["loop end"] = time.perf_counter()

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session, exitstatus):
        marks["finish start"] = time.perf_counter()
        try:
            return (yield)
        finally:
            marks["finish end"] = time.perf_counter()

    @pytest.hookimpl(wrapper=True)
    def pytest_unconfigure(self, config):
        marks["unconfigure start"] = time.perf_counter()
        try:
            return (yield)
        finally:
            marks["unconfigure end"] = time.perf_counter()


out = sys.argv[1]
code = pytest.main(sys.argv[2:], plugins=[Tracer()])
END = time.perf_counter()
m = {k: v for k, v in marks.items()}
collect_start = m.get("collection start", m.get("configured", T2))
phases = {
    "interpreter start": STARTED,
    "import pytest": T1 - T0,
    "plugin import": T2 - T1,
    "pytest start-up": collect_start - T2,
    "collection": m.get("collection end", collect_start) - collect_start,
    "between collection and the loop": m.get("loop start", END) - m.get("collection end", collect_start),
    "test loop": m.get("loop end", END) - m.get("loop start", END),
    "session end": m.get("finish end", END) - m.get("loop end", END),
    "unconfigure": m.get("unconfigure end", END) - m.get("finish end", END),
    "after pytest.main": END - m.get("unconfigure end", END),
}
with open(out, "w") as f:
    json.dump({"phases": phases, "inside": STARTED + END - T0}, f)
sys.exit(int(code))
