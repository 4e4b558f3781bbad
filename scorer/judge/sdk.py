"""The Anthropic SDK, imported once per process with the cyclic collector paused.

`import anthropic` defines ~1,400 pydantic models. With the collector on, that burst of
allocations sets off collections that walk the growing heap again and again: about
90 ms of the import's 0.75 s here. Nothing is frozen (a library must not make its
caller's objects immortal); the CLI freezes everything only as it exits.

Every module of ours that uses the SDK imports it from here, so whichever comes first
pays the import this way.
"""

from __future__ import annotations

from scorer._gc import gc_paused

with gc_paused():
    import anthropic
    from anthropic import transform_schema

__all__ = ["anthropic", "transform_schema"]
