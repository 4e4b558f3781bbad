"""Named artefacts: the paths, URLs, ports and commands a task names, and what the session
shows happened to each (pure).

From the task text (fenced code left out): absolute paths, relative paths with a `/`, file
names with a known extension, URLs, ports (`port 3000`, `localhost:8888`) and backticked
commands that start with `./` or a program that runs things (`python3 main.py`). Then,
from the tool calls (a mention is the name inside a call's input):

    path     written (a file tool, or a shell command that writes and names it), looked at
             (read, listed or inspected, and whether that found it), removed after
    url      every request naming it, and whether the last one answered (no tool error,
             no HTTP 4xx/5xx, no refused connection)
    port     the same for requests to that port, plus how a server was left running: a
             Claude Code background shell (`run_in_background`, stopped when the session
             ends) or detached (`&`, nohup, setsid), and kills after the last answer
    command  the last run of that program, and whether it failed

It is a map for the judge and the heuristic, not a verdict: a mention is matched as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from scorer.models import Event, EventKind
from scorer.prepare.verification import is_edit, tool_failed

ArtefactKind = Literal["path", "url", "port", "command"]
ArtefactStatus = Literal[
    "produced", "removed", "seen", "missing", "mentioned",
    "answered", "failed", "started", "ran", "untouched",
]  # fmt: skip
MAX_ARTEFACTS = 12
_EXTENSIONS = (
    "txt|md|py|c|h|cc|cpp|hpp|js|mjs|ts|json|jsonl|yaml|yml|toml|csv|tsv|parquet|mp4|mp3|wav"
    "|png|jpe?g|gif|ppm|svg|pdf|iso|sh|log|html?|xml|sql|db|sqlite3?|v|vo|zip|gz|tgz|tar|7z|bin"
    "|pt|pth|ckpt|bpe|pkl|ipynb|cfg|ini|conf|rs|go|java|rb|pl|f90|hex|wasm|so|out|lock|xlsx"
    "|npy|npz|h5|onnx|safetensors|whl|patch|diff|dat|img|cpio|elf|exe|env"
)
_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.S)
_URL_RE = re.compile(r"https?://[^\s)\"'`<>]+")
_PORT_RE = re.compile(
    r"\bport\s+(\d{2,5})\b|(?:localhost|127\.0\.0\.1|0\.0\.0\.0):(\d{2,5})\b", re.I
)
_ABS_PATH_RE = re.compile(r"(?<![\w.:/~-])/(?:[\w.+-]+/)*[\w.+-]+/?")
_REL_PATH_RE = re.compile(r"(?<![\w./~:-])(?:\./)?[\w.+-]+/(?:[\w.+-]+/?)*")
_FILE_RE = re.compile(rf"(?<![\w./-])[\w+-][\w.+-]*\.(?:{_EXTENSIONS})(?![\w-])", re.I)
_BACKTICK_RE = re.compile(r"`([^`\n]{2,120})`")
_RUNNERS = {
    "python", "python3", "node", "gcc", "g++", "cc", "clang", "make", "cargo", "go", "bash",
    "sh", "npm", "npx", "java", "ruby", "perl", "docker", "curl", "coqc", "rustc", "uv",
}  # fmt: skip
_HTTP_ERROR_RE = re.compile(
    r"HTTP/[\d.]+ ([45]\d\d)\b|<title>\s*([45]\d\d)\b|Connection refused|Failed to connect"
    r"|Could not resolve host|Couldn't connect"
)
_REMOVE_RE = re.compile(r"(?:^|[;&|]\s*)(?:sudo\s+)?(?:rm|rmdir|unlink)\s")
_DETACH_RE = re.compile(r"(?<![&>])&\s*(?:$|[;)]|\s*\w)|\bnohup\b|\bsetsid\b|\bdisown\b|--daemon\b")


class Artefact(BaseModel):
    """One thing the task names and what the session shows happened to it."""

    kind: ArtefactKind
    name: str
    status: ArtefactStatus
    """path: produced / removed / seen (looked at, not written) / missing (looked for, not
    found) / mentioned; url, port: answered / failed (port: started, never requested);
    command: ran / failed; all: untouched."""
    note: str
    """What happened, in words, with event numbers."""
    events: list[int] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    """Facts for rules: `last_use_failed` (path), `background_shell` (the port's server
    ends with the session), `killed` (a kill after the port's last answer)."""


def task_artefacts(task: str | None) -> list[tuple[ArtefactKind, str]]:
    """The artefacts a task names, in order of first mention, at most `MAX_ARTEFACTS`."""
    if not task:
        return []
    text = _FENCE_RE.sub("\n", task)
    found: dict[str, tuple[int, ArtefactKind, str]] = {}

    def add(at: int, kind: ArtefactKind, name: str) -> None:
        name = name.rstrip(".,;:)")
        key = f"{kind}:{name.lower()}"
        if len(name) >= 2 and key not in found:
            found[key] = (at, kind, name)

    urls = [(m.start(), m.group(0).rstrip(".,;:)")) for m in _URL_RE.finditer(text)]
    for at, url in urls:
        add(at, "url", url)
    for m in _PORT_RE.finditer(text):
        if not any(f":{m.group(1) or m.group(2)}" in url for _, url in urls):
            add(m.start(), "port", m.group(1) or m.group(2))
    for m in _BACKTICK_RE.finditer(text):
        if _is_command(m.group(1)):
            add(m.start(), "command", m.group(1).strip())
    bare = _URL_RE.sub(" ", text)
    for pattern in (_ABS_PATH_RE, _REL_PATH_RE, _FILE_RE):
        for m in pattern.finditer(bare):
            name = m.group(0).rstrip(".,;:)")
            if _is_path(name):
                add(m.start(), "path", name)
    ordered = sorted(found.values())
    return _drop_contained([(kind, name) for _, kind, name in ordered])[:MAX_ARTEFACTS]


def _is_command(text: str) -> bool:
    first = text.split()[0] if text.split() else ""
    return first.startswith("./") or first in _RUNNERS


def _is_path(name: str) -> bool:
    core = name.rstrip("/").removeprefix("./")
    parts = [p for p in core.split("/") if p]
    if not parts or re.fullmatch(r"[\d.]+", core):
        return False  # versions like 6.9
    has_ext = _FILE_RE.fullmatch(parts[-1]) is not None
    if name.startswith("/"):
        # `/fib`, `/status`: endpoints; `/app/`: the workspace itself
        return len(parts) >= 2 or has_ext
    # `positive/negative`, `owner/dataset`: words with a slash, not paths
    return has_ext or name.endswith("/") or name.startswith("./") or len(parts) >= 3


def _drop_contained(items: list[tuple[ArtefactKind, str]]) -> list[tuple[ArtefactKind, str]]:
    """`maze_map.txt` when `/app/maze_map.txt` is also named: keep only the longer path."""
    paths = [name for kind, name in items if kind == "path"]
    return [
        (kind, name)
        for kind, name in items
        if kind != "path"
        or not any(o != name and o.endswith("/" + name.lstrip("./")) for o in paths)
    ]


# --- what the session shows -------------------------------------------------------------


class _Call:
    """A tool call with its result, and the text an artefact is looked for in."""

    def __init__(self, call: Event, result: Event | None) -> None:
        self.call, self.result = call, result
        inp = call.tool_input or {}
        self.command = str(inp.get("command", "")) if call.tool_name == "Bash" else ""
        self.path = str(inp.get("file_path") or inp.get("notebook_path") or inp.get("path") or "")
        self.text = "\n".join(str(v) for v in inp.values() if isinstance(v, str | int | float))
        self.failed = result is not None and tool_failed(result)
        self.output = result.text if result is not None else ""
        self.background = bool(inp.get("run_in_background"))


def _mentions(text: str, name: str) -> bool:
    """Whether `text` names the path: in full, or by its last two parts, or by a file
    name with an extension (an agent that did `cd /app` writes `answer.txt`)."""
    return any(
        re.search(rf"(?<![\w.-]){re.escape(form)}(?![\w-]|\.\w)", text) is not None
        for form in _forms(name)
    )


def _forms(name: str) -> list[str]:
    core = name.rstrip("/").removeprefix("./")
    parts = [p for p in core.split("/") if p]
    forms = [core]
    if len(parts) >= 3:
        forms.append("/".join(parts[-2:]))
    if parts and _FILE_RE.fullmatch(parts[-1]) and len(parts[-1]) >= 6:
        forms.append(parts[-1])
    return forms


def artefact_states(task: str | None, events: Sequence[Event]) -> list[Artefact]:
    """What the session shows happened to each artefact the task names."""
    named = task_artefacts(task)
    if not named:
        return []
    results = {e.tool_use_id: e for e in events if e.kind == EventKind.TOOL_RESULT}
    calls = [_Call(e, results.get(e.tool_use_id)) for e in events if e.kind == EventKind.TOOL_CALL]
    judge = {"path": _path_state, "url": _url_state, "port": _port_state, "command": _command_state}
    return [judge[kind](name, calls) for kind, name in named]


def _refs(calls: Iterable[_Call]) -> list[int]:
    return [c.call.index for c in calls]


def _path_state(name: str, calls: list[_Call]) -> Artefact:
    hits = [c for c in calls if _mentions(c.text, name)]
    if not hits:
        return Artefact(kind="path", name=name, status="untouched", note="no action names it")
    writes = [c for c in hits if _writes(c, name)]
    last_write = writes[-1].call.index if writes else 0
    removes = [
        c for c in hits if c.command and _REMOVE_RE.search(c.command) and c.call.index > last_write
    ]
    after = [
        c
        for c in hits
        if c.call.index > last_write and c.result is not None and not _writes(c, name)
    ]
    looks = [c for c in after if _inspects(c)]
    runs = [c for c in after if not _inspects(c) and c.command and not _REMOVE_RE.search(c.command)]
    parts: list[str] = []
    status: ArtefactStatus = "mentioned"
    if writes:
        w = writes[-1]
        how = w.call.tool_name if not w.command else "shell"
        parts.append(
            f"written at #{w.call.index} ({how})"
            + (f", {len(writes)} times" if len(writes) > 1 else "")
        )
        status = "produced"
    if looks:
        look = looks[-1]
        found = not look.failed and not _NOT_FOUND_RE.search(look.output[:2000])
        parts.append(f"last looked at #{look.call.index}: {'found' if found else 'not found'}")
        if not writes:
            status = "seen" if found else "missing"
    if runs:
        run = runs[-1]
        parts.append(f"last used at #{run.call.index}: {'failed' if run.failed else 'ok'}")
    if removes:
        parts.append(f"removed at #{removes[-1].call.index}")
        status = "removed"
    if not parts:
        parts.append(f"named by actions at {_fmt_refs(_refs(hits))}")
    flags = ["last_use_failed"] if runs and runs[-1].failed else []
    return Artefact(kind="path", name=name, status=status, note="; ".join(parts), flags=flags,
                    events=_refs([*writes[-1:], *looks[-1:], *runs[-1:], *removes[-1:]]) or _refs(hits[-3:]))  # fmt: skip


_NOT_FOUND_RE = re.compile(
    r"No such file or directory|cannot access|does not exist|not found", re.I
)
_INSPECT_RE = re.compile(
    r"^\s*(?:sudo\s+)?(?:cat|ls|head|tail|stat|file|wc|test|\[|du|md5sum|sha256sum|xxd|od|hexdump|diff|cmp|find|tree|readlink|realpath)\b"
)


def _inspects(c: _Call) -> bool:
    """A look at a file: a Read, or a shell command that starts with a viewer (`cat`, `ls`...)."""
    if c.call.tool_name in ("Read", "Glob", "Grep", "LS"):
        return True
    return bool(c.command) and any(_INSPECT_RE.match(p) for p in _SEGMENT_RE.split(c.command))


def _writes(c: _Call, name: str) -> bool:
    if c.failed:
        return False  # `File has not been read yet`: nothing was written
    if c.call.tool_name != "Bash":
        return is_edit(c.call) and _mentions(c.path, name)
    return any(_mentions(target, name) for target in shell_targets(c.command))


_REDIRECT_RE = re.compile(r"(?<![\d&>])>>?\s*([^\s;&|]+)")
_TARGET_ARG_RE = re.compile(
    r"(?:\s|^)(?:-o|-O|--output|--output-document)[=\s]\s*([^\s;&|]+)|\bof=(\S+)"
)
_SEGMENT_RE = re.compile(r"&&|\|\||[;|\n]")


def shell_targets(command: str) -> list[str]:
    """What a shell command line writes: redirection and `tee` targets, the last argument of
    `cp`/`mv`/`ln`, `touch`/`mkdir` arguments, `-o FILE`, `of=FILE`, and the files of
    `sed -i` / `perl -i` / `patch` / `git apply` (their whole piece). Unpacking an
    archive writes beside it, not to it."""
    targets = [m.group(1) for m in _REDIRECT_RE.finditer(command)]
    targets += [m.group(1) or m.group(2) for m in _TARGET_ARG_RE.finditer(command)]
    for piece in _SEGMENT_RE.split(command):
        words = piece.split()
        while words and ("=" in words[0] or words[0] in ("sudo", "time")):
            words = words[1:]
        if not words:
            continue
        args = [w for w in words[1:] if not w.startswith("-")]
        if words[0] in ("cp", "mv", "ln", "rsync", "install") and args:
            targets.append(args[-1])
        elif words[0] in ("touch", "mkdir", "tee", "truncate"):
            targets += args
        elif (
            (
                words[0] in ("sed", "perl")
                and any(w.startswith("-i") or "i" in w.lstrip("-") for w in words[1:3])
            )
            or words[0] == "patch"
            or words[:2] == ["git", "apply"]
        ):
            targets.append(piece)
    return [t.strip("'\"") for t in targets if t and not t.startswith("/dev/")]


def _answer(c: _Call) -> bool:
    return not c.failed and not _HTTP_ERROR_RE.search(c.output[:4000])


def _url_state(name: str, calls: list[_Call]) -> Artefact:
    base = re.sub(r"^(https?://[^/]+).*$", r"\1", name)
    hits = [c for c in calls if base in c.text and c.result is not None]
    if not hits:
        return Artefact(kind="url", name=name, status="untouched", note="never requested")
    ok = [c for c in hits if _answer(c)]
    last = hits[-1]
    note = f"requested {len(hits)}×; last at #{last.call.index}: " + (
        "answered" if _answer(last) else _failure(last)
    )
    if ok and ok[-1] is not last:
        note += f"; last answer at #{ok[-1].call.index}"
    return Artefact(kind="url", name=name, status="answered" if _answer(last) else "failed",
                    note=note, events=_refs([last, *ok[-1:]]))  # fmt: skip


def _failure(c: _Call) -> str:
    match = _HTTP_ERROR_RE.search(c.output[:4000])
    if match:
        return match.group(1) or match.group(2) or match.group(0)
    return "error" if c.failed else "no answer"


def _port_state(port: str, calls: list[_Call]) -> Artefact:
    pattern = re.compile(rf"(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]|\w):{port}\b")
    requests = [
        c for c in calls if c.result is not None and pattern.search(c.text) and not _starts(c)
    ]
    answered = [c for c in requests if _answer(c)]
    starts = [
        c
        for c in calls
        if _starts(c) and (port in c.text or not answered or c.call.index < answered[0].call.index)
    ]
    parts: list[str] = []
    if answered:
        parts.append(f"answered at #{answered[-1].call.index}")
    if requests and (not answered or requests[-1] is not answered[-1]):
        parts.append(f"last request at #{requests[-1].call.index}: {_failure(requests[-1])}")
    if starts:
        start = starts[-1]
        how = ("in a Claude Code background shell, which stops when the session ends"
               if start.background else "detached")  # fmt: skip
        parts.append(f"server started at #{start.call.index} {how}")
    last_answer = answered[-1].call.index if answered else 0
    kills = [c for c in calls if c.call.index > last_answer and _kills(c)]
    if answered and kills:
        parts.append(f"a kill at #{kills[-1].call.index} after the last answer")
    if not parts:
        return Artefact(kind="port", name=port, status="untouched", note="no request to it")
    status: ArtefactStatus
    if not requests:
        status = "started"
    elif answered and not kills and requests[-1] is answered[-1]:
        status = "answered"
    else:
        status = "failed"
    refs = _refs([*answered[-1:], *requests[-1:], *starts[-1:], *kills[-1:]])
    flags = [
        flag
        for flag, hit in (
            ("background_shell", bool(starts) and starts[-1].background),
            ("killed", bool(answered and kills)),
        )
        if hit
    ]
    return Artefact(kind="port", name=port, status=status, note="; ".join(parts),
                    events=sorted(set(refs)), flags=flags)  # fmt: skip


def _starts(c: _Call) -> bool:
    """A call that leaves a process running: a background shell or a detached command."""
    return c.background or bool(c.command and _DETACH_RE.search(c.command))


def _kills(c: _Call) -> bool:
    return c.call.tool_name == "KillShell" or bool(
        re.search(r"\b(?:kill|pkill|killall)\b", c.command)
    )


def _command_state(command: str, calls: list[_Call]) -> Artefact:
    words = command.split()
    key = " ".join(words[:2]) if len(words) > 1 and not words[1].startswith("-") else words[0]
    key = key.removeprefix("./")
    runs = [c for c in calls if c.command and _mentions(c.command, key) and c.result is not None]
    if not runs:
        return Artefact(kind="command", name=command, status="untouched", note="never run")
    last = runs[-1]
    state: ArtefactStatus = "failed" if last.failed else "ran"
    return Artefact(kind="command", name=command, status=state,
                    note=f"run {len(runs)}×; last at #{last.call.index}: {'failed' if last.failed else 'ok'}",
                    events=[last.call.index])  # fmt: skip


def _fmt_refs(refs: list[int], n: int = 4) -> str:
    return " ".join(f"#{i}" for i in refs[:n]) + (" …" if len(refs) > n else "")
