"""How budgets plug into a `Runtime`: `CostExtension`, one of its default extensions.

It attaches an `AgentBudget` to every agent. Before each model call (the start
of a round) the budget compares what the agent has spent with its config's
`max_cost_usd` / `max_tokens_total`, and stops the run with `BudgetExceeded`
when the call would pass one. The turn loop prices each call (the dollars are
part of the usage it commits); this extension only reads the agent's state.
"""

from __future__ import annotations

from mentra_nb.messages import Message
from mentra_nb.runtime._extensions import AgentExtension, RuntimeExtension
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.runtime.cost._budget import check_budget
from mentra_nb.runtime.cost._config import CostConfig

__all__ = ["AgentBudget", "CostExtension"]


class AgentBudget(AgentExtension):
    """One agent's budget check, run before each of its model calls."""

    def __init__(self, agent: AgentHandle) -> None:
        self.agent = agent
        # The agent's prompt tokens so far when this run's previous round began:
        # one model call per round, so the difference is the last call's prompt.
        self._prompt_at_last_round: int | None = None

    async def before_round(self) -> list[Message]:
        agent = self.agent
        spent = agent.state.usage
        last_prompt = (None if self._prompt_at_last_round is None
                       else spent.prompt_tokens - self._prompt_at_last_round)
        self._prompt_at_last_round = spent.prompt_tokens
        check_budget(agent.name, agent.model.key, agent.config, spent, last_prompt)
        return []

    async def after_run(self, succeeded: bool) -> None:
        self._prompt_at_last_round = None  # the next run's first call has no predecessor


class CostExtension(RuntimeExtension):
    """Budgets for every agent (`AgentConfig.max_cost_usd`, `max_tokens_total`)."""

    config = CostConfig

    def attach(self, agent: AgentHandle) -> AgentExtension | None:
        return AgentBudget(agent)
