"""Budgets: whether an agent's next model call may start (`AgentConfig.max_cost_usd`,
`max_tokens_total`).

The check runs at each round boundary, before the call. A call's size is only
known after it, so the check compares the budget with what is certain: what the
agent has spent, plus the least the next call can cost. The next prompt re-sends
the last one (the transcript only grows), so it has at least the last call's
prompt tokens, and they cost at least the cheapest input price (a cache read).
One call can still end past the budget by what it adds; the run then stops
before the one after.
"""

from __future__ import annotations

from mentra_nb import pricing
from mentra_nb.errors import BudgetExceeded
from mentra_nb.messages import Usage
from mentra_nb.runtime._config import AgentConfig
from mentra_nb.runtime.cost._config import CostConfig

__all__ = ["check_budget"]

_HOW_TO_CONTINUE = ("its work so far is kept. Raise the budget (agent.configure({field}=...)) "
                    "and call agent.resume() to continue.")


def check_budget(name: str, model: str, config: AgentConfig, spent: Usage,
                 last_prompt: int | None) -> None:
    """Raise `BudgetExceeded` if the next call of `model` would pass a budget;
    `last_prompt` is the prompt tokens of the run's last call (None before its first)."""
    next_prompt = last_prompt or 0
    limits = CostConfig.of(config)
    budgets = [f"AgentConfig.{field}" for field in ("max_cost_usd", "max_tokens_total")
               if getattr(limits, field) is not None]
    if spent.misreported_calls and budgets:
        # Clamped counts are a guess: the agent may have spent anything, so no
        # budget can say the next call fits.
        raise BudgetExceeded(
            f"agent '{name}' stopped: {spent.misreported_calls} of its model calls had an impossible "
            "usage report from the server (negative, non-numeric or absurd token counts), so what it "
            f"spent is unknown and its budget ({', '.join(budgets)}) cannot be checked; its work so "
            "far is kept. Check the server (or the proxy in front of it); to go on without the budget, "
            "agent.configure(" + ", ".join(f"{b.split('.')[1]}=None" for b in budgets)
            + ") and call agent.resume()")
    limit = limits.max_tokens_total
    if limit is not None:
        least = spent.total_tokens + next_prompt
        if spent.total_tokens >= limit or (next_prompt and least > limit):
            raise BudgetExceeded(
                f"agent '{name}' stopped: it has used {spent.total_tokens:,} tokens and its next "
                f"model call would use at least {next_prompt:,} more, past its budget of "
                f"{limit:,} (AgentConfig.max_tokens_total); "
                + _HOW_TO_CONTINUE.format(field="max_tokens_total"))
    budget = limits.max_cost_usd
    if budget is None:
        return
    price = pricing.price(model)
    if spent.cost_usd is None or price is None:
        raise BudgetExceeded(
            f"agent '{name}' has a cost budget (AgentConfig.max_cost_usd={budget:g}) but "
            f"{'model ' + repr(model) + ' has no price' if price is None else 'part of its spending has no price'}"
            ", so the budget cannot be checked; register a price with "
            "mentra_nb.pricing.register(...) or remove max_cost_usd, then call agent.resume()")
    least_cost = price.cost(Usage(cache_read_tokens=next_prompt)) if next_prompt else 0.0
    if spent.cost_usd >= budget or (next_prompt and spent.cost_usd + least_cost > budget):
        raise BudgetExceeded(
            f"agent '{name}' stopped: it has spent {pricing.format_cost(spent.cost_usd)} and its "
            f"next model call would cost at least {pricing.format_cost(least_cost)}, past its budget of "
            f"${budget:g} (AgentConfig.max_cost_usd); " + _HOW_TO_CONTINUE.format(field="max_cost_usd"))
