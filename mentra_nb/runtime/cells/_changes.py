"""The record of every cell change an agent made, kept in the store for undo.

Each change is one row of the agent's state (`cells.v1.change.<n>`), written once,
and a counter (`cells.v1.changes`) says how many there are: an append is two small
writes, never a rewrite of the whole record, and a kernel that died between the two
leaves a row the next change overwrites. The record survives restarts with the
agent's state file. (This is the whole of the cells feature's storage; it moves
onto the store's generic extension records when they exist.)
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mentra_nb.runtime.cells._workspace import CellKind
from mentra_nb.store.base import Store

__all__ = ["CellChange", "CellSide", "load_cell_changes", "record_cell_change"]

COUNT_KEY = "cells.v1.changes"
CHANGE_KEY = "cells.v1.change.{}"


class CellSide(BaseModel):
    """A cell's source and kind on one side of a change."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    source: str
    kind: CellKind


class CellChange(BaseModel):
    """One change of one cell: `before` None is an insert, `after` None a delete.

    `run_generation` and `message_index` (the agent's history length when the
    change was made) place it in the conversation, so an undo to a checkpoint
    reverts exactly the changes made after it; `after` tells whether the user
    changed the cell since."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    cell_id: str
    tool: str
    before: CellSide | None
    after: CellSide | None
    agent: str
    run_generation: int
    message_index: int
    at: float = Field(default_factory=time.time)


def record_cell_change(store: Store, agent_id: str, change: CellChange, *, token: str) -> int:
    """Append `change` to the agent's record; returns its number."""
    number = _count(store, agent_id)
    store.save_state(agent_id, CHANGE_KEY.format(number), change.model_dump(mode="json"), token=token)
    store.save_state(agent_id, COUNT_KEY, {"count": number + 1}, token=token)
    return number


def load_cell_changes(store: Store, agent_id: str) -> list[CellChange]:
    """The agent's cell changes, oldest first (a damaged row is skipped)."""
    changes = []
    for number in range(_count(store, agent_id)):
        raw = store.load_state(agent_id, CHANGE_KEY.format(number))
        try:
            changes.append(CellChange.model_validate(raw))
        except ValidationError:
            continue
    return changes


def _count(store: Store, agent_id: str) -> int:
    raw: Any = store.load_state(agent_id, COUNT_KEY)
    count = raw.get("count") if isinstance(raw, dict) else None
    return count if isinstance(count, int) and count >= 0 else 0
