"""Where a run is assembled: the settings read once, process-wide caches pointed at them."""

from __future__ import annotations

from scorer.prepare.tokens import use_cache_dir
from scorer.settings import Settings, get_settings


def run_settings() -> Settings:
    """The process's settings for a command or job entry point.

    Also points the tokenizer's table cache at `SCORER_CACHE_DIR`, so nothing below reads
    the environment.

    Raises:
        ConfigError: An environment variable has a bad value.
    """
    settings = get_settings()
    use_cache_dir(settings.cache_dir)
    return settings
