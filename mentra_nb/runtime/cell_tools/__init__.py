"""Cells: an agent that works in the notebook's real cells.

`NotebookWorkspace` is what a front end implements (the notebook layer does it
for JupyterLab 4 and Notebook 7); the registered `CellsExtension` offers the cell
tools to agents over the runtime's notebook; every change is recorded
(`load_cell_changes`) so undo can revert it (`revert_cell_changes`).

    rt = Runtime(..., notebook=workspace)
    rt.spawn("analyst", model, AgentConfig(cells=True, ask_to_edit_own_cells=False))
"""

from mentra_nb.runtime.cell_tools._changes import (
    CellChange,
    CellSide,
    load_cell_changes,
    record_cell_change,
)
from mentra_nb.runtime.cell_tools._tools import (
    CELL_TOOL_NAMES,
    CellsConfig,
    CellsExtension,
    cells_enabled,
)
from mentra_nb.runtime.cell_tools._undo import (
    CellsUndone,
    LeftAlone,
    cell_changes_after,
    changed_at,
    last_prompt,
    revert_cell_changes,
    rewind_with_cells,
)
from mentra_nb.runtime.cell_tools._workspace import (
    CellImage,
    CellKind,
    CellMark,
    CellOutput,
    CellRun,
    NotebookCell,
    NotebookWorkspace,
    WorkspaceUnavailable,
)

__all__ = [
    "CELL_TOOL_NAMES",
    "CellChange",
    "CellImage",
    "CellKind",
    "CellMark",
    "CellOutput",
    "CellRun",
    "CellSide",
    "CellsConfig",
    "CellsExtension",
    "CellsUndone",
    "LeftAlone",
    "NotebookCell",
    "NotebookWorkspace",
    "WorkspaceUnavailable",
    "cell_changes_after",
    "cells_enabled",
    "changed_at",
    "last_prompt",
    "load_cell_changes",
    "record_cell_change",
    "revert_cell_changes",
    "rewind_with_cells",
]
