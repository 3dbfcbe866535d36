"""The README is a user's manual (under 250 lines) and every link from it, or between the pages of docs/, resolves
to a file that exists (and, for `#anchor` links, to a heading there)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def markdown_files():
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def anchors(path):
    slugs = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            slugs.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return slugs


def test_readme_is_a_short_manual():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250, f"README.md has {len(lines)} lines; move details into docs/"


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        file_part, _, anchor = target.partition("#")
        path = (page.parent / file_part).resolve()
        if not path.exists():
            broken.append(target)
        elif anchor and path.is_file() and anchor not in anchors(path):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: links that do not resolve: {broken}"


def test_every_docs_page_is_linked_from_the_readme_or_another_page():
    linked = set()
    for page in markdown_files():
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if not re.match(r"^[a-z]+:", target):
                linked.add((page.parent / target.partition("#")[0]).resolve())
    orphans = [str(p.relative_to(ROOT)) for p in markdown_files()[1:] if p.resolve() not in linked]
    assert not orphans, f"docs pages no page links to: {orphans}"
