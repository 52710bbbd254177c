"""Undo of an agent's cell changes: the changes recorded after a checkpoint,
reverted newest first through the same `NotebookWorkspace` the tools used.

An inserted cell is deleted, an edited one gets its text before the edit back,
a deleted one is inserted again below the cell that was above it. A cell whose
text (or kind) is not what the agent left — the user changed it since — is left
alone and named, as is a cell that is gone; so are the agent's earlier changes
of that cell, which would undo the user's work too.

What was reverted is itself recorded (kind `cells.undos`, in the agent's scope,
under its lease), so a second undo does not revert it again nor report it as
changed by the user. Reverting is the notebook's half of an undo; the
conversation's half is the time-travel rewind (`agent.rewind`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.messages import Role
from mentra_nb.runtime.cell_tools._changes import CELL_CHANGES, CellChange
from mentra_nb.runtime.cell_tools._tools import CellsExtension
from mentra_nb.runtime.cell_tools._workspace import (
    CellMark,
    NotebookCell,
    NotebookWorkspace,
    WorkspaceUnavailable,
)
from mentra_nb.store.records import Record, RecordKind, RecordStore

if TYPE_CHECKING:
    from mentra_nb.runtime._agent import Agent

__all__ = ["CELL_UNDOS", "CellUndo", "CellsUndone", "LeftAlone", "cell_changes_after", "changed_at",
           "last_prompt", "revert_cell_changes", "rewind_with_cells"]


class CellUndo(BaseModel):
    """One undo: the record numbers (`cells.changes`) of the changes it reverted."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    reverted: list[int]


CELL_UNDOS = RecordKind("cells.undos", CellUndo)


class LeftAlone(BaseModel):
    """A cell undo did not touch, and why ("changed" by the user since, or "gone")."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    cell_id: str
    why: str


class CellsUndone(BaseModel):
    """What an undo did to the notebook. `unavailable` says why it could not reach
    the notebook (then nothing was reverted and `pending` changes wait)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    deleted: list[str] = Field(default_factory=list)  # cells the agent had inserted
    restored: list[str] = Field(default_factory=list)  # cells the agent had edited
    reinserted: list[str] = Field(default_factory=list)  # new ids of cells the agent had deleted
    left_alone: list[LeftAlone] = Field(default_factory=list)
    pending: int = 0
    unavailable: str | None = None

    @property
    def reverted(self) -> int:
        return len(self.deleted) + len(self.restored) + len(self.reinserted)

    def summary(self) -> str:
        """One line for the user: what was reverted, what was left alone and why."""
        if self.unavailable is not None:
            return (f"{self.pending} cell change(s) were not reverted: {self.unavailable}" if self.pending
                    else "no cell changes to revert")
        parts = [f"{what} {', '.join(ids)}" for what, ids in (
            ("deleted the cells it inserted:", self.deleted), ("restored:", self.restored),
            ("put back the cells it deleted (new ids):", self.reinserted)) if ids]
        changed = [c.cell_id for c in self.left_alone if c.why == "changed"]
        gone = [c.cell_id for c in self.left_alone if c.why == "gone"]
        if changed:
            parts.append(f"left alone, changed by you since: {', '.join(changed)}")
        if gone:
            parts.append(f"left alone, no longer in the notebook: {', '.join(gone)}")
        return "; ".join(parts) if parts else "no cell changes to revert"


def _not_undone(store: RecordStore, agent_id: str, after_message: int) -> list[Record[CellChange]]:
    undone = {seq for record in CELL_UNDOS.list(store, agent_id) for seq in record.value.reverted}
    return [r for r in CELL_CHANGES.list(store, agent_id)
            if r.value.message_index > after_message and r.seq not in undone]


def cell_changes_after(store: RecordStore, agent_id: str, after_message: int) -> int:
    """How many of the agent's cell changes made after its first `after_message`
    messages no undo has reverted (what `revert_cell_changes` would revert)."""
    return len(_not_undone(store, agent_id, after_message))


