"""The final state as SYSTEM events the judge reads and cites (pure).

Three kinds, appended after the session's last event: the state (when it was read, where
HEAD is, `git status`), the changes since the session's first commit (a diff stat), and
one event per deliverable the task names. Every one starts with `FINAL STATE` and says it
was observed by session-scorer, not by the agent. Our own lines start at the left
margin; whatever comes from the disk (file lines, directory names) is indented by four
spaces, so a file cannot write a line that reads as ours, and each piece is bounded so no
event is cut by the renderer (`DEFAULT_MAX_OUTPUT_CHARS`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scorer._text import plural
from scorer.live.final_state_model import FinalState, StatusEntry, ago
from scorer.models import Event, EventKind
from scorer.prepare.fence import one_line
from scorer.prepare.own_output import PLUGIN

if TYPE_CHECKING:
    from scorer.live.deliverables import Deliverable
    from scorer.live.gitparse import FileChange

OBSERVED = "observed by session-scorer when it scored this session, not by the agent"
MAX_STATUS = 20
MAX_DIFF = 20
MAX_PATH = 100
_INDENT = "    "
_KIND_WORDS = {"text": "text", "binary": "binary: not shown", "empty": "empty",
               "secret": "content not shown"}  # fmt: skip
_STATUS_WORDS = {"M": "modified", "A": "added", "D": "deleted", "R": "renamed",
                 "C": "copied", "U": "conflicted", "T": "type changed"}  # fmt: skip


def final_state_events(state: FinalState, first: int) -> list[Event]:
    """The events of a read final state, numbered from `first`."""
    parts = [("state", _head(state)), ("changes", _changes(state))]
    parts += [("deliverable", _deliverable(d, state.status)) for d in state.deliverables]
    return [
        Event(
            index=first + i,
            kind=EventKind.SYSTEM,
            text=text,
            meta={"final_state": part, "observed_by": PLUGIN},
        )
        for i, (part, text) in enumerate(parts)
    ]


def _path(path: str) -> str:
    shown = one_line(path)
    return shown if len(shown) <= MAX_PATH else "…" + shown[-(MAX_PATH - 1) :]


def _short(sha: str | None) -> str:
    return sha[:8] if sha else "?"


def _when(state: FinalState) -> str:
    read = state.read_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    if state.ended_at is None:
        return f"read {read}; when the session ended is not known"
    lag = state.read_at - state.ended_at
    since = f"read {read}, {ago(lag)} after the session ended"
    if state.commits_since:
        return f"{since}; {plural(state.commits_since, 'commit')} made since"
    if state.head_moved:
        return f"{since}; HEAD has moved since (a checkout or a reset)"
    return f"{since}; HEAD has not moved since"


def _head(state: FinalState) -> str:
    lines = [
        f"FINAL STATE ({OBSERVED}): {_when(state)}.",
        f"Repository {_path(state.repo or '?')}, "
        + (f"branch {one_line(state.branch)}" if state.branch else "detached HEAD")
        + (f", HEAD {_short(state.head)}." if state.head else ", no commit yet."),
    ]
    lines += [f"Not read: {one_line(p)}." for p in state.problems]
    if any(p.startswith("git status") for p in state.problems):
        return "\n".join(lines)
    if not state.status:
        clean = "git status: clean (nothing modified, staged or untracked)"
        return "\n".join([*lines, clean + _artifacts(state) + "."])
    lines.append(f"git status: {_status_counts(state.status)}{_artifacts(state)}:")
    lines += [_INDENT + _status_line(e) for e in state.status[:MAX_STATUS]]
    more = len(state.status) - MAX_STATUS
    if more > 0 or state.status_cut:
        lines.append(f"[… {'more than ' if state.status_cut else ''}{max(more, 0)} more]")
    return "\n".join(lines)


def _artifacts(state: FinalState) -> str:
    if not state.artifacts:
        return ""
    return f" ({plural(state.artifacts, 'untracked build/cache path')} not listed)"


def _status_counts(entries: list[StatusEntry]) -> str:
    untracked = sum(e.code == "??" for e in entries)
    staged = sum(e.code[0] not in " ?!" for e in entries)
    unstaged = sum(e.code[1] not in " ?!" for e in entries)
    counts = ((staged, "staged"), (unstaged, "unstaged"), (untracked, "untracked"))
    return ", ".join(f"{n} {word}" for n, word in counts if n)


def _status_line(entry: StatusEntry) -> str:
    code = entry.code.replace(" ", ".")
    words = [_STATUS_WORDS.get(c, "") for c in dict.fromkeys(entry.code.strip())]
    what = "untracked" if entry.code == "??" else ", ".join(w for w in words if w)
    moved = f"{_path(entry.old_path)} -> " if entry.old_path else ""
    return f"{code} {moved}{_path(entry.path)} ({what})"


def _changes(state: FinalState) -> str:
    start, end = state.start, state.end
    title = "FINAL STATE · changes since the session's first commit"
    if start is None or start.commit is None:
        why = start.how if start else "the session's start is not known"
        return f"{title}: not shown ({one_line(why)})."
    origin = "the empty tree" if start.empty else _short(start.commit)
    scope = f"{title}, {origin} ({one_line(start.how)}), "
    if not state.head_moved:
        scope += "to the work tree (uncommitted changes included)"
    elif end is not None and end.commit and not end.empty:
        later = (
            f"; {plural(state.commits_since, 'later commit')} left out"
            if state.commits_since
            else ""
        )
        scope += f"to {_short(end.commit)} (HEAD at the session's end{later})"
    else:
        return f"{scope}not shown: HEAD has moved and where it was at the end is not known."
    if any(p.startswith("git diff") for p in state.problems):
        return f"{scope}: not read (git diff failed)."
    counted = f"{plural(state.commits_in_session, 'commit')} in the session; " if (
        state.commits_in_session is not None) else ""  # fmt: skip
    return "\n".join([f"{scope}: {counted}{_diff_totals(state)}", *_diff_lines(state)])


def _diff_totals(state: FinalState) -> str:
    if not state.diff:
        return "no tracked file changed."
    ins = sum(f.insertions for f in state.diff)
    dels = sum(f.deletions for f in state.diff)
    cut = " (at least: the list was cut)" if state.diff_cut else ""
    return f"{plural(len(state.diff), 'file')} changed, +{ins} -{dels}{cut}:"


def _diff_lines(state: FinalState) -> list[str]:
    ranked = sorted(state.diff, key=lambda f: -(f.insertions + f.deletions))
    lines = [_INDENT + _change_line(f) for f in ranked[:MAX_DIFF]]
    if len(ranked) > MAX_DIFF:
        lines.append(f"[… {len(ranked) - MAX_DIFF} more files]")
    return lines


def _change_line(change: FileChange) -> str:
    counts = "binary" if change.binary else f"+{change.insertions} -{change.deletions}"
    moved = f"{_path(change.old_path)} -> " if change.old_path else ""
    return f"{counts:>12}  {moved}{_path(change.path)}"


def _covers(entry: StatusEntry, path: str | None) -> bool:
    """The status entry is the path, or an untracked folder holding it (`?? tests/`)."""
    if path is None:
        return False
    return entry.path == path or (entry.path.endswith("/") and path.startswith(entry.path))


def _deliverable(d: Deliverable, status: list[StatusEntry]) -> str:
    head = f"FINAL STATE · deliverable {_path(d.name)} (named by the task): "
    where = f" ({_path(d.path)})" if d.path and d.path != d.name.removeprefix("./") else ""
    if d.state == "missing":
        return head + f"missing{where}" + (f"; {one_line(d.note)}" if d.note else "") + "."
    if d.state in ("outside", "other", "unreadable"):
        return head + f"not read{where}: {one_line(d.note)}."
    if d.state == "directory":
        shown = [_INDENT + _path(n) for n in d.names]
        more = ", at least" if (d.entries or 0) >= 1000 else ""
        return "\n".join(
            [head + f"a directory{where}{more} {plural(d.entries or 0, 'entry')}:", *shown]
        )
    facts = [f"{d.size:,} bytes"]
    if d.total_lines is not None and d.kind == "text":
        facts.append(plural(d.total_lines, "line"))
    facts.append(_KIND_WORDS.get(d.kind or "", "?"))
    if d.note:
        facts.append(one_line(d.note))
    code = next((e.code for e in status if _covers(e, d.path)), None)
    if code:
        facts.append(f"git status {code.replace(' ', '.')}")
    text = head + f"exists{where}, " + ", ".join(facts)
    if not d.lines:
        return text + "."
    body = [_INDENT + line for line in d.lines]
    rest = (d.total_lines or 0) - len(d.lines)
    tail = [f"[… {plural(rest, 'more line')}]"] if rest > 0 else []
    if d.total_lines is None:
        tail = ["[… the rest not read]"]
    first = "first line" if len(d.lines) == 1 else f"first {len(d.lines)} lines"
    return "\n".join([f"{text}; {first}:", *body, *tail])
