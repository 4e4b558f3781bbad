"""What a terminal shows about the coding agent it ran: its model, folder and first prompt.

Terminal sessions (pane captures, recordings, live tmux panes) carry no metadata, but
Claude Code prints it:

- the interactive banner (`Claude Code v2.1.39` / `Opus 4.6 · Claude Max` / `~/projects/x`,
  or the older `✻ Welcome to Claude Code!` box with `cwd: …`), followed by `❯ prompt`
  (`> prompt` in older versions);
- a headless run's command line (`claude … -p 'task …'`), whose stream-json output
  starts with a `system/init` line naming the model.

`screen_identity` finds these (pure); the result goes to `Session.extra["screen"]`, which
`SessionInfo.of` uses for the title, task, model and project. It never feeds the judge.
"""

from __future__ import annotations

import re

__all__ = ["screen_identity"]

_BANNER = re.compile(r"Claude Code v\d|Welcome to Claude Code")
_UI_MODEL = re.compile(r"\b(Opus|Sonnet|Haiku)\s+(\d+(?:\.\d+)*)\b")
_INIT = re.compile(r'\{"type":\s*"system",\s*"subtype":\s*"init"[^\n]*')
_INIT_FIELD = {key: re.compile(rf'"{key}":\s*"([^"]+)"') for key in ("model", "cwd")}
_CWD = re.compile(r"(?:^|\s)(?:cwd:\s*)?((?:~|/)[^\s│|]*)\s*[│|]?\s*$")
_PROMPT = re.compile(r"^[\s│|]*[❯>]\s+(\S.*?)\s*[│|]?\s*$")
_PLACEHOLDER = re.compile(r'^Try "')
_HEADLESS = re.compile(r"\bclaude\b[^\n]*?\s(?:-p|--print)\s+(['\"])")
_BANNER_LINES = 6
"""Lines after `Claude Code v…` that hold the model and the folder."""


def screen_identity(text: str, width: int | None = None) -> dict[str, str]:
    """The agent's model (`claude-opus-4-6`), folder and first prompt as a terminal shows
    them; only the keys found (`model`, `cwd`, `prompt`).

    Args:
        text: The cleaned terminal text.
        width: The terminal's width, when known (a recording's): lines exactly this long
            were wrapped by the terminal and are joined back.
    """
    lines = _unwrap(text.splitlines(), width)
    found: dict[str, str] = {}
    headless = _headless_prompt(lines)
    if headless:
        found["prompt"] = headless
    init = _INIT.search("\n".join(lines))
    for key, pattern in _INIT_FIELD.items():
        hit = pattern.search(init.group(0)) if init else None
        if hit:
            found[key] = hit.group(1)
    start = next((i for i, line in enumerate(lines) if _BANNER.search(line)), None)
    if start is not None:
        shown = _banner(lines[start : start + _BANNER_LINES])
        prompt = _first_prompt(lines[start + 1 :])
        if prompt:
            shown["prompt"] = prompt
        found = {**shown, **found}  # a headless run's own command and init line win
    return found


def _unwrap(lines: list[str], width: int | None) -> list[str]:
    if not width:
        return lines
    out: list[str] = []
    carry = ""
    for line in lines:
        if len(line) == width:
            carry += line
            continue
        out.append(carry + line)
        carry = ""
    if carry:
        out.append(carry)
    return out


def _banner(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in lines:
        model = _UI_MODEL.search(line)
        if model and "model" not in found:
            family, version = model.groups()
            found["model"] = f"claude-{family.lower()}-{version.replace('.', '-')}"
        cwd = _CWD.search(line)
        if cwd and "cwd" not in found:
            found["cwd"] = cwd.group(1)
    return found


def _first_prompt(lines: list[str]) -> str | None:
    """The first `❯ text` line that is a request: not the input placeholder, not a bare
    slash command (`/model`), with the lines it wraps onto."""
    for i, line in enumerate(lines):
        match = _PROMPT.match(line)
        if not match:
            continue
        text = match.group(1)
        if _PLACEHOLDER.match(text) or re.fullmatch(r"/[\w:-]+", text):
            continue
        more = []
        for follow in lines[i + 1 : i + 40]:
            if not follow.strip() or follow.lstrip().startswith(("●", "⎿", "❯", "─")):
                break
            more.append(follow.strip())
        return "\n".join([text, *more])
    return None


def _headless_prompt(lines: list[str]) -> str | None:
    """The quoted argument of `claude … -p '…'` (shell continuation `> ` prompts and the
    `'"'"'` quote escape undone)."""
    text = "\n".join(lines)
    match = _HEADLESS.search(text)
    if not match:
        return None
    quote, rest = match.group(1), text[match.end() :]
    escaped = f'{quote}"{quote}"{quote}' if quote == "'" else '\\"'
    out, i = [], 0
    while i < len(rest):
        if rest.startswith(escaped, i):
            out.append(quote)
            i += len(escaped)
        elif rest[i] == quote:
            break
        else:
            out.append(rest[i])
            i += 1
    body = re.sub(r"\n> ?", "\n", "".join(out)).strip()
    return body or None
