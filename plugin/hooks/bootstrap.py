"""Install session-scorer into a folder of its own the first time the plugin needs it.

`scorer.sh` runs this (with the system's python3, standard library only) when it finds
no `scorer` command anywhere:

    bootstrap.py --hook -- hook      a hook: queue the payload on stdin, start the install
                                     in the background, return at once and print nothing;
                                     the session is scored when the install is done
    bootstrap.py -- ARGS...          a slash command: one line saying so, the install
                                     (waited for up to SCORER_INSTALL_WAIT seconds), then
                                     `scorer ARGS...`
    bootstrap.py --source            where it would install from, and why (for people)
    bootstrap.py --install           the install itself (what the two above start)

Where it installs: `$SCORER_HOME/venv` (by default `~/.local/share/session-scorer/venv`,
`~/Library/Application Support/session-scorer/venv` on macOS), a virtualenv of Python
3.11 or later, with `pip install SOURCE`. It is complete when `venv/.installed` exists.

What it installs (the first of):

1. `SCORER_INSTALL_SOURCE`: anything pip installs (a checkout, a wheel, `git+URL`);
2. the checkout the plugin folder is in (the plugin run with `--plugin-dir`);
3. the marketplace Claude Code installed this copy from: a copy of the plugin lives in
   `~/.claude/plugins/cache/MARKET/PLUGIN/VERSION` and holds only the plugin's files, but
   `~/.claude/plugins/known_marketplaces.json` records the marketplace's own location
   (the checkout given to `claude plugin marketplace add`, or Claude Code's clone of a
   git marketplace), which holds the whole package; failing that, its git URL.

Progress and failures go to the hook log (`logs/hook.log`), pip's output to
`logs/install.log`. A failed install is not tried again by hooks for an hour.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The plugin folder (the one holding `.claude-plugin/plugin.json`)."""
PACKAGE = re.compile(r'^name\s*=\s*"session-scorer"\s*$', re.MULTILINE)
RETRY_AFTER = 3600.0
"""Seconds a failed install keeps hooks from trying again."""
WAIT = 90.0
"""Seconds a slash command waits for the install (Claude Code stops a command at 120)."""
PIP_TIMEOUT = 1800.0
MAX_QUEUED = 50
"""Hook payloads kept for the end of an install; older ones are dropped."""


def data_home() -> Path:
    """`SCORER_HOME` as session-scorer's settings see it."""
    if os.environ.get("SCORER_HOME"):
        return Path(os.environ["SCORER_HOME"]).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "session-scorer"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "session-scorer"


HOME = data_home()
VENV = HOME / "venv"
DONE = VENV / ".installed"
FAILED = HOME / "venv.failed"
QUEUE = HOME / "install-queue"
LOGS = HOME / "logs"


def log(level: str, message: str) -> None:
    """One line in the hook log (never on the terminal: a hook must stay silent)."""
    with contextlib.suppress(OSError):
        LOGS.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with open(LOGS / "hook.log", "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {os.getpid()} {level} {message}\n")


# --- where from ------------------------------------------------------------------------


def is_package(folder: Path) -> bool:
    """A folder pip can install session-scorer from (its pyproject names it)."""
    try:
        return bool(PACKAGE.search((folder / "pyproject.toml").read_text(encoding="utf-8")))
    except OSError:
        return False


def marketplace_source(root: Path) -> str | None:
    """What the marketplace this cached copy came from offers pip (see the module doc)."""
    parts = root.parts
    if len(parts) < 5 or parts[-4] != "cache":
        return None
    known = root.parents[3] / "known_marketplaces.json"
    try:
        entry = json.loads(known.read_text(encoding="utf-8")).get(parts[-3]) or {}
    except (OSError, ValueError, AttributeError):
        return None
    location = entry.get("installLocation")
    if isinstance(location, str) and is_package(Path(location)):
        return location
    source = entry.get("source") or {}
    ref = f"@{source['ref']}" if source.get("ref") else ""
    if source.get("source") == "github" and source.get("repo"):
        return f"git+https://github.com/{source['repo']}.git{ref}"
    if source.get("source") == "git" and source.get("url"):
        return f"git+{source['url']}{ref}"
    return None


def find_source(root: Path = ROOT) -> tuple[str, str] | None:
    """(what pip installs, where that was found), or None."""
    configured = os.environ.get("SCORER_INSTALL_SOURCE", "").strip()
    if configured:
        return configured, "SCORER_INSTALL_SOURCE"
    if is_package(root.parent):
        return str(root.parent), "the checkout the plugin runs from"
    found = marketplace_source(root)
    if found:
        return found, "the marketplace the plugin was installed from"
    return None


def find_python() -> str | None:
    """A Python 3.11 or later for the virtualenv."""
    if sys.version_info >= (3, 11):  # noqa: UP036 - run by whatever python3 there is
        return sys.executable
    for name in ("python3.13", "python3.12", "python3.11"):
        path = shutil.which(name)
        if path:
            return path
    return None


def how_to_install() -> str:
    return (
        "install it with `pipx install /path/to/session-scorer` (a checkout), set "
        "SCORER_INSTALL_SOURCE to what pip should install (a checkout, a wheel, git+URL), "
        "or set SCORER_BIN to the scorer command"
    )


# --- the install -----------------------------------------------------------------------


def _run(command: list[str], out: object) -> bool:
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                              timeout=PIP_TIMEOUT, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"{command[0]}: {exc}", file=out, flush=True)  # type: ignore[call-overload]
        return False
    return done.returncode == 0


