"""The outputs the docs show, regenerated from what the code prints, so that they cannot drift:

    python -m bench.docs --report all.json    # docs/cases.md's `gotchas new` sample, and docs/report.png from all.json

docs/cases.md's sample is `gotchas new late.py --wrong '[0, 1, 2]' --model default --id late-binding-closure`, run
now with the embedded model (its interpreter's folder shortened to `...`). docs/report.png is headless Chromium's
screenshot of the page of `--report`, the JSON of a real run of the library (`pytest --gotchas cases/
--gotchas-json all.json`); without it the picture is left as it is. tests/unit/bench/test_docs_outputs.py checks
the sample's every line but the model's against the command without a model. The docs show no machine's folders:
the interpreter's is shortened to `...`, and the page's command names its files without their folders.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CASES_MD = REPO / "docs" / "cases.md"
REPORT_PNG = REPO / "docs" / "report.png"
SNIPPET = "fs = []\nfor i in range(3):\n    fs.append(lambda: i)\n[f() for f in fs]\n"
COMMAND = ["new", "late.py", "--wrong", "[0, 1, 2]", "--model", "default", "--id", "late-binding-closure"]
SAMPLE = re.compile(r"^```\n\$ cat late\.py\n.*?^```\n", re.S | re.M)  # the sample's fenced block in cases.md
WINDOW = "1400,2400"


def shown_command(args: list[str]) -> str:
    import shlex

    return shlex.join(["gotchas", *args])


def without_paths(output: str) -> str:
    """The interpreter's folder of this machine as `...`: `python 3.11.7 (.../python3.11); ...`."""
    return re.sub(r"^(python \S+ \()[^)]*/([^/)]+\))", r"\1.../\2", output, count=1, flags=re.M)


def run_new(args: list[str], folder: Path) -> str:
    """What `gotchas` prints for `args`, run in `folder` with late.py there."""
    from pytest_gotchas.cli import main

    (folder / "late.py").write_text(SNIPPET, encoding="utf-8")
    out = io.StringIO()
    with contextlib.chdir(folder), contextlib.redirect_stdout(out):
        code = main(args)
    if code != 0:
        raise SystemExit(f"gotchas {' '.join(args)} failed ({code}):\n{out.getvalue()}")
    return without_paths(out.getvalue())


def sample(output: str, args: list[str] = COMMAND) -> str:
    """The fenced block docs/cases.md shows: the snippet, the command and what it printed."""
    return f"```\n$ cat late.py\n{SNIPPET}$ {shown_command(args)}\n{output.rstrip(chr(10))}\n```\n"


def with_sample(doc: str, block: str) -> str:
    if len(SAMPLE.findall(doc)) != 1:
        raise SystemExit(f"{CASES_MD}: no single ``` block that starts with `$ cat late.py`")
    return SAMPLE.sub(lambda _: block, doc)


def picture(report: Path, png: Path) -> None:
    """The page of the JSON report `report`, as headless Chromium shows its top."""
    from pytest_gotchas.report import html
    from pytest_gotchas.results.reading import load_document, report_of

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed: docs/report.png is left as it is")
    document = load_document(report)
    data = document.data
    data["run"]["command"] = re.sub(r"(?<![\w.])/\S*/", "", data["run"]["command"])  # /tmp/x/all.json -> all.json
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(html.render(report_of(document)), encoding="utf-8")
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                        f"--user-data-dir={Path(tmp) / 'profile'}", f"--screenshot={png}", f"--window-size={WINDOW}",
                        page.as_uri()], check=True, capture_output=True, timeout=180)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.docs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", type=Path, help="a real run's --gotchas-json, for docs/report.png")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        block = sample(run_new(COMMAND, Path(tmp)))
    CASES_MD.write_text(with_sample(CASES_MD.read_text(encoding="utf-8"), block), encoding="utf-8")
    print(f"wrote the `gotchas new` sample into {CASES_MD.relative_to(REPO)}")
    if args.report is not None:
        picture(args.report, REPORT_PNG)
        print(f"wrote {REPORT_PNG.relative_to(REPO)} from {args.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
