"""What an agent's cell tools need of a notebook: the `NotebookWorkspace` protocol
and the models that cross it.

The runtime knows no notebook: a front end that can read, change and run the
notebook's cells implements `NotebookWorkspace` (mentra_nb/notebook/_cell_bridge.py
does it over a widget comm to JupyterLab or Notebook 7), and the cell tools
(`_tools.py`) speak only to this protocol.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CellImage", "CellKind", "CellMark", "CellOutput", "CellRun", "NotebookCell",
           "NotebookWorkspace", "WorkspaceUnavailable"]

CellKind = Literal["code", "markdown", "raw"]
"""A cell's kind, as nbformat names it."""


class WorkspaceUnavailable(Exception):
    """The front end did not do what was asked (gone, too slow, or it refused);
    the message says why, for the model."""


class CellMark(BaseModel):
    """Who last changed or ran a cell: kept in the cell's metadata (`mentra`) and
    shown as a badge on it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    agent: str
    run: int


class CellImage(BaseModel):
    """An image a cell shows: its type, and its base64 data when it was asked for
    (a run's result), else None (a read says only that it is there)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    mime: str
    data: str | None = None


class CellOutput(BaseModel):
    """One output of a code cell, as the model reads it."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: Literal["stream", "result", "display", "error"]
    text: str = ""  # printed text, text/plain of a value, or "Name: value" and the traceback
    images: list[CellImage] = Field(default_factory=list)


class NotebookCell(BaseModel):
    """A cell of the live notebook (unsaved edits included)."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    id: str
    kind: CellKind
    source: str
    execution_count: int | None = None
    outputs: list[CellOutput] = Field(default_factory=list)
    mark: CellMark | None = None


class CellRun(BaseModel):
    """A cell after it ran: how the kernel answered, and the cell with its new
    execution count and outputs."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    status: Literal["ok", "error", "aborted"]
    cell: NotebookCell


class NotebookWorkspace(Protocol):
    """A notebook whose cells an agent may read, change and run (through its front end).

    Every coroutine raises `WorkspaceUnavailable` when the front end cannot do it
    (it went away, did not answer, or the cell does not exist any more)."""

    def unavailable(self) -> str | None:
        """Why cells cannot be worked on now (None: they can). Asked before each
        model call, so it must be cheap."""
        ...

    def run_blocked(self) -> str | None:
        """Why a cell run would not start before the agent's turn ends (a cell that
        waits for the turn holds the kernel), or None."""
        ...

    async def cells(self) -> list[NotebookCell]: ...

    async def insert(self, after: str | None, source: str, kind: CellKind, mark: CellMark) -> NotebookCell:
        """A new cell after cell `after` (None: at the end)."""
        ...

    async def replace_source(self, cell_id: str, source: str, mark: CellMark) -> NotebookCell: ...

    async def delete(self, cell_id: str) -> NotebookCell:
        """Delete the cell; returns it as it was."""
        ...

    async def run(self, cell_id: str, mark: CellMark) -> CellRun:
        """Run the cell as Shift-Enter does, and wait for it to end."""
        ...
