"""What model calls cost: a dated price table, overridable by the user.

Prices are US dollars per million tokens. A call is priced when it ends, at the
table's prices then, and the dollars are kept with its usage (`Usage.cost_usd`),
so a later change of price never rewrites what was already spent. A model the
table does not know has an unknown cost (`None`, shown as "cost unknown"):
mentra-nb never guesses a price.

    import mentra_nb.pricing as pricing
    pricing.register("openrouter:anthropic/claude-sonnet-4.5", input=3, output=15)
    pricing.register("ollama:*", input=0, output=0)      # every model of a provider
    pricing.cost("anthropic:claude-sonnet-4-5", usage)   # dollars, or None
    pricing.format_cost(agent.usage.cost_usd)            # "$0.0123" or "cost unknown"

In a notebook, `%config MentraMagics.prices = {"ollama:*": {"input": 0, "output": 0}}`
does the same as `register`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mentra_nb.errors import ConfigError
from mentra_nb.messages import Usage
from mentra_nb.providers.registry import provider_traits

__all__ = [
    "BUILTIN_PRICES",
    "PRICES_CHECKED",
    "Price",
    "PriceTable",
    "cost",
    "format_cost",
    "price",
    "priced",
    "prices",
    "register",
    "unregister",
]

PER_MILLION = 1_000_000


class Price(BaseModel):
    """One model's prices in USD per million tokens.

    `cache_read` and `cache_write` default to the input price (a provider that
    does not charge them apart). Above `long_context_above` prompt tokens (cached
    or not) the whole call is billed at `long_context` instead, as Anthropic's
    1M-context Sonnet and Gemini 2.5 Pro bill long prompts.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    # Finite: an infinite price makes 0 tokens cost NaN, which no budget compares against.
    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    long_context_above: int | None = Field(default=None, gt=0)
    long_context: Price | None = None

    def cost(self, usage: Usage) -> float:
        """Dollars for one call's `usage` at these prices."""
        tier = self
        if self.long_context is not None and self.long_context_above is not None \
                and usage.prompt_tokens > self.long_context_above:
            tier = self.long_context
        read = tier.input if tier.cache_read is None else tier.cache_read
        write = tier.input if tier.cache_write is None else tier.cache_write
        return (usage.input_tokens * tier.input + usage.output_tokens * tier.output
                + usage.cache_read_tokens * read + usage.cache_creation_tokens * write) / PER_MILLION


def _p(input: float, output: float, cache_read: float | None = None, cache_write: float | None = None,
       **long: Any) -> dict[str, Any]:
    # Plain dicts: the Price models are built with the first table, so importing
    # the package (or loading the extension) builds no pydantic schema.
    return {"input": input, "output": output, "cache_read": cache_read,
            "cache_write": cache_write, **long}


# The built-in table: list prices of the standard tier (no batch discount), as the
# providers publish them, gathered on PRICES_CHECKED:
# - Anthropic: https://platform.claude.com/docs/en/about-claude/pricing ("Model
#   pricing": base input, 5-minute cache writes, cache hits, output; "Long context
#   pricing": Sonnet 4 / 4.5 over 200K input tokens) and the Haiku 4.5 model page.
#   mentra-nb asks for the default 5-minute cache, so `cache_write` is its price.
# - OpenAI: https://openai.com/api/pricing (input, cached input, output; cached
#   input is a tenth of input on the GPT-5 models, a quarter on GPT-4.1 and
#   o4-mini, half on GPT-4o). No cache-write charge: OpenAI caches on its own.
# - Google: https://ai.google.dev/gemini-api/docs/pricing (paid tier: input,
#   output, context caching of text, a tenth of input; Gemini 2.5 Pro's tier over
#   200K prompt tokens). Storage is charged only for explicit caches, never made here.
# OpenAI's and Google's pages could not be opened from where this was written:
# their rows come from dated articles quoting them (for OpenAI, where copies
# disagreed, the one that read the official page last, on 2026-11-05; for
# Google, one quoting the official page of March 2026). Check before billing.
# Models not listed (newer or older ones) have an unknown cost until registered:
# a price copied from memory would be a guess. Offline providers cost nothing.
PRICES_CHECKED = "2026-12-01"
"""The day the built-in prices were last read from the providers' price pages."""

