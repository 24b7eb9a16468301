"""The HTML page as a reader sees it: its text, its parts, and headless Chromium's screenshot where Chromium is installed."""

from __future__ import annotations

import html as htmllib
import re
import shutil
import subprocess
from pathlib import Path


def text_of(page: str) -> str:
    """The page as a reader sees it: tags dropped, entities decoded, white space folded."""
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", "", page)))


def words_of(fragment: str) -> str:
    """As a reader sees it, each tag a break between words."""
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def article(page: str, chapter: str, case_id: str) -> str:
    anchor = f'id="case-{chapter}-{case_id}"'
    assert page.count(anchor) == 1, anchor
    return page[page.index(anchor):page.index("</article>", page.index(anchor))]


def between(page: str, start: str, end: str) -> str:
    assert page.count(start) == 1, start
    at = page.index(start)
    return page[at:page.index(end, at)]


def row(table: str, head: str) -> str:
    """The text of the table row whose header cell links or reads `head`."""
    for found in re.findall(r"<tr>.*?</tr>", table, flags=re.S):
        if f">{head}<" in found:
            return words_of(found)
    raise AssertionError(f"no row {head!r}")


CHROMIUM = shutil.which("chromium")


def screenshot(page: Path, shot: Path, profile: Path) -> subprocess.CompletedProcess:
    """Headless Chromium's screenshot of a page file, offline (nothing fetched, no first-run work)."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
