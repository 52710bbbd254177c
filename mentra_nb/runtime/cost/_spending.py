"""What an agent and everything it started have spent: `spending(agent)`.

A lead's teammates and an agent's subagents are agents of their own, each with
its usage in the store; their records point at whoever started them
(`parent_id`). The sums are read from the records, so an agent's tree costs the
same whether its members are live, stored or revived after a restart.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.messages import Usage
from mentra_nb.runtime._services import AgentHandle
from mentra_nb.store.base import AgentRecord

__all__ = ["Spending", "spending", "spending_from_records"]


class Spending(BaseModel):
    """An agent's usage, its team's and its subagent tree's. `total.cost_usd` is
    None when any of them includes a call without a price."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    agent: Usage = Field(default_factory=Usage)
    team: Usage = Field(default_factory=Usage)  # its teammates and what they started
    subagents: Usage = Field(default_factory=Usage)  # its subagent tree
    members: int = 0  # how many agents besides this one are summed

    @property
    def total(self) -> Usage:
        return self.agent + self.team + self.subagents


def spending_from_records(records: Iterable[AgentRecord], agent_id: str) -> Spending:
    """Sum `agent_id`'s own usage and its descendants' from store records."""
    by_id = {r.id: r for r in records}
    children: dict[str, list[AgentRecord]] = {}
    for record in by_id.values():
        if record.parent_id is not None:
            children.setdefault(record.parent_id, []).append(record)

    def subtree(record: AgentRecord) -> tuple[Usage, int]:
        usage, count, stack, seen = Usage(), 0, [record], {record.id}
        while stack:
            current = stack.pop()
            usage, count = usage + current.usage, count + 1
            for child in children.get(current.id, []):
                if child.id not in seen:  # a corrupt file's cycle must not loop forever
                    seen.add(child.id)
                    stack.append(child)
        return usage, count

    own = by_id.get(agent_id)
    team, subagents, members = Usage(), Usage(), 0
    for child in children.get(agent_id, []):
        usage, count = subtree(child)
        members += count
        if child.kind == "teammate":
            team += usage
        else:
            subagents += usage
    return Spending(agent=own.usage if own is not None else Usage(), team=team,
                    subagents=subagents, members=members)


def spending(agent: AgentHandle) -> Spending:
    """What `agent`, its teammates and its subagents have spent (one store read).

        total = spending(lead).total
        print(pricing.format_cost(total.cost_usd), total.total_tokens, "tokens")
    """
    return spending_from_records(agent.services.store.list_agents(), agent.id)
