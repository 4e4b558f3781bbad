"""The offline heuristic judge: all six dimensions from objective signals alone.

It needs no key and costs nothing, and it is honest about what it is: every scorecard
says `judge="heuristic"`, so it can never pass for an LLM score. Its agreement with
execution-verified outcomes is measured in the README (`score-calibrate`).

Rules (version `HEURISTIC_VERSION`; change the version when a rule changes):

goal_achievement (failed / partial / complete / exceeded): the rules in
  `scorer.judge.heuristic_goal`, over the outcome signals (closing report, the last state of
  each check after the last edit, what happened to each path, URL, port and command the
  task names); `meta.goal_confidence` is the deciding rule's accuracy on the dev split
  and `meta.goal_rule` names the rule.
tool_efficiency (1-5): 5, minus 1 each for a tool error rate > 10 %, > 25 %, any
  repeated identical failing call, and blind retries > 5 % of calls; 3 with no tool calls.
process_adherence (1-5): 3, +1 when the final verification ran something (tests or
  the program, not just `ls`/`cat`), +1 when every edited file was read (or created)
  first, -1 when files were changed (edit calls, or the git diff for live sessions)
  and nothing checked the work after the last edit, -1 per user interruption (at most -2).
context_efficiency (1-5): 5, minus 1 each for a compaction, > 10 % of tool outputs
  over 20,000 chars, a file read 3+ times, and a cache-hit ratio below 50 % on sessions
  over 100k prompt tokens.
error_handling (poor / struggled / recovered / prevented): no tool or API errors →
  prevented; errors but none repeated and the session ended on a success → recovered;
  repeated identical failures or retries but ended on a success → struggled;
  otherwise (ended on a failure) → poor.
output_quality (1-5): from goal and verification: exceeded → 5, complete + passing
  tests after the last edit → 4, complete → 3, partial → 2, failed → 1; +1 (max 5) when the final
  message is substantive (≥ 200 chars) and the goal is at least partial.
recommendation: complete when goal is complete or exceeded; escalate when error handling is poor
  or an interruption happened with failed goal; retry when failed; else continue.
"""

from __future__ import annotations

import hashlib
import inspect
from collections import Counter
from datetime import UTC, datetime

from scorer._text import plural
from scorer._version import package_version
from scorer.judge.heuristic_goal import goal as goal_of
from scorer.judge.probability import (
    GoalModels,
    apply_probability,
    features,
    shipped_goal_models,
)
from scorer.judge.rubric import OVERALL, Rubric, default_rubric
from scorer.models import (
    DimensionScore,
    Event,
    EventKind,
    EvidenceRef,
    JudgeKind,
    Recommendation,
    Scorecard,
    Session,
    SourceKind,
)
from scorer.prepare.prepared import Prepared
from scorer.prepare.signals import Signals

HEURISTIC_VERSION = "heuristic-2026-11-28.1"
_BIG_OUTPUT = 20_000
_READ_TOOLS = {"Read", "NotebookRead"}
_EDIT_TOOLS = {"Edit", "MultiEdit", "NotebookEdit"}


def _rules_hash() -> str:
    source = inspect.getsource(inspect.getmodule(_rules_hash))  # type: ignore[arg-type]
    return hashlib.sha256(source.encode()).hexdigest()[:16]


class _Facts:
    """Derived facts the rules need beyond `Signals` (computed once per session)."""

    def __init__(self, session: Session, signals: Signals) -> None:
        events = [e for _, e in session.iter_events()]
        self.by_index = {e.index: e for e in events}
        calls = [e for e in events if e.kind == EventKind.TOOL_CALL]
        results = {e.tool_use_id: e for e in events if e.kind == EventKind.TOOL_RESULT}
        self.results = [e for e in events if e.kind == EventKind.TOOL_RESULT]
        self.last_call_failed = bool(
            calls and (r := results.get(calls[-1].tool_use_id)) is not None and _failed(r)
        )
        self.headless = session.source == SourceKind.STREAM_JSON
        # live (tmux) sessions have no assistant messages or edit calls: the terminal's
        # own signals and the git diff stand in for them
        self.terminal = (
            session.extra.get("terminal_signals") or {}
            if session.source in (SourceKind.TMUX, SourceKind.TERMINAL)
            else None
        )
        git = session.extra.get("git") or {}
        git_files = {f.get("path") for f in git.get("files") or []}
        for key in ("staged", "unstaged", "untracked"):
            git_files |= set(git.get(key) or [])
        self.files_changed = len(signals.files_written) or len(git_files - {None})
        self.last_result_event = next(
            (e for e in reversed(session.events) if e.kind == EventKind.RESULT), None
        )
        self.reads = Counter(_path(e) for e in calls if e.tool_name in _READ_TOOLS and _path(e))
        self.unread_edits = _unread_edits(calls)
        self.last_edit = max((e.index for e in calls if _path(e) and _is_write(e)), default=0)
        self.big_outputs = sum(len(r.text) > _BIG_OUTPUT for r in self.results)
        self.task = session.task_text
        self.created = _created(calls)
        self.final_text = (
            self.by_index[signals.final_message_event].text
            if signals.final_message_event in self.by_index
            else ""
        )


