"""docs/components.png, the component heatmaps docs/method.md reads, from a real direction: the page's own markup
(report/page_patching.py through templates/_patching.html.j2, with report.css) for one direction of bench/recall.py's
output, as headless Chromium shows it (bench/docs.py's way), with a caption naming the machine it was computed on (from
the report's model entry).

    python -m bench.recall /tmp/sets.json --metric float32 --out /tmp/recall.json
    python -m bench.docs_components /tmp/recall.json --direction "list-reversed -> set-reversed"
    python -m bench.docs_components sets.json --direction ...   # a run's report: its residual heatmap drawn too
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from pytest_gotchas.results.schema import Patching

REPO = Path(__file__).resolve().parent.parent
PNG = REPO / "docs" / "components.png"
WINDOW = "1500,2480"
UNRECORDED = "a machine bench/recall.py's output does not record"


def machine(path: Path, model: str) -> str:
    """The machine a run's report says its model ran on (hardware, threads, torch); UNRECORDED for --out files."""
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    found = [m for m in data.get("models", []) if m.get("id") == model] if isinstance(data, dict) else []
    if not found:
        return UNRECORDED
    m = found[0]
    return f"{m.get('hardware')}, {m.get('threads')} threads, torch {m.get('torch_version')}"


def page(entry: Patching, model: str, where: str) -> str:
    """The direction's component heatmaps and head patterns, as the report's page lays them out."""
    from pytest_gotchas.report.html import _environment
    from pytest_gotchas.report.page_patching import Heatmap, component_heatmaps, heatmap, pattern_map
    from pytest_gotchas.report.wording_patching import components_line

    caption = (f"{entry.source} \u2192 {entry.target} ({entry.metric_dtype} metric; computed on {where}"
               f"{'' if entry.cells else '; bench/recall.py, no residual grid'})")
    maps = (heatmap(model, entry) if entry.cells else  # a run's report: the page's own heatmaps, the residual first
            Heatmap(model, caption, [], [], components_line(entry), component_heatmaps(model, entry),
                    pattern_map(entry)))
    table = SimpleNamespace(patching=caption, rows=[SimpleNamespace(label=f"{entry.source} / {entry.target}",
                                                                    heatmaps=[maps])])
    env = _environment()
    css = env.loader.get_source(env, "report.css")[0]
    body = env.get_template("_patching.html.j2").render(table=table)
    opened = body.replace("<details class=\"patched\">", "<details class=\"patched\" open>")
    return f"<!doctype html><html><head><meta charset=utf-8><style>{css}</style></head><body>{opened}</body></html>"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.docs_components", description=__doc__.split("\n\n")[0])
    parser.add_argument("recall", type=Path, help="bench/recall.py's --out, or a run's report with the components")
    parser.add_argument("--direction", required=True, help="'source -> target'")
    parser.add_argument("--model", default="gemma-3-270m")
    args = parser.parse_args(argv)

    from .recall import directions

    found = [e for e in directions(args.recall) if f"{e.source} -> {e.target}" == args.direction]
    if not found:
        raise SystemExit(f"{args.recall}: no direction {args.direction!r}")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed: docs/components.png is left as it is")
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "components.html"
        html.write_text(page(found[0], args.model, machine(args.recall, args.model)), encoding="utf-8")
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                        f"--user-data-dir={Path(tmp) / 'profile'}", f"--screenshot={PNG}", f"--window-size={WINDOW}",
                        html.as_uri()], check=True, capture_output=True, timeout=180)
    print(f"wrote {PNG.relative_to(REPO)} from {args.direction} of {args.recall}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
