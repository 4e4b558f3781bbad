"""The README stays short and its links resolve; the details live in docs/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


_CLAIM = re.compile(r"about ([\d,]+) tests")
TOLERANCE = 0.15


def _subset_reason(request: pytest.FixtureRequest) -> str | None:
    """Why this session did not collect the whole suite (None when it did)."""
    opt = request.config.option
    narrowed = [flag for flag, on in (("-k", opt.keyword), ("-m", opt.markexpr),
                ("--deselect", opt.deselect), ("--lf", getattr(opt, "lf", False))) if on]  # fmt: skip
    if narrowed:
        return f"{', '.join(narrowed)} narrowed the collection"
    collected = {Path(item.path) for item in request.session.items}
    missing = [p for p in (REPO / "tests").rglob("test_*.py") if p not in collected]
    return f"{len(missing)} test files were not collected" if missing else None


def test_readme_test_count_is_the_suites_within_15_percent(request) -> None:
    """The README's "about N tests" against what this very session collected: free in a
    whole-suite run (CI, `pytest`), skipped when only some tests were asked for."""
    claims = _CLAIM.findall(README.read_text(encoding="utf-8"))
    assert len(claims) == 1, claims
    claim = int(claims[0].replace(",", ""))
    reason = _subset_reason(request)
    if reason:
        pytest.skip(f"the README's count is checked in a whole-suite run only ({reason})")
    count = len(request.session.items)
    assert abs(count - claim) <= TOLERANCE * claim, (
        f"README says about {claim:,} tests; the suite has {count:,}: update README.md"
    )
