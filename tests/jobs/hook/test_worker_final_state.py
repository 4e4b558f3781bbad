"""The hook judges a session with its workspace's final state when the repository it
worked in is here (`HookEnv.final_state`, `SCORER_FINAL_STATE`), and the final state is
not work: reading it again never makes a session judged again."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from scorer.jobs.hook.policy import HookPolicy
from scorer.jobs.hook.request import HookRequest
from scorer.jobs.hook.worker import HookEnv, HookJob
from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from tests.live.workspace_helpers import START, commit, make_repo, transcript

HOOK_ID = "5e55a0e0-0000-4000-8000-00000000f1a1"
TASK = "Add app.py and write the summary to `out/summary.md`."


def _job(path, clean_env) -> HookJob:
    env = replace(
        HookEnv.from_settings(get_settings()),
        projects_root=clean_env.parent / "projects",
        claude_found=False,  # the heuristic judge: no key, no `claude`
    )
    request = HookRequest(HOOK_ID, path, event="SessionEnd", cwd=None)
    return HookJob(request, HookPolicy(), env)


def _work(tmp_path, branch: str = "main"):
    repo = make_repo(tmp_path / "app")
    commit(repo, {"app.py": "print('hi')\n", "out/summary.md": "# Summary\ndone\n"}, "add app",
           START + timedelta(minutes=15))  # fmt: skip
    path = transcript(tmp_path / "projects" / "-app" / f"{HOOK_ID}.jsonl", cwd=repo, task=TASK,
                      branch=branch)  # fmt: skip
    return repo, path


def _final(card) -> list[str]:
    return [e.text for e in card.timeline if "SYSTEM:" in e.text and "FINAL STATE" in e.text[:40]]


def test_the_hook_judges_with_the_final_state(tmp_path, clean_env):
    repo, path = _work(tmp_path)
    outcome = _job(path, clean_env).run()
    assert outcome.state == "scored", outcome.reason
    card = outcome.card
    head, changes, _app, summary = _final(card)
    assert head.startswith("#9 SYSTEM:\nFINAL STATE (observed by session-scorer")
    assert "git status: clean" in head
    assert "1 commit in the session; 2 files changed, +3 -0" in changes
    assert "deliverable out/summary.md (named by the task): exists, 15 bytes, 2 lines" in summary
    assert card.meta["final_state"]["read"] is True
    assert card.meta["final_state"]["events"] == [9, 12]
    assert card.session.n_events == 12
    with ScoreStore() as store:  # the stored timeline is the one the judge read
        stored = store.latest(HOOK_ID)
        assert stored is not None and stored.meta["final_state"]["events"] == [9, 12]
    # The user keeps working after the session: its work is unchanged, so it is not
    # judged (nor paid for) again, whatever the workspace looks like now.
    (repo / "app.py").write_text("print('changed later')\n")
    again = _job(path, clean_env).run()
    assert (again.state, again.reason) == ("unchanged", "unchanged since it was scored")


def test_turned_off_the_hook_reads_no_workspace(tmp_path, clean_env, monkeypatch):
    monkeypatch.setenv("SCORER_FINAL_STATE", "0")
    get_settings.cache_clear()
    _, path = _work(tmp_path)
    outcome = _job(path, clean_env).run()
    assert outcome.state == "scored" and _final(outcome.card) == []
    assert "final_state" not in outcome.card.meta


def test_another_repository_at_the_sessions_path_is_not_read(tmp_path, clean_env):
    _, path = _work(tmp_path, branch="feature/parser")  # the repository has only `main`
    outcome = _job(path, clean_env).run()
    assert outcome.state == "scored" and _final(outcome.card) == []
    assert outcome.card.meta["final_state"]["read"] is False
    assert (
        "none of the session's branches (feature/parser)"
        in outcome.card.meta["final_state"]["reason"]
    )
