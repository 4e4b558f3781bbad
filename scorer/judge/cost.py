"""What a judge call costs: a price table (USD per million tokens) and the arithmetic.

Cache writes (5-minute TTL) cost 1.25× the input price unless a model says otherwise;
Message Batches halve every price. Unknown models are priced like the default model and the
result is flagged as an estimate (`Pricing.is_estimated`).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scorer.errors import ConfigError
from scorer.models import JudgeUsage
from scorer.settings import DEFAULT_MODEL

_PER_TOKEN = 1 / 1_000_000


class ModelPrice(BaseModel):
    """USD per million tokens for one model."""

    model_config = ConfigDict(extra="forbid")

    input: float
    output: float
    cache_read: float
    cache_write: float | None = None
    """Defaults to `Pricing.cache_write_multiplier` × input."""


def _default_models() -> dict[str, ModelPrice]:
    return {
        "claude-sonnet-5-5": ModelPrice(input=2.0, output=10.0, cache_read=0.20),
        "claude-sonnet-5": ModelPrice(input=2.0, output=10.0, cache_read=0.20),
        # The default fallback model (`SCORER_FALLBACK_MODEL`): a refused request retried
        # there is billed at its own prices, not Sonnet 5.5's.
        "claude-sonnet-4-6": ModelPrice(input=3.0, output=15.0, cache_read=0.30),
        "claude-sonnet-4-5": ModelPrice(input=3.0, output=15.0, cache_read=0.30),
    }


class Pricing(BaseModel):
    """The price table; override it (e.g. from a TOML file) when prices change."""

    model_config = ConfigDict(extra="forbid")

    models: dict[str, ModelPrice] = Field(default_factory=_default_models)
    fallback_model: str = DEFAULT_MODEL
    """Whose prices an unknown model gets (and the cost is marked estimated)."""
    cache_write_multiplier: float = 1.25
    batch_multiplier: float = 0.5

    def _lookup(self, model: str) -> ModelPrice | None:
        if model in self.models:
            return self.models[model]
        # Dated snapshots (`claude-sonnet-5-5-20261001`) share their alias's price.
        for name in sorted(self.models, key=len, reverse=True):
            if model.startswith(name + "-"):
                return self.models[name]
        return None

    def is_estimated(self, model: str) -> bool:
        """True when `model` is not in the table and fallback prices are used."""
        return self._lookup(model) is None

    def price(self, model: str) -> ModelPrice:
        """The model's prices, or the fallback model's when it is unknown."""
        return self._lookup(model) or self.models[self.fallback_model]

    def cost_usd(self, usage: JudgeUsage, model: str, *, batch: bool = False) -> float:
        """USD for `usage` on `model` (Message Batches when `batch`), rounded to 1e-6."""
        p = self.price(model)
        cache_write = (
            p.cache_write if p.cache_write is not None else p.input * self.cache_write_multiplier
        )
        total = (
            usage.input_tokens * p.input
            + usage.output_tokens * p.output
            + usage.cache_read_tokens * p.cache_read
            + usage.cache_write_tokens * cache_write
        ) * _PER_TOKEN
        if batch:
            total *= self.batch_multiplier
        return round(total, 6)


def cost_usd(
    usage: JudgeUsage, model: str, batch: bool = False, pricing: Pricing | None = None
) -> float:
    """USD for `usage` on `model` with the default (or given) price table.

    Args:
        usage: Token counts summed over the calls (input excludes cache reads/writes).
        model: Model id; unknown ids use the fallback model's prices.
        batch: Priced as Message Batches (-50%).
        pricing: Price table; defaults to the built-in prices.
    """
    return (pricing or Pricing()).cost_usd(usage, model, batch=batch)


def load_pricing(path: Path | None = None) -> Pricing:
    """The price table from the TOML file `path` (`SCORER_PRICES`), else the defaults.

    The file has the `Pricing` fields, e.g.::

        batch_multiplier = 0.5
        [models.claude-sonnet-5-5]
        input = 2.0
        output = 10.0
        cache_read = 0.2

    Models listed in the file are added to (or replace) the built-in entries.
    """
    if path is None:
        return Pricing()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        models = {**_default_models(), **Pricing(**data).models}
        return Pricing(**{**data, "models": models})
    except (OSError, tomllib.TOMLDecodeError, ValidationError, TypeError) as e:
        raise ConfigError(f"invalid price table {path}: {' '.join(str(e).split())[:200]}") from e
