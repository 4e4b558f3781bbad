"""The public API (issue 23 item 6): what `scorer` exports, `py.typed`, and the README's
library example run as written."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import scorer

ROOT = Path(__file__).resolve().parents[1]


def readme_library_example() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## As a library", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


def test_every_public_name_resolves():
    missing = [name for name in scorer.__all__ if getattr(scorer, name, None) is None]
    assert missing == []
    assert scorer.__all__ == sorted([*scorer._HOME_OF, "__version__"])  # one list of names
    for name in ("score_session", "resolve", "ScoreStore", "LangfuseSink", "make_judge",
                 "Judge", "publish", "Prepared", "PrepOptions", "to_dataframe",
                 "ScorerError", "ConfigError", "CredentialsError", "SourceError",
                 "JudgeError", "SinkError"):  # fmt: skip
        assert name in scorer.__all__, name
    with pytest.raises(AttributeError):
        scorer.no_such_name  # noqa: B018


def test_the_public_names_are_the_pipeline_objects():
    from scorer.errors import ScorerError
    from scorer.jobs.score import score_session
    from scorer.sinks.store import ScoreStore

    assert scorer.score_session is score_session and scorer.ScoreStore is ScoreStore
    assert issubclass(scorer.SinkError, ScorerError)


def test_import_scorer_stays_cheap():
    # the names load on first use: `import scorer` (every CLI start) imports no pipeline
    code = "import sys, scorer; print(sorted(m for m in sys.modules if m.startswith('scorer')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['scorer']"


def test_py_typed_ships_in_the_package():
    assert (ROOT / "scorer" / "py.typed").is_file()


def test_py_typed_is_in_the_wheel(tmp_path):
    # The build backend's own file selection (what `pip wheel .` ships), without network.
    from hatchling.builders.wheel import WheelBuilder

    [wheel] = WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"])
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    assert "scorer/py.typed" in names and "scorer/__init__.py" in names


def test_the_readme_library_example_runs_as_written(monkeypatch, capsys, clean_env):
    monkeypatch.chdir(ROOT)  # the example names examples/demo-session.jsonl
    exec(compile(readme_library_example(), "README.md", "exec"), {})
    first, *table = capsys.readouterr().out.strip().splitlines()
    overall, label = first.split()
    assert 0.0 <= float(overall) <= 1.0
    assert label in {"failed", "partial", "complete", "exceeded"}
    assert "session_id" in table[0] and len(table) == 2  # the header and the one card
    assert (clean_env / "scores.sqlite3").is_file()  # stored in $SCORER_HOME, not the repo
