"""The plugin installs session-scorer into a folder of its own when it finds none
(`plugin/hooks/bootstrap.py`): a hook starts the install in the background and returns at
once, and the session is scored when it is done; a slash command says so in one line and
then runs. Where from: `SCORER_INSTALL_SOURCE`, the checkout around the plugin, or the
marketplace Claude Code recorded for the cached copy.

The package installed here is a small wheel built by the test (a `scorer` that records
how it was called), so the install runs offline and in seconds; the real package's
install is the same `pip install SOURCE`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.jobs.hook.helpers import assert_quick_and_silent, wait_for
from tests.plugin.helpers import PLUGIN_DIR, hook_commands, run_shell

INSTALL_TIMEOUT = 240.0
"""A virtualenv with pip takes 5–30 s on a loaded 2-core machine."""
_FAKE = """import json, os, sys
def main():
    body = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    with open(os.environ["FAKE_SCORER_RECORD"], "a") as out:
        out.write(json.dumps({"argv": sys.argv[1:], "stdin": body}) + "\\n")
    print("fake scorer", *sys.argv[1:])
"""


def fake_wheel(folder: Path) -> Path:
    """A wheel named session-scorer whose `scorer` records its argv and stdin."""
    info = "session_scorer-0.1.0.dist-info"
    files = {
        "fakescorer.py": _FAKE,
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: session-scorer\nVersion: 0.1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\nscorer = fakescorer:main\n",
    }
    path = folder / "session_scorer-0.1.0-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            data = text.encode()
            wheel.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{name},sha256={digest.decode()},{len(data)}")
        wheel.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return path


class Machine:
    """A HOME with no session-scorer, a copy of the plugin outside any checkout, and
    what the fake scorer recorded."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.plugin = tmp_path / "copy" / "plugin"
        shutil.copytree(PLUGIN_DIR, self.plugin)
        self.record = tmp_path / "record.jsonl"
        self.data = tmp_path / "data"
        self.env = {**env, "CLAUDE_PLUGIN_ROOT": str(self.plugin), "SCORER_HOME": str(self.data),
                    "FAKE_SCORER_RECORD": str(self.record)}  # fmt: skip

    def calls(self) -> list[dict]:
        text = self.record.read_text() if self.record.exists() else ""
        return [json.loads(line) for line in text.splitlines()]

    def log(self) -> str:
        path = self.data / "logs" / "hook.log"
        return path.read_text() if path.exists() else ""

    def script(self, *args: str) -> str:
        return " ".join([f'sh "{self.plugin}/hooks/scorer.sh"', *args])


@pytest.fixture
def machine(no_scorer, tmp_path) -> Machine:
    return Machine(tmp_path, no_scorer[1])


def test_a_hook_installs_the_scorer_in_the_background_and_then_scores(machine, tmp_path):
    machine.env["SCORER_INSTALL_SOURCE"] = str(fake_wheel(tmp_path))
    body = b'{"session_id": "s1", "transcript_path": "/t/s1.jsonl"}'
    assert_quick_and_silent(run_shell(hook_commands()["SessionEnd"], machine.env, body))
    # A second session ends while the install runs: queued, no second install.
    second = b'{"session_id": "s2", "transcript_path": "/t/s2.jsonl"}'
    assert_quick_and_silent(run_shell(hook_commands()["SessionEnd"], machine.env, second))
    wait_for(lambda: len(machine.calls()) == 2, INSTALL_TIMEOUT, "the queued sessions")
    calls = machine.calls()
    assert [c["argv"] for c in calls] == [["hook"], ["hook"]]
    assert [json.loads(c["stdin"])["session_id"] for c in calls] == ["s1", "s2"]
    log = machine.log()
    assert log.count("installing session-scorer into") == 1
    assert f"installed session-scorer into {machine.data / 'venv'}" in log
    assert "this session is scored when that is done" in log and "Traceback" not in log
    queue = machine.data / "install-queue"
    wait_for(lambda: not list(queue.iterdir()), 60.0, "the queue to empty")  # after each call
    # From now on the installed scorer runs directly.
    third = b'{"session_id": "s3", "transcript_path": "/t/s3.jsonl"}'
    assert run_shell(hook_commands()["SessionEnd"], machine.env, third).done.returncode == 0
    assert json.loads(machine.calls()[-1]["stdin"])["session_id"] == "s3"


