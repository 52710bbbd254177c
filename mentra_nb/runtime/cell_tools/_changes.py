"""The record of every cell change an agent made, kept in the store for undo.

Each change is one record of kind `cells.changes` in the agent's scope (the
store's extension records: mentra_nb/store/records.py), appended under the
agent's lease and deleted with the agent; the store numbers them in order. The
record survives restarts with the agent's state file.
"""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.runtime.cell_tools._workspace import CellKind
from mentra_nb.store.records import RecordKind, RecordStore

__all__ = ["CELL_CHANGES", "CellChange", "CellSide", "load_cell_changes", "record_cell_change"]


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
    changed the cell since. `previous` is, for a delete, the id of the cell that
    was just above it (None: it was the first), so undo puts it back there."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    cell_id: str
    tool: str
    before: CellSide | None
    after: CellSide | None
    agent: str
    run_generation: int
    message_index: int
    previous: str | None = None
    at: float = Field(default_factory=time.time)


CELL_CHANGES = RecordKind("cells.changes", CellChange)


def record_cell_change(store: RecordStore, agent_id: str, change: CellChange, *, token: str) -> int:
    """Append `change` to the agent's record (fenced by its lease); returns its number."""
    return CELL_CHANGES.append(store, agent_id, change, agent_id=agent_id, token=token).seq


def load_cell_changes(store: RecordStore, agent_id: str) -> list[CellChange]:
    """The agent's cell changes, oldest first."""
    return [record.value for record in CELL_CHANGES.list(store, agent_id)]
