"""The README stays short and its links resolve; the details live in docs/."""

from __future__ import annotations

import re

from tests.conftest import REPO

README = REPO / "README.md"
MAX_README_LINES = 350


def test_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= MAX_README_LINES


def test_readme_and_docs_links_resolve() -> None:
    pages = [README, *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} → {target}")
    assert broken == []