def changed_at(store: RecordStore, agent_id: str) -> list[int]:
    """Where in the conversation the agent's cell changes that no undo reverted
    were made: their distinct `message_index`es, ascending. The conversation's view
    offers Undo on the turns they fall in."""
    return sorted({r.value.message_index for r in _not_undone(store, agent_id, -1)})


def _agent_left(cell: NotebookCell, change: CellChange) -> bool:
    after = change.after
    return after is not None and cell.source == after.source and cell.kind == after.kind


async def revert_cell_changes(store: RecordStore, agent_id: str, workspace: NotebookWorkspace | None,
                              after_message: int, mark: CellMark, *, token: str) -> CellsUndone:
    """Revert the agent's cell changes made after its first `after_message` messages
    (a change made while it had `message_index` messages came from a tool call in
    message `message_index - 1`), newest first, that no undo reverted yet.
    `mark` marks the cells undo edits or puts back."""
    todo = _not_undone(store, agent_id, after_message)
    if not todo:
        return CellsUndone()
    reason = "no notebook front end can edit cells here" if workspace is None else workspace.unavailable()
    if workspace is None or reason is not None:
        return CellsUndone(pending=len(todo), unavailable=reason)
    result = CellsUndone()
    reverted: list[int] = []
    renamed: dict[str, str] = {}  # a deleted cell's recorded id -> its id once put back
    left: dict[str, str] = {}  # cell id -> why it is left alone
    try:
        cells = {cell.id: cell for cell in await workspace.cells()}
        for record in reversed(todo):
            change = record.value
            if change.cell_id in left:
                continue
            cell_id = renamed.get(change.cell_id, change.cell_id)
            if change.after is None:  # a delete: put it back below the cell that was above it
                assert change.before is not None
                above = renamed.get(change.previous, change.previous) if change.previous else None
                back = await workspace.insert(above if above in cells else None, change.before.source,
                                              change.before.kind, mark)
                cells[back.id] = back
                renamed[change.cell_id] = back.id
                result.reinserted.append(back.id)
            elif (current := cells.get(cell_id)) is None or not _agent_left(current, change):
                left[change.cell_id] = "gone" if current is None else "changed"
                continue
            elif change.before is None:  # an insert
                await workspace.delete(cell_id)
                del cells[cell_id]
                result.deleted.append(cell_id)
            else:  # an edit
                cells[cell_id] = await workspace.replace_source(cell_id, change.before.source, mark)
                result.restored.append(cell_id)
            reverted.append(record.seq)
    except WorkspaceUnavailable as err:
        result = result.model_copy(update={"pending": len(todo) - len(reverted) - len(left),
                                           "unavailable": str(err)})
    finally:
        if reverted:
            CELL_UNDOS.append(store, agent_id, CellUndo(reverted=reverted), agent_id=agent_id, token=token)
    # A cell edited twice and then deleted is restored once and deleted once: name it once.
    restored = [c for c in dict.fromkeys(result.restored) if c not in result.deleted]
    return result.model_copy(update={
        "restored": restored,
        "left_alone": [LeftAlone(cell_id=c, why=why) for c, why in left.items()]})


def last_prompt(agent: Agent) -> int:
    """The index of the agent's last message from the user (not a tool result):
    rewinding to it undoes the last turn. 0 when there is none."""
    history = agent.history
    return next((i for i in range(len(history) - 1, -1, -1)
                 if history[i].role is Role.USER and not history[i].tool_results), 0)


async def rewind_with_cells(agent: Agent, to: int) -> CellsUndone:
    """`agent.rewind(to)`, and its cell changes made after message `to` reverted
    through the runtime's notebook (`Runtime(notebook=...)`). The rewind comes
    first: it refuses a running agent or a bad index before any cell is touched.
    Where no notebook can edit cells, the conversation is rewound all the same
    and the answer says why the cells were not."""
    agent.rewind(to)
    extension = agent.services.extension(CellsExtension)
    services = agent.services
    return await revert_cell_changes(services.store, agent.id, extension.workspace if extension else None, to,
                                     CellMark(agent=agent.name, run=agent.state.run_generation),
                                     token=services.token)
