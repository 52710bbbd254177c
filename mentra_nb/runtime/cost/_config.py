"""What budgets add to `AgentConfig`: `max_cost_usd` and `max_tokens_total`."""

from __future__ import annotations

from pydantic import Field

from mentra_nb.runtime._extension_fields import ExtensionFields

__all__ = ["CostConfig"]


class CostConfig(ExtensionFields):
    """Budgets bound what the agent spends over its life (every run, not each):
    `max_cost_usd` in dollars at the price table's prices, `max_tokens_total` in
    tokens (prompt, cached or not, plus output). A run stops at the round boundary
    once its next model call would pass either, with `BudgetExceeded`; its work is
    kept, and `agent.resume()` continues after `agent.configure(...)` raises the
    budget. A cost budget on a model without a price stops the run before its
    first call: an unknown cost cannot be checked."""

    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens_total: int | None = Field(default=None, gt=0)
