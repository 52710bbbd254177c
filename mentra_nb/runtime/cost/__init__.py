"""Cost: what agents spent and the budgets that bound it.

    from mentra_nb.runtime import cost
    spent = cost.spending(lead)          # own calls, team, subagent tree
    print(mentra_nb.pricing.format_cost(spent.total.cost_usd))

A package shaped like `teams` and `subagents`: free functions taking the agent
(`_spending`), the extension that enforces budgets before each model call
(`_extension`, one of `default_extensions()`), and the check itself (`_budget`).
Calls are priced by the turn loop with `mentra_nb.pricing`, so the dollars are
part of each committed usage.
"""

from mentra_nb.runtime.cost._budget import check_budget
from mentra_nb.runtime.cost._config import CostConfig
from mentra_nb.runtime.cost._extension import AgentBudget, CostExtension
from mentra_nb.runtime.cost._spending import Spending, spending, spending_from_records

__all__ = [
    "AgentBudget",
    "CostConfig",
    "CostExtension",
    "Spending",
    "check_budget",
    "spending",
    "spending_from_records",
]
