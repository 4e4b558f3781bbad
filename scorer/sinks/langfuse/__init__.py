"""The Langfuse sink: score configs, score pushes and the "already scored" read-back."""

from scorer.sinks.langfuse.configs import (
    SyncReport,
    config_drift,
    config_ids,
    desired_fields,
    list_configs,
    project_id,
    sync_configs,
)
from scorer.sinks.langfuse.push import (
    PushResult,
    attribute_errors,
    build_score_requests,
    first_trace_id,
    is_transient,
    push_scorecard,
    score_id,
    score_metadata,
)
from scorer.sinks.langfuse.scored import langfuse_has_scores
from scorer.sinks.langfuse.sink import LangfuseSink, push_problem

__all__ = [
    "LangfuseSink",
    "PushResult",
    "SyncReport",
    "attribute_errors",
    "build_score_requests",
    "config_drift",
    "config_ids",
    "desired_fields",
    "first_trace_id",
    "is_transient",
    "langfuse_has_scores",
    "list_configs",
    "project_id",
    "push_problem",
    "push_scorecard",
    "score_id",
    "score_metadata",
    "sync_configs",
]
