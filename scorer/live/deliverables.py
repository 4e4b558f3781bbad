"""The files a task names as deliverables, as they are on disk now (bounded, read-only).

For each path the task names (`prepare.artefacts.task_artefacts`): whether it exists,
its size and its first lines, and never a byte from outside the repository:

- a relative name is looked for under the session's working directory, then under the
  repository's top; an absolute one is taken as it is;
- the path is resolved (symlinks followed) and must stay inside the repository's top and
  outside its `.git`; otherwise it is named, and not read;
- only a regular file is opened (`O_NOFOLLOW | O_NONBLOCK` on the resolved path: a symlink
  or a FIFO swapped in meanwhile can neither redirect nor block the read), and only its
  first `HEAD_BYTES`; its lines are counted up to `COUNT_BYTES`;
- a file that looks binary (a NUL byte, or much that is not UTF-8) is described, not
  shown, and so is one whose name says it holds secrets (`.env`, `*.pem`, `id_rsa`, …);
- a directory shows how many entries it has and the first few names.

What is shown is redacted with the rest of the session by `prepare`, and laid out by the
renderer, whose fence rules apply to it as to any event text.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, Field

from scorer.prepare.fence import clean_block

HEAD_BYTES = 16 * 1024
"""Bytes of a file read for its first lines."""
COUNT_BYTES = 1024 * 1024
"""Files up to this size get their lines counted (a bigger one is not read further)."""
MAX_LINES = 12
MAX_LINE_CHARS = 160
MAX_DIR_NAMES = 10
_DIR_SCAN = 1000
_SECRET_NAME = re.compile(
    r"(?:^|[/._-])(?:\.?env(?:\.[\w-]+)?|credentials?|secrets?|\.netrc|\.pgpass|\.npmrc"
    r"|\.pypirc|kubeconfig|id_(?:rsa|dsa|ecdsa|ed25519)(?:\.pub)?|htpasswd)$"
    r"|\.(?:pem|key|p12|pfx|jks|keystore|kdbx|gpg|asc)$",
    re.IGNORECASE,
)

State = Literal["file", "directory", "missing", "outside", "other", "unreadable"]


class Deliverable(BaseModel):
    """One path the task names, as found on disk when the final state was read."""

    name: str
    """As the task names it."""
    path: str | None = None
    """Where it was looked for, relative to the repository's top (absolute when outside)."""
    state: State
    """file / directory / missing / outside (the repository: not read) / other (a FIFO,
    socket or device: not read) / unreadable (permission or I/O error)."""
    size: int | None = None
    """Bytes (a file)."""
    kind: Literal["text", "binary", "secret", "empty"] | None = None
    """What a file holds; only `text` has `lines`."""
    lines: list[str] = Field(default_factory=list)
    """The first lines shown (each at most `MAX_LINE_CHARS`)."""
    total_lines: int | None = None
    """Lines in the whole file (files up to `COUNT_BYTES`)."""
    entries: int | None = None
    """Entries of a directory (`_DIR_SCAN` means at least that many)."""
    names: list[str] = Field(default_factory=list)
    """The first entries of a directory, sorted."""
    note: str = ""
    """Why something is not shown (a symlink leading out, a secrets file, a read error)."""


def secret_file(name: str) -> bool:
    """Whether a file's name says it holds secrets (its content is then never shown)."""
    return _SECRET_NAME.search(name.rstrip("/")) is not None


