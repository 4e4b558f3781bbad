"""Automatic scoring of ended sessions: what `scorer hook` and the Claude Code plugin run.

`request` (the hook payload) → `policy` (the `SCORER_HOOK_*` knobs) → `detach` (the
background worker) → `worker` (`HookJob`: claim in the `ledger`, judge, publish), with
`log` as the only output. docs/plugin.md describes it for users.
"""

from scorer.jobs.hook.policy import HookPolicy
from scorer.jobs.hook.request import HookRequest, PayloadError, parse_payload

__all__ = ["HookPolicy", "HookRequest", "PayloadError", "parse_payload"]