def test_a_slash_command_says_it_installs_then_runs(machine, tmp_path):
    machine.env["SCORER_INSTALL_SOURCE"] = str(fake_wheel(tmp_path))
    machine.env["CLAUDE_CODE_SESSION_ID"] = "7e57ab1e-0000-4000-8000-000000000001"
    done = subprocess.run(
        ["sh", "-c", machine.script("score", "--rescore")], env=machine.env,
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT + 30,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    first, second = done.stdout.splitlines()
    assert first.startswith("session-scorer is not installed yet: installing it into ")
    assert f"{machine.data / 'venv'} from {tmp_path}" in first
    assert second == "fake scorer hook --now --current --session-id " + (
        "7e57ab1e-0000-4000-8000-000000000001 --rescore"
    )


def test_a_failed_install_is_one_line_and_hooks_do_not_retry_it_for_an_hour(machine, tmp_path):
    machine.env["SCORER_INSTALL_SOURCE"] = str(tmp_path / "missing.whl")
    for n in range(3):
        body = json.dumps({"session_id": f"s{n}", "transcript_path": "/t"}).encode()
        assert_quick_and_silent(run_shell(hook_commands()["SessionEnd"], machine.env, body))
        wait_for(lambda: "pip could not install it" in machine.log(), INSTALL_TIMEOUT)
    log = machine.log()
    assert log.count("pip could not install it") == 1 and "Traceback" not in log
    assert "install.log" in log and not (machine.data / "venv").exists()
    # Asked for by a slash command, it tries again, and says why it failed in one line.
    done = subprocess.run(
        ["sh", "-c", machine.script("view", "--show")], env=machine.env, capture_output=True,
        text=True, timeout=INSTALL_TIMEOUT + 30,
    )  # fmt: skip
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and "pip could not install it from" in lines[1]
    assert machine.log().count("pip could not install it") == 2


# --- where from ------------------------------------------------------------------------


def source_of(plugin: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["python3", str(plugin / "hooks" / "bootstrap.py"), "--source"], env=env,
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.strip()


def test_the_source_in_a_checkout_is_the_checkout(no_scorer):
    assert source_of(PLUGIN_DIR, no_scorer[1]) == f"{REPO}  (the checkout the plugin runs from)"


def cached_copy(tmp_path: Path, known: dict) -> Path:
    """The plugin as Claude Code caches it, with its record of the marketplace."""
    plugins = tmp_path / ".claude" / "plugins"
    copy = plugins / "cache" / "session-scorer" / "session-scorer" / "0.1.0"
    shutil.copytree(PLUGIN_DIR, copy)
    (plugins / "known_marketplaces.json").write_text(json.dumps({"session-scorer": known}))
    return copy


def test_the_source_of_a_cached_copy_is_its_marketplace(no_scorer, tmp_path):
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copyfile(REPO / "pyproject.toml", checkout / "pyproject.toml")
    local = {"source": {"source": "directory", "path": str(checkout)},
             "installLocation": str(checkout)}  # fmt: skip
    copy = cached_copy(tmp_path / "a", local)
    assert source_of(copy, no_scorer[1]).startswith(f"{checkout}  (the marketplace")
    # A git marketplace whose clone is gone: its URL, at its ref.
    github = {"source": {"source": "github", "repo": "acme/session-scorer", "ref": "v0.1.0"},
              "installLocation": str(tmp_path / "gone")}  # fmt: skip
    copy = cached_copy(tmp_path / "b", github)
    assert source_of(copy, no_scorer[1]).startswith(
        "git+https://github.com/acme/session-scorer.git@v0.1.0  (the marketplace"
    )
    env = {**no_scorer[1], "SCORER_INSTALL_SOURCE": "session-scorer==0.1.0"}
    assert source_of(copy, env) == "session-scorer==0.1.0  (SCORER_INSTALL_SOURCE)"
