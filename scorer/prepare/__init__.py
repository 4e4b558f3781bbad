"""The pure middle of the pipeline: render a session, compute signals, chunk for the judge."""

from scorer.prepare.chunk import chunk_events, chunk_session
from scorer.prepare.prepared import Prepared, PrepOptions, prepare, rechunk
from scorer.prepare.render import (
    DEFAULT_MAX_OUTPUT_CHARS,
    RenderedEvent,
    cut_middle,
    render_events,
    render_header,
    render_timeline,
    tool_call_line,
)
from scorer.prepare.requirements import Requirement, parse_requirements, requirement_coverage
from scorer.prepare.signals import (
    RepeatedFailure,
    Signals,
    TestRun,
    caveats,
    claims_success,
    compute_signals,
    looks_like_test_command,
    parse_test_output,
)
from scorer.prepare.signals_block import signals_block
from scorer.prepare.tokens import TokenCounter
from scorer.prepare.verification import FinalVerification, final_verification

__all__ = [
    "DEFAULT_MAX_OUTPUT_CHARS",
    "FinalVerification",
    "PrepOptions",
    "Prepared",
    "RenderedEvent",
    "RepeatedFailure",
    "Requirement",
    "Signals",
    "TestRun",
    "TokenCounter",
    "caveats",
    "chunk_events",
    "chunk_session",
    "claims_success",
    "compute_signals",
    "cut_middle",
    "final_verification",
    "looks_like_test_command",
    "parse_requirements",
    "parse_test_output",
    "prepare",
    "rechunk",
    "render_events",
    "render_header",
    "render_timeline",
    "requirement_coverage",
    "signals_block",
    "tool_call_line",
]
