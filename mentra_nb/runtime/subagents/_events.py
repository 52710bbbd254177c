"""What a subagent tree tells its subscribers (a notebook widget, a log).

After every commit a subscriber gets `PickerUpdated` (the tree has children) or
`PickerRemoved` (it became empty). `SubagentNotice` carries an error to show,
such as a child's state that could not be persisted. Subscribe with
`mentra_nb.runtime.subagents.watch_subagents(root, callback)`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from mentra_nb.runtime.subagents._picker import SubagentPickerState, Tone

__all__ = ["PickerRemoved", "PickerUpdated", "SubagentEvent", "SubagentNotice"]


class PickerUpdated(BaseModel):
    """The tree changed: the picker's new state."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: Literal["picker_updated"] = "picker_updated"
    root_id: str
    picker: SubagentPickerState


class PickerRemoved(BaseModel):
    """The tree is empty: remove the badge."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: Literal["picker_removed"] = "picker_removed"
    root_id: str


class SubagentNotice(BaseModel):
    """Something the user should see about the tree (a failure), as a one-line notice."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    kind: Literal["notice"] = "notice"
    root_id: str
    path: str | None = None
    text: str
    tone: Tone = "error"


SubagentEvent = Annotated[PickerUpdated | PickerRemoved | SubagentNotice, Field(discriminator="kind")]
"""Any event of the subagent tree, told apart by its `kind` field."""