def _created(calls: list[Event]) -> list[str]:
    """Files whose first touch was a Write: new files the session created."""
    first: dict[str, str] = {}
    for call in calls:
        if (path := _path(call)) and path not in first:
            first[path] = call.tool_name or ""
    return [p for p, tool in first.items() if tool == "Write"]


def _path(event: Event) -> str | None:
    inp = event.tool_input or {}
    path = inp.get("file_path") or inp.get("notebook_path") or inp.get("path")
    return path if isinstance(path, str) else None


def _is_write(event: Event) -> bool:
    return event.tool_name in _EDIT_TOOLS or event.tool_name == "Write"


def _failed(result: Event) -> bool:
    return result.is_error or (result.exit_code is not None and result.exit_code != 0)


def _unread_edits(calls: list[Event]) -> list[int]:
    """Edits of files that were never read nor created before (blind edits)."""
    seen: set[str] = set()
    blind = []
    for call in calls:
        path = _path(call)
        if not path:
            continue
        if call.tool_name in _READ_TOOLS or call.tool_name == "Write":
            seen.add(path)
        elif call.tool_name in _EDIT_TOOLS and path not in seen:
            blind.append(call.index)
            seen.add(path)
    return blind


class HeuristicJudge:
    """Scores a session from its signals with the documented rules above."""

    kind: JudgeKind = "heuristic"
    model: str | None = None
    prompt_version = HEURISTIC_VERSION

    def __init__(
        self,
        rubric: Rubric | None = None,
        goal_models: GoalModels | None = None,
        *,
        probability: bool = True,
    ) -> None:
        self.rubric = rubric or default_rubric()
        self.goal_models = goal_models if goal_models is not None else shipped_goal_models()
        if not probability:  # the rules' own card (what the probability model is fitted on)
            self.goal_models = None

    def judge(self, prepared: Prepared) -> Scorecard:
        """Score a prepared session from its signals (the `Judge` protocol), with the goal
        probability of the fitted heuristic model (`judge.probability`)."""
        card = self._card(prepared)
        models = self.goal_models
        if models is None:
            return card
        p = models.heuristic.model.predict(features(card, prepared.signals))
        return apply_probability(card, p, models.heuristic, self.rubric, version=models.version)

    def _card(self, prepared: Prepared) -> Scorecard:
        session, signals, chunks = prepared.session, prepared.signals, prepared.chunks
        facts = _Facts(session, signals)
        goal = goal_of(signals, facts)
        handling = _error_handling(signals, facts)
        raw: dict[str, tuple[float | str, str, list[int]]] = {
            "goal_achievement": (goal.label, f"{goal.why} [rule {goal.rule}]", goal.refs),
            "tool_efficiency": _tool_efficiency(signals),
            "process_adherence": _process(signals, facts),
            "context_efficiency": _context(signals, facts),
            "error_handling": handling,
            "output_quality": _output_quality(signals, facts, goal.label),
        }
        scores = {name: self._score(name, *raw[name]) for name in raw}
        overall = self.rubric.overall({n: s.normalized for n, s in scores.items()})
        scores[OVERALL] = DimensionScore(
            name=OVERALL,
            value=overall,
            normalized=overall,
            rationale="weighted mean of the six normalised dimensions",
        )
        scores = self.rubric.ordered(scores)
        return Scorecard(
            session_id=session.session_id,
            source=session.source.value,
            judge="heuristic",
            model=None,
            prompt_version=HEURISTIC_VERSION,
            prompt_hash=_rules_hash(),
            rubric_version=self.rubric.version,
            rubric_hash=self.rubric.hash,
            package_version=package_version(),
            scores=scores,
            recommendation=_recommend(goal.label, str(handling[0]), signals),
            accomplishments=_accomplishments(signals),
            failures=_failures(signals),
            summary=_summary(signals, goal.label, facts.files_changed),
            n_chunks=len(chunks),
            created_at=datetime.now(UTC),
            meta={"goal_rule": goal.rule, "goal_confidence": goal.confidence},
        )

    def _score(self, name: str, value: float | str, why: str, refs: list[int]) -> DimensionScore:
        cfg = self.rubric.get(name)
        if cfg.data_type == "CATEGORICAL":
            label = str(value)
            numeric = float(cfg.category(label).value)
        else:
            label, numeric = None, float(value)
        return DimensionScore(
            name=name,
            value=numeric,
            label=label,
            normalized=self.rubric.normalize(name, numeric),
            rationale=why,
            evidence=[EvidenceRef(event=i) for i in dict.fromkeys(refs) if i][:8],
        )


def _clamp(value: int) -> int:
    return max(1, min(5, value))


