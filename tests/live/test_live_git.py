"""Git progress on real repositories built in tmp dirs."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scorer.errors import SourceError
from scorer.live.git import FileCategory, categorize, git_progress, parse_numstat


def _git(repo: Path, *args: str) -> str:
    env_args = [
        "-c",
        "user.name=Test",
        "-c",
        "user.email=t@example.com",
        "-c",
        "commit.gpgsign=false",
    ]
    out = subprocess.run(
        ["git", *env_args, *args], cwd=repo, check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


def _write(repo: Path, rel: str, content: str | bytes) -> None:
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


@pytest.fixture
def repo(tmp_path) -> Path:
    """main: commit 1 (app, test, readme), commit 2 (rename app→core, binary logo, config)."""
    root = tmp_path / "proj"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    _write(root, "src/app.py", "".join(f"line {i}\n" for i in range(20)))
    _write(root, "tests/test_app.py", "def test_ok():\n    assert True\n")
    _write(root, "README.md", "# proj\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "initial layout")
    _git(root, "tag", "start")
    _git(root, "mv", "src/app.py", "src/core.py")
    _write(root, "src/core.py", "".join(f"line {i}\n" for i in range(19)) + "changed\nadded\n")
    _write(root, "logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    _write(root, "pyproject.toml", "[project]\nname = 'proj'\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "Rename app to core, add logo")
    # Work in progress: one staged, one unstaged change and an untracked file.
    _write(root, "pyproject.toml", "[project]\nname = 'proj2'\n")
    _git(root, "add", "pyproject.toml")
    _write(root, "README.md", "# proj\nmore\n")
    _write(root, "docs/notes.txt", "todo\n")
    return root


def test_progress_against_base_reports_rename_and_binary(repo):
    g = git_progress(repo, base="start")
    assert g.status == "ok" and g.branch == "main"
    assert g.commits == 1
    by_path = {f.path: f for f in g.files}
    assert set(by_path) == {"src/core.py", "logo.png", "pyproject.toml"}
    core = by_path["src/core.py"]
    assert core.old_path == "src/app.py"
    assert (core.insertions, core.deletions) == (2, 1)
    assert by_path["logo.png"].binary and by_path["logo.png"].insertions == 0
    assert (g.insertions, g.deletions, g.files_changed) == (4, 1, 3)
    assert g.categories == {"other": 1, "config": 1, "source": 1}
    assert g.last_commit.subject == "Rename app to core, add logo"
    assert g.last_commit.hexsha == _git(repo, "rev-parse", "HEAD")
    assert g.staged == ["pyproject.toml"]
    assert g.unstaged == ["README.md"]
    assert g.untracked == ["docs/notes.txt"]
    assert g.uncommitted == ["README.md", "pyproject.toml"]
    summary = g.summary()
    assert "1 commit changing" in summary and "src/app.py -> src/core.py" in summary
    assert "Binary: logo.png" in summary and "Untracked: 1 file: docs/notes.txt" in summary


def test_whole_history_diffs_from_empty_tree(repo):
    g = git_progress(repo)
    assert g.commits == 2
    assert {f.path for f in g.files} == {
        "src/core.py",
        "tests/test_app.py",
        "README.md",
        "logo.png",
        "pyproject.toml",
    }
    assert not g.renames  # the file did not exist before the range started
    assert g.touched == 6  # five committed files + the untracked note


def test_since_counts_recent_commits_only(repo):
    future = datetime.now(UTC) + timedelta(hours=1)
    g = git_progress(repo, since=future)
    assert (g.commits, g.files_changed) == (0, 0)
    assert g.last_commit is not None  # still reported
    past = datetime.now(UTC) - timedelta(days=1)
    assert git_progress(repo, since=past).commits == 2


def test_subdirectory_finds_the_repository(repo):
    assert git_progress(repo / "src").repo == str(repo)


def test_bad_base_is_a_source_error(repo):
    with pytest.raises(SourceError, match="'nope': not a known ref"):
        git_progress(repo, base="nope")


def test_empty_repo_is_no_commits(tmp_path):
    _git(tmp_path, "init", "-q", "-b", "main")
    _write(tmp_path, "a.py", "x = 1\n")
    _write(tmp_path, "b.py", "y = 2\n")
    _git(tmp_path, "add", "a.py")
    g = git_progress(tmp_path)
    assert g.status == "no_commits"
    assert (g.commits, g.last_commit) == (0, None)
    assert g.staged == ["a.py"] and g.untracked == ["b.py"]
    assert "has no commits yet" in g.summary()


def test_non_repo_and_missing_dir_are_no_git(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    g = git_progress(plain)
    assert (g.status, g.reason) == ("no_git", "not a git repository")
    assert "rely on terminal output only" in g.summary()
    assert git_progress(tmp_path / "missing").status == "no_git"


def test_parse_numstat_rename_and_binary():
    raw = "\x00".join(["3\t1\t", "old/a.py", "new/a.py", "-\t-\timg.png", "10\t0\tdocs/x.md", ""])
    changes = parse_numstat(raw)
    assert [(c.path, c.old_path, c.insertions, c.binary) for c in changes] == [
        ("new/a.py", "old/a.py", 3, False),
        ("img.png", None, 0, True),
        ("docs/x.md", None, 10, False),
    ]


@pytest.mark.parametrize(
    ("path", "category"),
    [
        ("src/app.py", FileCategory.SOURCE),
        ("tests/helpers.py", FileCategory.TEST),
        ("pkg/foo_test.go", FileCategory.TEST),
        ("web/button.spec.tsx", FileCategory.TEST),
        ("test_x.py", FileCategory.TEST),
        ("pyproject.toml", FileCategory.CONFIG),
        ("requirements-dev.txt", FileCategory.CONFIG),
        (".github/workflows/ci.yml", FileCategory.CONFIG),
        ("Dockerfile", FileCategory.CONFIG),
        (".gitignore", FileCategory.CONFIG),
        ("README.md", FileCategory.DOCS),
        ("docs/guide.html", FileCategory.DOCS),
        ("LICENSE", FileCategory.DOCS),
        ("assets/logo.png", FileCategory.OTHER),
    ],
)
def test_categorize(path, category):
    assert categorize(path) == category
