"""The cache's seal key through the plugin (hostile input round four): a key that is a named pipe blocked collection
for ever; now it is one warning that names the key, says what it is and what to do, and every snippet runs afresh.
The run is a subprocess with a deadline, so a regression fails instead of hanging the suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.fifo import fifo
from helpers.hostile import OK_CHAPTER


def test_a_seal_key_that_is_a_fifo_is_one_warning_and_collection_goes_on(pytester: pytest.Pytester, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (pytester.path / "a.yaml").write_text(OK_CHAPTER, encoding="utf-8")
    key = fifo(tmp_path / "xdg" / "pytest-gotchas" / "seal.key")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    result = pytester.runpytest_subprocess("--gotchas", "--collect-only", "-q", timeout=120)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    result.stdout.fnmatch_lines([
        "a.yaml::a",
        f"*GotchasWarning: gotchas: the transcript cache {pytester.path}/.pytest_cache/* cannot be written (the "
        f"cache's seal key {key} is a named pipe (FIFO), not a regular file: delete it, and a new one is made); this "
        "run executes every snippet afresh and keeps none of them",
    ])
    assert output.count("seal key") == 1