def install() -> bool:
    """Install into VENV (one process at a time), then replay the queued hook payloads."""
    HOME.mkdir(parents=True, exist_ok=True)
    with open(HOME / "venv.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # another process installs; it replays the queue too
        ok = DONE.exists() or _install()
        if ok:
            replay()
        return ok


def _install() -> bool:
    found, python = find_source(), find_python()
    if found is None or python is None:
        why = "no Python 3.11 or later" if python is None else "no source to install from"
        return _failed(f"{why}; {how_to_install()}")
    source, where = found
    log("INFO", f"installing session-scorer into {VENV} from {source} ({where})")
    shutil.rmtree(VENV, ignore_errors=True)  # what an interrupted attempt left
    LOGS.mkdir(parents=True, exist_ok=True)
    with open(LOGS / "install.log", "a", encoding="utf-8") as out:
        out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} pip install {source}\n")
        out.flush()
        python_in = VENV / "bin" / "python"
        pip = [str(python_in), "-m", "pip", "install", "--disable-pip-version-check", source]
        ok = _run([python, "-m", "venv", str(VENV)], out) and _run(pip, out)
    if not ok or not (VENV / "bin" / "scorer").exists():
        shutil.rmtree(VENV, ignore_errors=True)
        return _failed(f"pip could not install it from {source} (see {LOGS / 'install.log'}); "
                       + how_to_install())  # fmt: skip
    DONE.write_text(json.dumps({"source": source, "at": time.time()}) + "\n", encoding="utf-8")
    with contextlib.suppress(OSError):
        FAILED.unlink()
    log("INFO", f"installed session-scorer into {VENV}")
    return True


def _failed(reason: str) -> bool:
    log("WARNING", f"session-scorer is not installed: {reason}")
    with contextlib.suppress(OSError):
        FAILED.write_text(reason + "\n", encoding="utf-8")
    return False


def replay() -> None:
    """Hand each queued hook payload to the installed `scorer hook` (which detaches)."""
    for path in sorted(QUEUE.glob("*.json")) if QUEUE.is_dir() else []:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired), open(path, "rb") as body:
            subprocess.run([str(VENV / "bin" / "scorer"), "hook"], stdin=body,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60,
                           check=False)  # fmt: skip
        with contextlib.suppress(OSError):
            path.unlink()


def start_install() -> None:
    """The install in a process of its own that outlives the hook or the command."""
    subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--install"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        close_fds=True, start_new_session=True,
    )  # fmt: skip


def installing() -> bool:
    """Another process holds the install lock."""
    try:
        HOME.mkdir(parents=True, exist_ok=True)
        lock = open(HOME / "venv.lock", "a")  # noqa: SIM115 - closed below
    except OSError:
        return False
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
    return False


def recently_failed() -> bool:
    try:
        return time.time() - FAILED.stat().st_mtime < RETRY_AFTER
    except OSError:
        return False


# --- the two callers -------------------------------------------------------------------


def hook() -> int:
    """Queue the payload and start the install; silent, at once, always 0."""
    raw = sys.stdin.buffer.read(2_000_000)
    with contextlib.suppress(OSError):
        QUEUE.mkdir(parents=True, exist_ok=True)
        for old in sorted(QUEUE.glob("*.json"))[: -MAX_QUEUED + 1]:
            old.unlink()
        name = QUEUE / f"{time.time():.6f}-{os.getpid()}.json"
        name.with_suffix(".tmp").write_bytes(raw)
        name.with_suffix(".tmp").replace(name)
    if recently_failed() or installing():
        return 0  # the log says why; the payload waits for the install under way or a later one
    found = find_source()
    if found is None:
        _failed(f"this copy of the plugin does not say where from; {how_to_install()}")
        return 0
    log("INFO", f"session-scorer is not installed: installing it into {VENV} from {found[0]} "
                "in the background; this session is scored when that is done")  # fmt: skip
    start_install()
    return 0


def command(argv: list[str]) -> int:
    """Install in front of a slash command (saying so), then run it."""
    found = find_source()
    if found is None:
        print(f"session-scorer is not installed, and this copy of the plugin does not say "
              f"where from: {how_to_install()}.")  # fmt: skip
        return 0  # exit 0: Claude Code shows a failed command as a raw shell error
    print(f"session-scorer is not installed yet: installing it into {VENV} from {found[0]} "
          f"(once; a minute or two)…", flush=True)  # fmt: skip
    with contextlib.suppress(OSError):
        FAILED.unlink()  # asked for: try again now
    start_install()
    deadline = time.monotonic() + float(os.environ.get("SCORER_INSTALL_WAIT") or WAIT)
    while not DONE.exists() and not FAILED.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    if DONE.exists():
        sys.stdout.flush()
        scorer = str(VENV / "bin" / "scorer")
        os.execv(scorer, [scorer, *argv])
    if FAILED.exists():
        print(FAILED.read_text(encoding="utf-8").strip())
    else:
        print(f"still installing (progress: {LOGS / 'install.log'}); run the command again "
              "in a minute.")  # fmt: skip
    return 0


def main(args: list[str]) -> int:
    if args[:1] == ["--install"]:
        return 0 if install() else 1
    if args[:1] == ["--source"]:
        found = find_source()
        print(f"{found[0]}  ({found[1]})" if found else f"none: {how_to_install()}")
        return 0 if found else 1
    is_hook = args[:1] == ["--hook"]
    rest = args[args.index("--") + 1 :] if "--" in args else args[is_hook:]
    return hook() if is_hook else command(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
