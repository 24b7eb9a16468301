"""One whole process, measured: wall time from start to exit, peak resident memory (ru_maxrss from wait4) and, for
a plugin run, its JSON report read back as a typed Report (results/reading.py); also the machine and the model
folder."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_gotchas.results.reading import read_report  # the benches that read a report import it from here
from pytest_gotchas.results.report import Report
from pytest_gotchas.results.schema import Timings

from .figures import Machine

REPO = Path(__file__).resolve().parent.parent


class BenchFailed(RuntimeError):
    """A process the bench needs failed: its figures would mean nothing."""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass
class Child:
    argv: list[str]
    wall: float  # seconds from start to exit
    maxrss_mb: float  # peak resident memory of the process (and of the largest descendant it waited for)
    returncode: int
    stdout: str
    stderr: str
    report: Report | None = None  # the JSON report of a plugin run
    extra: dict[str, Any] = field(default_factory=dict)  # what a script printed as JSON on its last line
    # User plus system CPU seconds of the process and of the descendants it waited for (wait4's rusage): on a
    # machine shared with other work, a steadier measure of the work done than wall time.
    cpu: float = 0.0

    @property
    def timings(self) -> Timings:
        """This process's timings (the controller's under xdist); empty for a process without a report."""
        timings = self.report.run.timings if self.report else None
        return timings or Timings()

    @property
    def workers(self) -> dict[str, Timings]:
        return dict(self.report.run.workers) if self.report else {}

    def seconds(self, phase: str) -> float:
        return float(self.timings.seconds.get(phase, 0.0))


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The bench's environment, with this checkout first on the path: an editable install elsewhere must not be
    what is measured; bytecode is cached."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    # Bytecode cached as any installed package has it: without, every import compiles the plugin's 120 modules again,
    # and pytest rewrites their asserts again (a plugin's modules are): bare `pytest --collect-only` took 0.6
    # CPU s instead of 0.4, `--gotchas cases --collect-only` 1.5 instead of 1.0 (bench/RESULTS.md, #52).
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**inherited, "PYTHONPATH": path, **(extra or {})}


def run_child(argv: list[str], cwd: Path, report: Path | None = None, env: dict[str, str] | None = None) -> Child:
    # Output goes to files, not pipes: a full pipe would stall the child and add to its wall time.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, env=child_env(env))
        _, status, usage = os.wait4(proc.pid, 0)  # wait4: the child's own rusage, not the bench's
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        child = Child(argv, wall, usage.ru_maxrss / 1024, proc.returncode, out.read().decode(errors="replace"),
                      err.read().decode(errors="replace"), cpu=usage.ru_utime + usage.ru_stime)
    if report is not None and report.is_file():
        child.report = read_report(report)
    return child


def plugin(workdir: Path, name: str, *args: str, env: dict[str, str] | None = None) -> Child:
    """`pytest --gotchas cases` as a user runs it, with a JSON report."""
    report = workdir / f"{name}.json"
    report.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "pytest", "--gotchas", "cases", "--gotchas-json", str(report), *args]
    child = run_child(argv, workdir, report, env=env)
    if child.report is None or child.returncode not in (0, 1):
        raise BenchFailed(f"{' '.join(argv)} failed (exit {child.returncode}) in {workdir}:\n"
                          f"{child.stdout[-3000:]}\n{child.stderr[-3000:]}")
    return child


def script(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Child:
    """`python ARGS`; a JSON object on its last line of output becomes `extra`."""
    child = run_child([sys.executable, *args], cwd, env=env)
    if child.returncode != 0:
        raise BenchFailed(f"python {' '.join(args)} failed (exit {child.returncode}):\n{child.stderr[-3000:]}")
    last = child.stdout.strip().splitlines()[-1:] or [""]
    if last[0].startswith("{"):
        child.extra = json.loads(last[0])
    return child


def machine() -> Machine:
    def proc(file: str, key: str, default: str) -> str:
        return next((line.split(":", 1)[1].strip() for line in Path(file).read_text().splitlines()
                     if line.startswith(key)), default)

    versions = subprocess.run([sys.executable, "-c", "import torch, transformers, pytest; print(torch.__version__, "
                               "transformers.__version__, pytest.__version__, torch.get_num_threads(), "
                               "torch.cuda.is_available())"], capture_output=True, text=True, env=child_env())
    torch, transformers, pytest, threads, cuda = versions.stdout.split()
    return Machine(subprocess.run(["date"], capture_output=True, text=True).stdout.strip(), os.cpu_count() or 0,
                   proc("/proc/meminfo", "MemTotal", "?"), proc("/proc/cpuinfo", "model name", platform.processor()),
                   platform.python_version(), torch, transformers, pytest, threads, cuda, load_average())


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def model_folder(model: str | None = None) -> Path:
    """The converted embedded model, the default one unless named (converted now if this machine has not yet:
    about a minute, once). BenchFailed's message ends with the child's last line of stderr: why it is not there."""
    name = "DEFAULT" if model is None else repr(model)
    code = ("import sys; from pytest_gotchas.model.embedded import DEFAULT, MODELS; from pytest_gotchas.settings.options "
            f"import Settings; print(MODELS[{name}].folder(Settings().model_cache, lambda line: print(line, "
            "file=sys.stderr)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env())
    if done.returncode != 0:
        raise BenchFailed(f"the {model or 'default'} model is not available:\n{done.stderr.strip() or 'no message'}")
    return Path(done.stdout.strip().splitlines()[-1])


def header(title: str, info: Machine, cases: str, cpu_note: str = "") -> str:
    """A bench's markdown heading: the machine and software it ran on, the load average, and the cases."""
    note = f", {cpu_note}" if cpu_note else ""
    return (f"# {title}\n\ndate: {info.date}\nmachine: {info.nproc} cores, {info.memory}, {info.cpu}{note}\n"
            f"software: python {info.python}, torch {info.torch} ({info.torch_threads} threads), transformers "
            f"{info.transformers}\nload average: {info.load} at the start, {load_average()} at the end\n"
            f"cases: {cases}\n")