_SONNET_4_LONG = _p(6.0, 22.50, cache_read=0.60, cache_write=7.50)
_GEMINI_25_PRO_LONG = _p(2.50, 15.0, cache_read=0.25)

BUILTIN_PRICES: dict[str, dict[str, Any]] = {
    # Anthropic
    "anthropic:claude-opus-4-5": _p(5.0, 25.0, cache_read=0.50, cache_write=6.25),
    "anthropic:claude-opus-4-1": _p(15.0, 75.0, cache_read=1.50, cache_write=18.75),
    "anthropic:claude-sonnet-4-5": _p(3.0, 15.0, cache_read=0.30, cache_write=3.75,
                                      long_context_above=200_000, long_context=_SONNET_4_LONG),
    "anthropic:claude-sonnet-4-0": _p(3.0, 15.0, cache_read=0.30, cache_write=3.75,
                                      long_context_above=200_000, long_context=_SONNET_4_LONG),
    # claude-sonnet-4-20250514, undated
    "anthropic:claude-sonnet-4": _p(3.0, 15.0, cache_read=0.30, cache_write=3.75,
                                    long_context_above=200_000, long_context=_SONNET_4_LONG),
    "anthropic:claude-haiku-4-5": _p(1.0, 5.0, cache_read=0.10, cache_write=1.25),
    # OpenAI (Responses; the Chat Completions provider `openai-chat` uses the same rows)
    "openai:gpt-5": _p(1.25, 10.0, cache_read=0.125),
    "openai:gpt-5-mini": _p(0.25, 2.0, cache_read=0.025),
    "openai:gpt-5-nano": _p(0.05, 0.40, cache_read=0.005),
    "openai:gpt-4.1": _p(2.0, 8.0, cache_read=0.50),
    "openai:gpt-4.1-mini": _p(0.40, 1.60, cache_read=0.10),
    "openai:gpt-4.1-nano": _p(0.10, 0.40, cache_read=0.025),
    "openai:gpt-4o": _p(2.50, 10.0, cache_read=1.25),
    "openai:gpt-4o-mini": _p(0.15, 0.60, cache_read=0.075),
    "openai:o4-mini": _p(1.10, 4.40, cache_read=0.275),
    # Google
    "gemini:gemini-2.5-pro": _p(1.25, 10.0, cache_read=0.125, long_context_above=200_000,
                                long_context=_GEMINI_25_PRO_LONG),
    "gemini:gemini-2.5-flash": _p(0.30, 2.50, cache_read=0.03),
    "gemini:gemini-2.5-flash-lite": _p(0.10, 0.40, cache_read=0.01),
    # Offline: the test model, the in-process llama.cpp model and replayed
    # recordings spend no money.
    "test:*": _p(0.0, 0.0),
    "local:*": _p(0.0, 0.0),
    "replay:*": _p(0.0, 0.0),
}
"""USD per million tokens for the built-in providers' models, as published on `PRICES_CHECKED`."""

# A dated snapshot costs what its alias costs: claude-sonnet-4-5-20250929,
# gpt-4.1-2025-04-14.
_DATED = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")


