"""The HTML page as a reader sees it: its text, and headless Chromium's screenshot where Chromium is installed."""

from __future__ import annotations

import html as htmllib
import re
import shutil
import subprocess
from pathlib import Path


def text_of(page: str) -> str:
    """The page as a reader sees it: tags dropped, entities decoded."""
    return htmllib.unescape(re.sub(r"<[^>]+>", "", page))


CHROMIUM = shutil.which("chromium")


def screenshot(page: Path, shot: Path, profile: Path) -> subprocess.CompletedProcess:
    """Headless Chromium's screenshot of a page file, offline (nothing fetched, no first-run work)."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
