"""What an agent's stored state means after a crash (design.md, "Recovery matrix").

| crashed while                        | transcript after load                          | status      |
|--------------------------------------|------------------------------------------------|-------------|
| streaming (pending turn exists)      | rolled back to the run's start; the user       | interrupted |
|                                      | message kept for `agent.resume()`              |             |
| before the first assistant message   | rolled back to the run's start (same)          | interrupted |
| running a tool (assistant committed) | kept; every tool call without a result gets a  | interrupted |
|                                      | synthetic error result (a call that was        |             |
|                                      | waiting for approval says so)                  |             |
| idle / finished                      | unchanged                                      | as stored   |

Providers reject a tool call without a result, so unlike mentra we pair every
dangling call with an error result instead of leaving it for the next request.
"""

from __future__ import annotations

from typing import NamedTuple

from mentra_nb.errors import StoreError
from mentra_nb.messages import Message, Role, ToolResultBlock
from mentra_nb.runtime._approvals import (
    APPROVAL_INTERRUPTED_RESULT,
    APPROVALS_STATE_KEY,
    ApprovalState,
    load_approval_state,
)
from mentra_nb.status import AgentStatus
from mentra_nb.store.base import PersistedAgent, Store

__all__ = ["INTERRUPTED_TOOL_RESULT", "RecoveredRun", "recover", "recovered_run", "unanswered_tool_uses"]

INTERRUPTED_TOOL_RESULT = "interrupted: the kernel stopped before this tool finished"
"""The error result crash recovery gives a tool call that had no result when its process died."""


def unanswered_tool_uses(transcript: list[Message]) -> list[str]:
    """Ids of tool calls in the last assistant message that no later message answers."""
    for index in range(len(transcript) - 1, -1, -1):
        message = transcript[index]
        if message.role is Role.ASSISTANT:
            answered = {r.tool_use_id for m in transcript[index + 1 :] for r in m.tool_results}
            return [u.id for u in message.tool_uses if u.id not in answered]
    return []


class RecoveredRun(NamedTuple):
    """What the recovery matrix makes of a stored run: either a rollback to
    `baseline` (keeping `resumable` for `agent.resume()`), or the transcript kept
    with `results` (synthetic error results of the calls left without one) appended."""

    rolled_back: bool
    baseline: int
    resumable: Message | None
    results: Message | None


def recovered_run(persisted: PersistedAgent, approvals: ApprovalState) -> RecoveredRun | None:
    """The matrix's verdict on `persisted`'s run (None: no run). Writes nothing."""
    run = persisted.run
    if run is None:
        return None
    if persisted.pending_turn is not None or not run.assistant_committed:
        opening = persisted.transcript[run.baseline] if run.baseline < len(persisted.transcript) else None
        resumable = opening if opening is not None and opening.role is Role.USER else None
        return RecoveredRun(True, run.baseline, resumable, None)
    missing = unanswered_tool_uses(persisted.transcript)
    waited = {p.tool_use_id for p in approvals.pending if p.run_generation == run.generation}
    results = [
        ToolResultBlock(
            tool_use_id=tool_id,
            content=APPROVAL_INTERRUPTED_RESULT if tool_id in waited else INTERRUPTED_TOOL_RESULT,
            is_error=True,
        )
        for tool_id in missing
    ]
    return RecoveredRun(False, run.baseline, None,
                        Message(role=Role.USER, content=results) if results else None)


def recover(store: Store, persisted: PersistedAgent, *, token: str) -> PersistedAgent:
    """Apply the recovery matrix to one agent being loaded; returns its state after.

    Leaves an agent without a run untouched. Writes go through the agent's lease,
    so only the runtime opening the agent can fix it up.
    """
    agent_id = persisted.record.id
    approvals = load_approval_state(store, agent_id)
    verdict = recovered_run(persisted, approvals)
    if verdict is None:
        return persisted
    interrupted = AgentStatus.interrupted()
    if verdict.rolled_back:
        store.rollback_run(agent_id, status=interrupted, resumable=verdict.resumable, token=token)
    else:
        store.finish_run(agent_id, status=interrupted, token=token,
                         append=[verdict.results] if verdict.results else None)
    if approvals.pending:
        # After the results above: a crash in between leaves the record, and
        # the next load reads it again (it only matters while a run exists).
        store.save_state(agent_id, APPROVALS_STATE_KEY,
                         approvals.model_copy(update={"pending": []}).model_dump(mode="json"), token=token)
    reloaded = store.load_agent(agent_id)
    if reloaded is None:
        raise StoreError(f"agent {agent_id} disappeared from the store while it was recovered")
    return reloaded
