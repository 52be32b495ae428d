"""The README stays a user's page (issue 27: at most 12 KB; the rest lives in docs/), and
every relative link in it and in docs/ leads to a file or folder that exists."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# 12 KB read as 12,000 bytes, the stricter of the decimal and binary readings.
README_MAX_BYTES = 12_000
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def relative_links(page: Path) -> list[str]:
    """Link targets outside code, without their #anchor; external and same-page links left
    out."""
    text = INLINE_CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    targets = (m.group(1).split("#", 1)[0] for m in LINK.finditer(text))
    return [t for t in targets if t and not EXTERNAL.match(t)]


def test_the_readme_is_at_most_12_kb():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = [t for t in relative_links(page) if not (page.parent / t).exists()]
    assert not broken, f"{page.relative_to(ROOT)}: broken links {broken}"


def test_the_link_scan_sees_links_and_skips_code(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[a](a.md#part) [web](https://x.org) [top](#top) `[no](code.md)`\n"
                    "```\n[no](fenced.md)\n```\n[b](sub/b.md \"title\")\n")
    assert relative_links(page) == ["a.md", "sub/b.md"]