def read_deliverable(
    name: str, cwd: Path, root: Path, *, max_lines: int = MAX_LINES
) -> Deliverable:
    """How the path `name` is on disk now (see the module docstring).

    Args:
        name: A path the task names (absolute, or relative to the session's directory).
        cwd: The session's working directory, resolved.
        root: The repository's top directory, resolved.
        max_lines: First lines shown of a text file (0: none, when the section's budget
            is spent).
    """
    candidates = _candidates(name, cwd, root)
    path = next((c for c in candidates if os.path.lexists(c)), candidates[0])
    shown = _shown(path, root)
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root) or real.is_relative_to(root / ".git"):
        where = "inside .git" if real.is_relative_to(root) else "outside the repository"
        led = Path(os.path.abspath(path)) != real  # a symlink on the way
        why = f"a symlink leads {where}" if led else where
        return Deliverable(name=name, path=shown, state="outside", note=why)
    note = f"a symlink to {_shown(real, root)}" if path.is_symlink() else ""
    if not os.path.lexists(real):
        return Deliverable(name=name, path=shown, state="missing", note=note)
    try:
        found = _read(real, max_lines)
    except OSError as exc:
        found = Deliverable(name=name, state="unreadable", note=exc.strerror or str(exc))
    joined = "; ".join(n for n in (note, found.note) if n)
    return found.model_copy(update={"name": name, "path": shown, "note": joined})


def _candidates(name: str, cwd: Path, root: Path) -> list[Path]:
    if name.startswith("/"):
        return [Path(name)]
    relative = name.removeprefix("./")
    return list(dict.fromkeys([cwd / relative, root / relative]))


def _shown(path: Path, root: Path) -> str:
    absolute = Path(os.path.abspath(path))
    return str(absolute.relative_to(root)) if absolute.is_relative_to(root) else str(absolute)


def _read(real: Path, max_lines: int) -> Deliverable:
    """A resolved path inside the repository: a directory's entries, a file's head."""
    mode = os.lstat(real).st_mode
    if stat.S_ISDIR(mode):
        return _directory(real)
    if not stat.S_ISREG(mode):
        return Deliverable(name="", state="other", note="not a regular file")
    fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):  # swapped since the lstat
            return Deliverable(name="", state="other", note="not a regular file")
        head = handle.read(HEAD_BYTES)
        count = _count_lines(handle, head, info.st_size)
    return _file(real.name, info.st_size, head, count, max_lines)


def _count_lines(handle: BinaryIO, head: bytes, size: int) -> int | None:
    """Lines of a file up to `COUNT_BYTES`, broken as they are shown (`clean_block`: a CR,
    VT, U+2028 … breaks a line as LF does); None for a bigger file."""
    if size > COUNT_BYTES:
        return None
    rest = handle.read(COUNT_BYTES - len(head)) if size > len(head) else b""
    text = clean_block((head + rest).decode("utf-8", "replace"))
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def _file(name: str, size: int, head: bytes, count: int | None, max_lines: int) -> Deliverable:
    base = Deliverable(name="", state="file", size=size, total_lines=count)
    if size == 0:
        return base.model_copy(update={"kind": "empty"})
    if secret_file(name):
        note = "its name says it holds secrets"
        return base.model_copy(update={"kind": "secret", "note": note})
    if _binary(head):
        return base.model_copy(update={"kind": "binary", "total_lines": None})
    text = head.decode("utf-8", "replace")
    if len(head) == HEAD_BYTES and size > HEAD_BYTES:
        text = text.rsplit("\n", 1)[0]  # the last line read may be cut mid-way
    text = clean_block(text)  # every line break is LF now: each line is indented alone
    lines = [_cut(line) for line in text.split("\n")[:max_lines]]
    if lines and not lines[-1] and text.endswith("\n"):
        lines.pop()
    return base.model_copy(update={"kind": "text", "lines": lines})


def _binary(head: bytes) -> bool:
    """A NUL byte, or more than 1 in 20 characters not decodable as UTF-8."""
    if b"\0" in head:
        return True
    text = head.decode("utf-8", "replace")
    return text.count("\ufffd") * 20 > max(len(text), 1)


def _cut(line: str) -> str:
    line = line.rstrip("\r")
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _directory(real: Path) -> Deliverable:
    names: list[str] = []
    with os.scandir(real) as entries:
        for entry in entries:
            names.append(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else ""))
            if len(names) >= _DIR_SCAN:
                break
    return Deliverable(
        name="", state="directory", entries=len(names), names=sorted(names)[:MAX_DIR_NAMES]
    )