class PriceTable:
    """Prices by model key (`provider:model`, or `provider:*` for all of a provider's).

    Lookup tries the exact key, then the undated alias of a dated snapshot, then
    the provider's `*` row. A provider that serves another's models declares whose
    rows apply with its `price_key` (`openai-chat:` models use the `openai:` rows).
    """

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self._lock = threading.Lock()  # the notebook's loop thread reads while a cell registers
        self._prices: dict[str, Price] = (
            {k: Price.model_validate(v) for k, v in BUILTIN_PRICES.items()} if prices is None
            else dict(prices))

    def register(self, model: str, price: Price | Mapping[str, Any] | None = None, *,
                 input: float | None = None, output: float | None = None,
                 cache_read: float | None = None, cache_write: float | None = None) -> Price:
        """Set `model`'s price (replacing the built-in one); returns it."""
        if price is None:
            if input is None or output is None:
                raise ConfigError(f"pricing.register({model!r}) needs input= and output= "
                                  "(USD per million tokens), or a Price")
            price = {"input": input, "output": output, "cache_read": cache_read,
                     "cache_write": cache_write}
        try:
            value = price if isinstance(price, Price) else Price.model_validate(dict(price))
        except ValidationError as err:
            raise ConfigError(f"invalid price for {model!r}: {err.errors()[0]['msg']} "
                              f"({'.'.join(map(str, err.errors()[0]['loc']))}); prices are "
                              "non-negative USD per million tokens") from None
        provider, sep, model_id = model.partition(":")
        if not sep or not provider or not model_id:
            raise ConfigError(f"price key {model!r} is not 'provider:model' or 'provider:*'")
        with self._lock:
            self._prices[model] = value
        return value

    def unregister(self, model: str) -> None:
        """Forget the price registered for `model`; a built-in price applies again."""
        builtin = BUILTIN_PRICES.get(model)
        with self._lock:
            if builtin is None:
                self._prices.pop(model, None)
            else:
                self._prices[model] = Price.model_validate(builtin)

    def price(self, model: str) -> Price | None:
        provider, _, model_id = model.partition(":")
        traits = provider_traits(provider)
        with self._lock:
            for name in dict.fromkeys((provider, traits.price_key if traits else provider)):
                for candidate in (model_id, _DATED.sub("", model_id)):
                    found = self._prices.get(f"{name}:{candidate}")
                    if found is not None:
                        return found
            return self._prices.get(f"{provider}:*")

    def cost(self, model: str, usage: Usage) -> float | None:
        """Dollars for one call of `model`, or None when it has no price."""
        found = self.price(model)
        return None if found is None else found.cost(usage)

    def priced(self, model: str, usage: Usage) -> Usage:
        """`usage` of one call of `model`, with its `cost_usd` filled in (unknown, None,
        when its provider misreported it: clamped counts are not what was billed)."""
        cost = None if usage.misreported_calls else self.cost(model, usage)
        return usage.model_copy(update={"cost_usd": cost})

    def items(self) -> dict[str, Price]:
        with self._lock:
            return dict(self._prices)


_TABLE: PriceTable | None = None
_TABLE_LOCK = threading.Lock()


def prices() -> PriceTable:
    """The price table the runtime uses (the built-in one plus `register`ed prices)."""
    global _TABLE
    if _TABLE is None:
        with _TABLE_LOCK:
            if _TABLE is None:
                _TABLE = PriceTable()
    return _TABLE


def register(model: str, price: Price | Mapping[str, Any] | None = None, *,
             input: float | None = None, output: float | None = None,
             cache_read: float | None = None, cache_write: float | None = None) -> Price:
    """Set a model's price in USD per million tokens; `provider:*` prices a whole provider.

        pricing.register("openai:gpt-5.1", input=1.25, output=10, cache_read=0.125)
    """
    return prices().register(model, price, input=input, output=output, cache_read=cache_read,
                           cache_write=cache_write)


def unregister(model: str) -> None:
    """Forget a price registered for `model` (or `provider:*`); the built-in price applies again."""
    prices().unregister(model)


def price(model: str) -> Price | None:
    """The price `model` is charged at (a registered one first, then the built-in table), or None.
    """
    return prices().price(model)


def cost(model: str, usage: Usage) -> float | None:
    """What `usage` of `model` costs in USD, or None when the price or the usage is unknown."""
    return prices().cost(model, usage)


def priced(model: str, usage: Usage) -> Usage:
    """`usage` with its `cost_usd` filled in from `model`'s price."""
    return prices().priced(model, usage)


def format_cost(cost_usd: float | None) -> str:
    """"$0.0123", or "cost unknown" when some call had no price."""
    if cost_usd is None:
        return "cost unknown"
    if cost_usd == 0:
        return "$0"
    return f"${cost_usd:.4f}" if cost_usd < 1 else f"${cost_usd:,.2f}"
