"""Git's machine-readable output, parsed, and repository paths put in categories (pure).

No GitPython here: `live.git` (GitPython) and `live.gitread` (the bounded read-only
runner of the final state) both use these. The categories are described in `live.git`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import PurePosixPath

from pydantic import BaseModel

_TEST_DIRS = {"test", "tests", "__tests__", "spec", "specs", "testing"}
_TEST_NAME = re.compile(
    r"^test_.*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$|Tests?\.(java|kt|cs)$|_spec\.rb$"
)
_CONFIG_EXT = {".toml", ".yaml", ".yml", ".json", ".ini", ".cfg", ".conf", ".lock", ".env"}
_CONFIG_NAMES = {"dockerfile", "makefile", "justfile", "procfile", "gemfile", "podfile"}
_DOC_EXT = {".md", ".rst", ".txt", ".adoc", ".markdown"}
_DOC_DIRS = {"docs", "doc", "documentation"}
_DOC_PREFIXES = ("readme", "changelog", "license", "contributing", "authors")
# fmt: off
_SOURCE_EXT = {
    ".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".go", ".rs", ".java",
    ".kt", ".kts", ".scala", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs", ".rb",
    ".php", ".swift", ".m", ".mm", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".ex", ".exs",
    ".erl", ".hs", ".ml", ".clj", ".lua", ".r", ".jl", ".dart", ".zig", ".nim", ".sql",
    ".html", ".htm", ".css", ".scss", ".sass", ".less", ".vue", ".svelte", ".proto", ".graphql",
    ".tf", ".sol", ".pl", ".pm", ".asm", ".s", ".f90", ".cu", ".ipynb",
}
# fmt: on
_ARTIFACT_DIRS = {
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    ".nox",
    "node_modules",
    ".venv",
    "venv",
    ".eggs",
    ".ipynb_checkpoints",
    ".scorer",
    ".gradle",
    ".next",
    ".parcel-cache",
    ".cache",
}  # fmt: skip
_ARTIFACT_NAME = re.compile(r"\.py[cod]$|^\.coverage(\..*)?$|^\.DS_Store$|\.egg-info$")


def is_artifact(path: str) -> bool:
    """Whether an untracked path is build/cache output rather than work (module docstring)."""
    parts = PurePosixPath(path).parts
    return bool(
        _ARTIFACT_DIRS.intersection(parts) or any(_ARTIFACT_NAME.search(part) for part in parts)
    )


class FileCategory(StrEnum):
    SOURCE = "source"
    TEST = "test"
    CONFIG = "config"
    DOCS = "docs"
    OTHER = "other"


def categorize(path: str) -> FileCategory:
    """The category of a repository path (rules in the module docstring)."""
    p = PurePosixPath(path)
    name, suffix = p.name.lower(), p.suffix.lower()
    dirs = {d.lower() for d in p.parts[:-1]}
    if dirs & _TEST_DIRS or _TEST_NAME.search(p.name):
        return FileCategory.TEST
    if (
        suffix in _CONFIG_EXT
        or name in _CONFIG_NAMES
        or (name.startswith("requirements") and suffix == ".txt")
        or (name.startswith(".") and not suffix)
        or ".github" in dirs
    ):
        return FileCategory.CONFIG
    if suffix in _DOC_EXT or dirs & _DOC_DIRS or name.startswith(_DOC_PREFIXES):
        return FileCategory.DOCS
    if suffix in _SOURCE_EXT:
        return FileCategory.SOURCE
    return FileCategory.OTHER


class FileChange(BaseModel):
    """One changed file with `git diff --numstat` semantics."""

    path: str
    old_path: str | None = None
    """For a rename: the path before it (`old_path` → `path`)."""
    insertions: int = 0
    deletions: int = 0
    binary: bool = False
    """numstat printed `-` for a binary file; its line counts are 0."""
    category: FileCategory


def parse_numstat(raw: str) -> list[FileChange]:
    """Parse `git diff --numstat -z` output (renames come as `ins\\tdel\\t\\0old\\0new\\0`)."""
    fields = raw.split("\0")
    changes: list[FileChange] = []
    i = 0
    while i < len(fields):
        head = fields[i]
        i += 1
        if not head.strip():
            continue
        ins, dels, path = head.split("\t", 2)
        old = None
        if not path:  # rename or copy: the two paths follow as separate fields
            old, path = fields[i], fields[i + 1]
            i += 2
        binary = ins == "-"
        changes.append(
            FileChange(
                path=path,
                old_path=old,
                insertions=0 if binary else int(ins),
                deletions=0 if binary else int(dels),
                binary=binary,
                category=categorize(path),
            )
        )
    return changes


def parse_porcelain(raw: str) -> tuple[list[str], list[str], list[str]]:
    """Parse `git status --porcelain=v1 -z` into (staged, unstaged, untracked) paths."""
    staged: list[str] = []
    unstaged: list[str] = []
    untracked: list[str] = []
    fields = raw.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        x, y, path = entry[0], entry[1], entry[3:]
        if x in "RC":
            i += 1  # the rename's source path follows
        if x == "?":
            untracked.append(path)
            continue
        if x not in " !":
            staged.append(path)
        if y not in " !":
            unstaged.append(path)
    return staged, unstaged, untracked
