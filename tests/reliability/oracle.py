"""What a state file must hold, read straight from SQLite (not through the store).

`read_agents` takes a read-only look at a file; `after_recovery` restates the
recovery matrix of design.md independently of `mentra_nb.runtime.recovery`, so
the crash suite checks the product against the spec, not against itself.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from mentra_nb import INTERRUPTED_TOOL_RESULT, Message, Role, ToolResultBlock

__all__ = ["StoredAgent", "after_recovery", "read_agents"]


@dataclass
class StoredAgent:
    id: str
    name: str
    kind: str
    status: dict
    message_count: int
    transcript: list[Message]
    raw: list[str]  # the JSON rows, byte for byte
    seqs: list[int]
    run: tuple[int, int, bool] | None  # generation, baseline, assistant_committed
    pending: dict | None
    resumable: Message | None = None
    problems: list[str] = field(default_factory=list)


def read_agents(db: Path) -> dict[str, StoredAgent]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        agents: dict[str, StoredAgent] = {}
        for agent_id, name, kind, status, count in conn.execute(
            "SELECT id, name, kind, status, message_count FROM agents ORDER BY created_at, rowid"
        ):
            rows = conn.execute(
                "SELECT seq, message FROM messages WHERE agent_id = ? ORDER BY seq", (agent_id,)
            ).fetchall()
            run = conn.execute(
                "SELECT generation, baseline, assistant_committed FROM runs WHERE agent_id = ?",
                (agent_id,),
            ).fetchone()
            pending = conn.execute(
                "SELECT turn FROM pending_turns WHERE agent_id = ?", (agent_id,)
            ).fetchone()
            resumable = conn.execute(
                "SELECT message FROM resumable_turns WHERE agent_id = ?", (agent_id,)
            ).fetchone()
            stored = StoredAgent(
                id=agent_id, name=name, kind=kind, status=json.loads(status), message_count=count,
                transcript=[], raw=[r[1] for r in rows], seqs=[r[0] for r in rows],
                run=(run[0], run[1], bool(run[2])) if run else None,
                pending=json.loads(pending[0]) if pending else None,
                resumable=Message.model_validate_json(resumable[0]) if resumable else None,
            )
            for seq, raw in rows:
                try:
                    stored.transcript.append(Message.model_validate_json(raw))
                except ValueError as err:
                    stored.problems.append(f"message {seq} of {name} is not a valid message: {err}")
            agents[name] = stored
        return agents
    finally:
        conn.close()


def after_recovery(agent: StoredAgent) -> tuple[list[Message], str, Message | None]:
    """(transcript, status name, resumable turn) the matrix demands once `agent` is loaded."""
    transcript = list(agent.transcript)
    if agent.run is None:
        return transcript, agent.status["name"], agent.resumable
    _generation, baseline, committed = agent.run
    if agent.pending is not None or not committed:
        opening = transcript[baseline] if baseline < len(transcript) else None
        resumable = opening if opening is not None and opening.role is Role.USER else None
        return transcript[:baseline], "interrupted", resumable
    for index in range(len(transcript) - 1, -1, -1):
        if transcript[index].role is Role.ASSISTANT:
            answered = {r.tool_use_id for m in transcript[index + 1 :] for r in m.tool_results}
            missing = [u.id for u in transcript[index].tool_uses if u.id not in answered]
            if missing:
                transcript.append(Message(role=Role.USER, content=[
                    ToolResultBlock(tool_use_id=i, content=INTERRUPTED_TOOL_RESULT, is_error=True)
                    for i in missing]))
            break
    return transcript, "interrupted", agent.resumable