def _tool_efficiency(s: Signals) -> tuple[int, str, list[int]]:
    if not s.tool_calls:
        return 3, "no tool calls to judge", []
    rate = s.tool_error_rate or 0.0
    penalties = [
        (rate > 0.10, f"tool error rate {rate:.0%} > 10%"),
        (rate > 0.25, "tool error rate > 25%"),
        (bool(s.repeated_failures), f"{len(s.repeated_failures)} repeated identical failing calls"),
        (len(s.retries) > 0.05 * s.tool_calls, f"{len(s.retries)} blind retries"),
    ]
    why = [text for hit, text in penalties if hit]
    refs = [e for r in s.repeated_failures for e in r.events] + s.retries + s.error_events
    return _clamp(5 - len(why)), "; ".join(why) or f"{s.tool_calls} calls, few errors", refs


def _process(s: Signals, f: _Facts) -> tuple[int, str, list[int]]:
    score, why, refs = 3, [], []
    fv = s.final_verification
    if fv.kind in ("test", "run"):
        score += 1
        why.append(f"checked after the last edit ({fv.kind}, {fv.status})")
        refs.append(fv.call_event or 0)
    if s.files_written and not f.unread_edits:
        score += 1
        why.append("read files before editing them")
    elif f.unread_edits:
        why.append(f"{plural(len(f.unread_edits), 'edit')} of unread files")
        refs += f.unread_edits
    if f.files_changed and fv.status == "missing":
        score -= 1
        why.append("changed files but checked nothing after the last edit")
        refs.append(fv.last_edit_event or 0)
    if s.interruptions:
        score -= min(2, len(s.interruptions))
        why.append(f"{len(s.interruptions)} user interruptions")
        refs += s.interruptions
    return _clamp(score), "; ".join(why) or "nothing notable", refs


def _context(s: Signals, f: _Facts) -> tuple[int, str, list[int]]:
    reread = [p for p, n in f.reads.items() if n >= 3]
    big_share = f.big_outputs / len(f.results) if f.results else 0.0
    ratio = s.cache_hit_ratio
    penalties = [
        (bool(s.compactions), plural(len(s.compactions), "compaction")),
        (big_share > 0.10, f"{f.big_outputs} tool outputs over {_BIG_OUTPUT:,} chars"),
        (bool(reread), f"{plural(len(reread), 'file')} read 3+ times"),
        (
            ratio is not None and ratio < 0.5 and s.usage.prompt_tokens > 100_000,
            "cache-hit ratio below 50%",
        ),
    ]
    why = [text for hit, text in penalties if hit]
    return _clamp(5 - len(why)), "; ".join(why) or "lean context use", s.compactions


def _error_handling(s: Signals, f: _Facts) -> tuple[str, str, list[int]]:
    refs = s.error_events
    if not s.error_events:
        return "prevented", "no tool or API errors", []
    ended_ok = not f.last_call_failed and s.claims_success is not False
    if s.last_test_run is not None:
        ended_ok = ended_ok and s.last_test_run.ok
    repeated = bool(s.repeated_failures or s.retries)
    if ended_ok and not repeated:
        return "recovered", f"{plural(len(s.error_events), 'error')}, each followed by a fix", refs
    if ended_ok:
        return "struggled", "recovered after repeated identical failures", refs
    return "poor", "the session ended on a failure", refs


def _output_quality(s: Signals, f: _Facts, goal: str) -> tuple[int, str, list[int]]:
    fv = s.final_verification
    verified = fv.kind == "test" and fv.status == "passed"
    base = {"exceeded": 5, "complete": 4 if verified else 3, "partial": 2, "failed": 1}[goal]
    why = f"goal {goal}{' and verified' if verified else ''}"
    if goal != "failed" and len(f.final_text) >= 200:
        base += 1
        why += "; substantive final report"
    return _clamp(base), why, [s.final_message_event or 0]


def _recommend(goal: str, handling: str, s: Signals) -> Recommendation:
    if goal in ("complete", "exceeded"):
        return "complete"
    if handling == "poor" or (goal == "failed" and s.interruptions):
        return "escalate"
    return "retry" if goal == "failed" else "continue"


def _accomplishments(s: Signals) -> list[str]:
    done = []
    if s.files_written:
        done.append(
            f"changed {plural(len(s.files_written), 'file')}: {', '.join(s.files_written[:5])}"
        )
    if s.last_test_run and s.last_test_run.ok:
        done.append(f"tests pass ({s.last_test_run.passed} passed)")
    return done


def _failures(s: Signals) -> list[str]:
    bad = [f"repeated failing call: {r.call[:120]}" for r in s.repeated_failures[:3]]
    if s.last_test_run and not s.last_test_run.ok:
        run = s.last_test_run
        bad.append(f"last test run failed ({run.failed} failed, {plural(run.errors, 'error')})")
    if s.api_errors:
        bad.append(plural(len(s.api_errors), "API error"))
    return bad


def _summary(s: Signals, goal: str, files_changed: int) -> str:
    return (
        f"Heuristic assessment (no model): goal {goal}; {plural(s.tool_calls, 'tool call')} "
        f"with {plural(s.tool_errors, 'error')}; {plural(len(s.test_runs), 'test run')}; "
        f"{plural(files_changed, 'file')} changed."
    )
