"""What a case names reaches only its snippet, and the limits hold for a run's whole process tree: the variables a
case sets reach no launcher (setpriv, unshare, bwrap, the supervisor), the host's kernel keyrings cannot be read from
a snippet, and the memory limit covers every process a run starts (where a cgroup can be had)."""

from __future__ import annotations

import re

from helpers.execution import shell

from pytest_gotchas.truth import sandbox
from pytest_gotchas.truth.execute import Limits, run_once

from .test_sandbox import each_isolation  # noqa: F401  (a fixture)


def test_a_cases_variables_reach_the_snippets_interpreter_alone(py312, each_isolation: sandbox.Isolation  # noqa: F811
                                                                ) -> None:
    # The dynamic loader names every program it starts under LD_DEBUG=libs: only the snippet's may be among them.
    run = run_once(shell(py312, "python -c pass", "-c", "pass", env=(("LD_DEBUG", "libs"),)), "1", Limits(timeout=5))
    started = set(re.findall(r"initialize program: (\S+)", run.text))
    assert (run.returncode, run.error) == (0, None), run.text
    assert started == {py312.path}, (each_isolation.kind, started)
